// LocalHTTP: the one HTTP floor under both of the agent's listeners (the push listener and the
// orders API). What every listener needs is here, once: the listener builder (`LocalListener`), the
// HTTP/1 child channel and its version handler, connection admission (`ConnectionAdmission`: at the
// limit the oldest connection without a request head or idle between requests is closed for a new
// one; allow lists; head and idle deadlines), TLS and mTLS whose files reload without a restart
// (`ListenerTLS`), request bounds, the listener's metrics, the JSON error every refusal renders, one
// route type and the 405 middleware, the loopback rule and constant-time comparison. It knows
// nothing of pushes, orders or the store.
