// RetryTiming: how long to wait before trying again, written once (STYLE 13) for the stream's
// reconnects, the session's transient retries and the executor's job retries. Pure; the caller
// supplies the randomness.
