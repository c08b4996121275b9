// AsyncSignals: the small hand-offs between tasks and threads, each written once (STYLE 13): a value
// given once and awaited by any number of tasks (`OneShot`), a wake-up that is never lost
// (`WakeSignal`), and a stop flag with an action (`StopFlag`). No I/O, no other module.
