/// The version orderlive reports in `User-Agent` and `--version`.
public enum OrderliveVersion {
    /// The current version.
    public static let current = "0.1.0"
    /// The `User-Agent` of the order stream and `inspect` (README: `orderlive/<version>`).
    public static let userAgent = "orderlive/\(current)"
}
