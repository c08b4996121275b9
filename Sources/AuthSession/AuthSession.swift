// AuthSession: the session with the order backend (DESIGN §8 "Auth"): the auth API client, the
// token session actor with single-flight rotating refresh, and the credential store. It must never
// log, print or put in an error a token or a password, and never end a session on a transient failure.
