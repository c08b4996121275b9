// CurlHTTP
