// CheckedInput: the one place where a number from outside (an HTTP header or body, a JSON number
// from the backend or a push, an SSE field, a configuration or environment value, a file in the
// state directory, a command-line option) becomes an integer, a duration or a time (DESIGN §10,
// STYLE 18). Swift traps on overflow and on converting a non-finite or out-of-range Double, and a
// trap on input is a remote crash; every function here answers nil or clamps to a stated bound
// instead. It has no dependencies so that every module, down to the SSE parser, can use it.
//
// It also holds `ExponentialDelay`, how long to wait before trying again, written once (STYLE 13)
// for the stream's reconnects, the session's transient retries and the executor's job retries: the
// other arithmetic on a number that can come from outside (an attempt count, a configured delay),
// bounded the same way. Pure; the caller supplies the randomness. (It was the module RetryTiming,
// folded in because every user already depended on CheckedInput and it had one file.)
