#if canImport(Glibc)
import Glibc
#endif

/// How much of the machine's processor time was idle since the last look, from the first line of
/// `/proc/stat` (every processor together): an endpoint's deliveries yield to the rest of the agent
/// while it is near zero (``EndpointDelivery``).
///
/// The counters come from outside: each is read with a checked conversion, their sum is checked
/// for overflow, and counters that went backwards (a wrap, a container's view changing) start a new
/// window rather than produce a share.
public struct ProcessorIdleGauge: Sendable {
    /// Idle and total processor time so far, in the kernel's ticks; nil where it cannot be read.
    public typealias Counters = (idle: UInt64, total: UInt64)

    /// Reads the counters now.
    let read: @Sendable () -> Counters?
    /// Fewer ticks than this since the last window (50 ms on two processors at 100 Hz) are too few to
    /// tell: the last share stands.
    public var minimumTicks: UInt64 = 10
    private var last: Counters?
    private var lastShare: Double?

    public init(read: @escaping @Sendable () -> Counters? = ProcessorIdleGauge.readProcStat) {
        self.read = read
    }

    /// The share (0...1) of processor time that was idle since the last window, or nil when it is not
    /// known (no `/proc/stat`, the first look, counters that went backwards).
    public mutating func idleShare() -> Double? {
        guard let now = read() else { return nil }
        guard let last, now.total >= last.total, now.idle >= last.idle else {
            (self.last, lastShare) = (now, nil)
            return nil
        }
        let total = now.total - last.total
        guard total >= minimumTicks else { return lastShare }
        self.last = now
        let share = Double(min(now.idle - last.idle, total)) / Double(total)
        lastShare = share
        return share
    }

    /// Idle (idle and iowait) and total ticks from `/proc/stat`'s aggregate line, "cpu  user nice
    /// system idle iowait irq softirq steal guest guest_nice" (guest time is already in user time, so
    /// only the first eight count); nil for anything else.
    public static func parse(_ line: Substring) -> Counters? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.first == "cpu", fields.count >= 5 else { return nil }
        var values: [UInt64] = []
        for field in fields.dropFirst().prefix(8) {
            guard let value = UInt64(field) else { return nil }
            values.append(value)
        }
        var total: UInt64 = 0
        for value in values {
            let (sum, overflow) = total.addingReportingOverflow(value)
            guard !overflow else { return nil }
            total = sum
        }
        // values[3] + values[4] is at most the total, which did not overflow.
        let idle = values[3] + (values.count > 4 ? values[4] : 0)
        return (idle, total)
    }

    /// The counters from `/proc/stat`; nil where it is missing or unreadable.
    @Sendable public static func readProcStat() -> Counters? {
        #if os(Linux)
        let descriptor = open("/proc/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        // The aggregate line comes first and is far shorter than this.
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n", maxSplits: 1).first else { return nil }
        return parse(line)
        #else
        return nil
        #endif
    }
}
