// AsyncSignals: the small hand-offs between tasks and threads, each written once (STYLE 13): a value
// given once and awaited by any number of tasks (`OneShot`), a wake-up that is never lost
// (`WakeSignal`), a stop flag with an action (`StopFlag`), and a bounded hand-off in batches from a
// producer thread to one async consumer that pauses the producer at a high-water mark
// (`BackpressureChannel`: the curl loop's bytes and parsed events on the stream path), a race of a
// wait against its deadline (`DeadlineRace`), and a server run beside a body and stopped gracefully,
// never cancelled (`withServing`). No I/O, no other module.
