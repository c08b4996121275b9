// LocalHTTP: the one HTTP floor under both of the agent's listeners (the push listener and the
// orders API). What every listener needs is here, once: the HTTP/1 child channel and its version
// handler, request bounds and connection limits, the JSON error every refusal renders, one route
// type and the 405 middleware, the loopback rule and constant-time comparison. TLS and connection
// admission belong here too when they come. It knows nothing of pushes, orders or the store.
