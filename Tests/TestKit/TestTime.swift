/// How much slower than a plain debug build this build runs the tests: 4 under ThreadSanitizer
/// (`make tsan` builds with `-DORDERLIVE_TSAN`), else 1. The deadlines of waits for events
/// (``eventually(within:every:_:)``, ``LogWatch``, ``CapturedLogs``) are scaled by it, and so are
/// time bounds a test asserts through ``TestTime/bound(_:)``: a wait still ends the moment its event
/// comes, and a bound checked in `make test` stays what it says there.
public enum TestTime {
    #if ORDERLIVE_TSAN
    /// ThreadSanitizer's build: its instrumentation makes the code several times slower.
    public static let scale = 4
    #else
    /// A plain build.
    public static let scale = 1
    #endif

    /// `limit`, scaled for this build.
    public static func bound(_ limit: Duration) -> Duration {
        limit * scale
    }
}
