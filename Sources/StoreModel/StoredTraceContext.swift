/// The trace context of the work that journaled a job (W3C `traceparent` and `tracestate`, as the
/// tracer's propagator writes them), kept in the job's `trace_context` column so that its apply joins
/// that trace, however long the job waits (DESIGN §14 "one trace per order change"). Stored as
/// `name=value` lines; read back bounded, so a damaged column costs a new trace, never a failure.
public enum StoredTraceContext {
    /// The most fields kept, and the longest value (W3C `tracestate` is at most 512 bytes).
    static let maximumFields = 8
    static let maximumValueBytes = 512

    /// `fields` as stored; nil when there are none (tracing off, or nothing to propagate).
    public static func text(_ fields: [String: String]) -> String? {
        // The common case, a `traceparent` alone, without sorting or joining (it runs for every push).
        if fields.count == 1, let (name, value) = fields.first { return line(name, value) }
        let lines = fields.sorted { $0.key < $1.key }.prefix(maximumFields).compactMap(line)
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }

    /// `name=value`, or nil when the pair could not be read back as written.
    private static func line(_ name: String, _ value: String) -> String? {
        guard isStorable(name: name), isStorable(value), value.utf8.count <= maximumValueBytes else { return nil }
        return name + "=" + value
    }

    /// The fields `text` holds; lines that are not `name=value` are skipped.
    public static func fields(_ text: String?) -> [String: String] {
        guard let text, text.utf8.count <= maximumFields * (maximumValueBytes + 64) else { return [:] }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n").prefix(maximumFields) {
            guard let equals = line.firstIndex(of: "="), equals != line.startIndex else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }

    // Byte checks, not `String.contains(_:)`: with Foundation loaded that is a CFString search, and
    // this runs for every traced push. A control character is one byte in UTF-8.
    private static func isStorable(_ text: String) -> Bool {
        !text.isEmpty && !text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    private static func isStorable(name: String) -> Bool {
        isStorable(name) && !name.utf8.contains(UInt8(ascii: "="))
    }
}
