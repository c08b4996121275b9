// CoalescedLogging: a fault that repeats must not flood the log (DESIGN §10). The first line of a
// kind is written; while it repeats, one line per interval carries the count. No I/O of its own.
