// CurlHTTP: the one place orderlive talks to libcurl. A single thread owns a curl multi handle and
// drives every transfer; the rest of the program sees only the Swift types in this module. No other
// module imports CCurl, and nothing here knows about events, orders or tokens.
