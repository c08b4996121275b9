#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes whole lines straight to a file descriptor: one `write(2)` per line, so every line is
/// flushed as it is written and lines from different threads never interleave mid-line.
public struct LineWriter: Sendable {
    /// The descriptor written to.
    public let descriptor: Int32

    /// Standard output.
    public static let standardOutput = LineWriter(descriptor: 1)
    /// Standard error.
    public static let standardError = LineWriter(descriptor: 2)

    /// Creates a writer for a descriptor.
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// True when the descriptor is a terminal.
    public var isTerminal: Bool { isatty(descriptor) == 1 }

    /// Writes `line` and a line feed. Returns false when the reader has gone (for example a closed pipe).
    @discardableResult
    public func write(line: String) -> Bool {
        write(text: line + "\n")
    }

    /// Writes `text` as it is, in one `write(2)` where possible.
    @discardableResult
    public func write(text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                guard let base = raw.baseAddress else { return false }
                let written = systemWrite(descriptor, base + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }
}

private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, buffer, count)
    #else
    Darwin.write(descriptor, buffer, count)
    #endif
}
