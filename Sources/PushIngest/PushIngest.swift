// PushIngest: the Gorush-compatible push endpoint of DESIGN §4 and the operations endpoints on the same
// listener. Bounds, then authentication, then Gorush validation, then a durable journal commit before
// any 200. It must never parse a refused body, never answer 500 for an expected condition, never hang,
// and never drop a different request silently under a reused idempotency key.
