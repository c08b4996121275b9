#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An incremental `text/event-stream` parser (WHATWG HTML §9.2.6, rules in SSE-RULES.md).
///
/// Feed it the bytes of one response body in chunks of any size with ``parse(_:emit:)``; call
/// ``endOfBody()`` when that body ends, before the bytes of the next response. The last-event-ID
/// string survives ``endOfBody()``, so a reconnecting client reads ``lastEventID`` for its
/// `Last-Event-ID` header.
///
/// Work is linear in the input: each byte is scanned once for line ends (with `memchr`), a line
/// split across chunks is carried in one growing buffer, and the data buffer grows by amortised
/// appends, so one 14 MB line costs the same in two chunks or in nine hundred.
public struct ServerSentEventParser: Sendable {
    /// How the parser treats optional output and oversized input.
    public struct Configuration: Sendable, Hashable {
        /// Report comment lines as ``ServerSentEventItem/comment(_:)``; off by default, since most
        /// consumers only need to know that bytes arrived.
        public var reportsComments: Bool
        /// The largest event kept in memory, in bytes: an event is over the limit when one of its lines
        /// plus the data before it is longer. Such an event is discarded whole up to its blank line
        /// and reported as ``ServerSentEventItem/oversizedEventDiscarded(lastEventID:)``, so a hostile
        /// stream cannot grow memory without bound. (A single line over the limit, even a comment,
        /// marks its event as oversized.)
        public var maximumEventBytes: Int

        /// Creates a configuration; the defaults keep events up to 64 MiB and drop comments.
        public init(reportsComments: Bool = false, maximumEventBytes: Int = 64 << 20) {
            self.reportsComments = reportsComments
            self.maximumEventBytes = max(1, maximumEventBytes)
        }
    }

    /// The options this parser was made with.
    public let configuration: Configuration
    /// The last-event-ID string: set at each dispatch from the `id` field buffer (SSE-RULES 14).
    public private(set) var lastEventID: String

    private var lastEventIDBuffer: String
    /// The start of a line whose end has not arrived yet.
    private var pendingLine: [UInt8] = []
    private var dataBuffer: [UInt8] = []
    private var eventTypeBuffer: [UInt8] = []
    private var cachedTypeBytes: [UInt8] = []
    private var cachedType = "message"
    /// The previous chunk ended in CR, so an LF that opens the next one belongs to that line end.
    private var skipsLeadingLF = false
    /// Bytes of a leading byte order mark matched so far; `nil` once the start of the body is past.
    private var byteOrderMarkMatched: Int? = 0
    /// The current event went over the size limit: its data is dropped until the blank line.
    private var discarding = false
    /// The line being carried across chunks went over the size limit: the rest of it is dropped.
    private var skipsCurrentLine = false

    /// Creates a parser; `lastEventID` seeds the last-event-ID string (for example a stored cursor).
    public init(configuration: Configuration = .init(), lastEventID: String = "") {
        self.configuration = configuration
        self.lastEventID = lastEventID
        self.lastEventIDBuffer = lastEventID
    }

    /// Ends the current response body: a pending, undispatched block is discarded (SSE-RULES 20)
    /// and the next bytes are treated as the start of a new body (SSE-RULES 2: a BOM is stripped there).
    public mutating func endOfBody() {
        pendingLine.removeAll(keepingCapacity: pendingLine.capacity <= 1 << 16)
        dataBuffer.removeAll(keepingCapacity: dataBuffer.capacity <= 1 << 16)
        eventTypeBuffer.removeAll(keepingCapacity: true)
        lastEventIDBuffer = lastEventID
        skipsLeadingLF = false
        byteOrderMarkMatched = 0
        discarding = false
        skipsCurrentLine = false
    }

    /// Parses one chunk of the body and reports what it completes, in order.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer, emit: (ServerSentEventItem) -> Void) {
        withoutActuallyEscaping(emit) { emit in
            var sink = EmittingSink(emit: emit)
            feed(bytes, into: &sink)
        }
    }

    /// Parses one chunk of the body and appends what it completes to `batch`, in order: the same
    /// items as ``parse(_:emit:)``, with no allocation per event (see ``ServerSentEventBatch``).
    public mutating func parse(_ bytes: UnsafeRawBufferPointer, into batch: inout ServerSentEventBatch) {
        feed(bytes, into: &batch)
    }

    private mutating func feed<Sink: ParserSink>(_ bytes: UnsafeRawBufferPointer, into emit: inout Sink) {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else { return }
        var start = 0
        if let matched = byteOrderMarkMatched {
            // SSE-RULES 2: one U+FEFF (EF BB BF) is stripped, and only at the very start of a body.
            var matched = matched
            while start < bytes.count, matched < 3, base[start] == Self.byteOrderMark[matched] {
                matched += 1
                start += 1
            }
            if matched == 3 {
                byteOrderMarkMatched = nil
            } else if start == bytes.count {
                byteOrderMarkMatched = matched
                return
            } else {
                byteOrderMarkMatched = nil
                if matched > 0 {
                    // A prefix of the mark that turned out not to be one is ordinary input.
                    Self.byteOrderMark.withUnsafeBufferPointer { prefix in
                        scan(UnsafeBufferPointer(rebasing: prefix[0..<matched]), emit: &emit)
                    }
                }
            }
        }
        if start < bytes.count {
            scan(UnsafeBufferPointer(start: base + start, count: bytes.count - start), emit: &emit)
        }
    }

    /// Parses bytes and returns what they complete; a convenience for tests and small inputs.
    public mutating func parse(_ bytes: some Sequence<UInt8>) -> [ServerSentEventItem] {
        var items: [ServerSentEventItem] = []
        let array = Array(bytes)
        array.withUnsafeBytes { raw in
            parse(raw) { items.append($0) }
        }
        return items
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    private static let lineFeed: UInt8 = 0x0A
    private static let carriageReturn: UInt8 = 0x0D
    private static let colon: UInt8 = 0x3A
    private static let space: UInt8 = 0x20

    private mutating func scan<Sink: ParserSink>(_ chunk: UnsafeBufferPointer<UInt8>, emit: inout Sink) {
        guard let base = chunk.baseAddress else { return }
        let count = chunk.count
        var index = 0
        if skipsLeadingLF {
            // SSE-RULES 3: CR at the end of one chunk and LF at the start of the next are one line end.
            skipsLeadingLF = false
            if base[0] == Self.lineFeed { index = 1 }
        }
        // The next LF at or after `index` (or `count` when there is none): remembered so a stream of
        // CR-only line ends does not rescan the rest of the chunk for an LF on every line.
        var nextLineFeed = -1
        while index < count {
            if nextLineFeed < index {
                if let found = memchr(base + index, Int32(Self.lineFeed), count - index) {
                    nextLineFeed = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                } else {
                    nextLineFeed = count
                }
            }
            var lineEnd = nextLineFeed
            var endsWithCarriageReturn = false
            if lineEnd > index, let found = memchr(base + index, Int32(Self.carriageReturn), lineEnd - index) {
                lineEnd = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                endsWithCarriageReturn = true
            }
            if lineEnd == count {
                carryPartialLine(UnsafeBufferPointer(start: base + index, count: count - index))
                return
            }
            let piece = UnsafeBufferPointer(start: base + index, count: lineEnd - index)
            if pendingLine.isEmpty, !skipsCurrentLine {
                process(line: piece, emit: &emit)
            } else {
                carryPartialLine(piece)
                if skipsCurrentLine {
                    skipsCurrentLine = false
                    pendingLine = []
                } else {
                    var line: [UInt8] = []
                    swap(&line, &pendingLine)
                    line.withUnsafeBufferPointer { process(line: $0, emit: &emit) }
                    if line.capacity <= 1 << 20 {
                        // Reuse the buffer, but do not pin the memory of a once-huge line.
                        line.removeAll(keepingCapacity: true)
                        pendingLine = line
                    }
                }
            }
            index = lineEnd + 1
            if endsWithCarriageReturn {
                if index < count {
                    if base[index] == Self.lineFeed { index += 1 }
                } else {
                    skipsLeadingLF = true
                }
            }
        }
    }

    private mutating func carryPartialLine(_ bytes: UnsafeBufferPointer<UInt8>) {
        if skipsCurrentLine { return }
        if pendingLine.count + dataBuffer.count + bytes.count > configuration.maximumEventBytes {
            startDiscarding()
            skipsCurrentLine = true
            pendingLine = []
            return
        }
        pendingLine.append(contentsOf: bytes)
    }

    private mutating func startDiscarding() {
        discarding = true
        dataBuffer = []
    }

    private mutating func process<Sink: ParserSink>(line: UnsafeBufferPointer<UInt8>, emit: inout Sink) {
        guard let base = line.baseAddress, !line.isEmpty else {
            dispatch(emit: &emit)  // SSE-RULES 4: a blank line dispatches.
            return
        }
        let length = line.count
        if length + dataBuffer.count > configuration.maximumEventBytes {
            // The same rule as for a line carried across chunks, so chunking never changes the result.
            startDiscarding()
            return
        }
        if base[0] == Self.colon {
            // SSE-RULES 5: a comment; surfaced only on request.
            if configuration.reportsComments {
                let textStart = length > 1 && base[1] == Self.space ? 2 : 1
                let text = String(decoding: UnsafeBufferPointer(start: base + textStart, count: length - textStart),
                                  as: UTF8.self)
                emit.append(.comment(text))
            }
            return
        }
        // SSE-RULES 6/7: split at the first colon; no colon means the whole line is the name.
        var nameLength = length
        var valueStart = length
        if let found = memchr(base, Int32(Self.colon), length) {
            nameLength = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            valueStart = nameLength + 1
            if valueStart < length, base[valueStart] == Self.space { valueStart += 1 }
        }
        let value = UnsafeBufferPointer(start: base + valueStart, count: length - valueStart)
        // SSE-RULES 8/9: names are compared byte for byte; unknown names are ignored.
        switch nameLength {
        case 4 where base[0] == 0x64 && base[1] == 0x61 && base[2] == 0x74 && base[3] == 0x61:  // data
            if discarding { return }
            if dataBuffer.count + value.count + 1 > configuration.maximumEventBytes {
                startDiscarding()
                return
            }
            // SSE-RULES 11: value + LF.
            dataBuffer.append(contentsOf: value)
            dataBuffer.append(Self.lineFeed)
        case 5 where base[0] == 0x65 && base[1] == 0x76 && base[2] == 0x65 && base[3] == 0x6E && base[4] == 0x74:
            // event — SSE-RULES 10: the last one in the block wins.
            eventTypeBuffer.removeAll(keepingCapacity: true)
            eventTypeBuffer.append(contentsOf: value)
        case 2 where base[0] == 0x69 && base[1] == 0x64:  // id
            // SSE-RULES 12: an id containing NUL is ignored; an empty one resets.
            if value.isEmpty {
                lastEventIDBuffer = ""
            } else if memchr(base + valueStart, 0, value.count) == nil {
                lastEventIDBuffer = String(decoding: value, as: UTF8.self)
            }
        case 5 where base[0] == 0x72 && base[1] == 0x65 && base[2] == 0x74 && base[3] == 0x72 && base[4] == 0x79:
            // retry — SSE-RULES 13: non-empty and ASCII digits only, else ignored.
            if let milliseconds = Self.parseDigits(value) { emit.append(.retry(milliseconds)) }
        default:
            break
        }
    }

    private mutating func dispatch<Sink: ParserSink>(emit: inout Sink) {
        // SSE-RULES 14: the last event ID is committed first, even when no event follows.
        lastEventID = lastEventIDBuffer
        if discarding {
            discarding = false
            eventTypeBuffer.removeAll(keepingCapacity: true)
            emit.append(.oversizedEventDiscarded(lastEventID: lastEventID))
            return
        }
        guard !dataBuffer.isEmpty else {
            // SSE-RULES 15: empty data buffer, no event; the type buffer resets too.
            eventTypeBuffer.removeAll(keepingCapacity: true)
            return
        }
        dataBuffer.removeLast()  // SSE-RULES 16: one trailing LF.
        let type: String
        if eventTypeBuffer.isEmpty {
            type = "message"  // SSE-RULES 17.
        } else if eventTypeBuffer == cachedTypeBytes {
            type = cachedType
        } else {
            type = eventTypeBuffer.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
            cachedTypeBytes = eventTypeBuffer
            cachedType = type
        }
        // SSE-RULES 1/21: invalid UTF-8 becomes U+FFFD (when the data is made a String); NUL is ordinary data.
        let lastEventID = self.lastEventID
        dataBuffer.withUnsafeBufferPointer { data in
            emit.appendEvent(type: type, data: data, lastEventID: lastEventID)
        }
        // SSE-RULES 19: reset data and type, never the last-event-ID buffer.
        if dataBuffer.capacity > 1 << 20 {
            dataBuffer = []
        } else {
            dataBuffer.removeAll(keepingCapacity: true)
        }
        eventTypeBuffer.removeAll(keepingCapacity: true)
    }

    private static func parseDigits(_ value: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !value.isEmpty else { return nil }
        var result = 0
        var overflowed = false
        for byte in value {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            if overflowed { continue }
            let (times10, o1) = result.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int(byte - 0x30))
            if o1 || o2 { overflowed = true } else { result = sum }
        }
        return overflowed ? Int.max : result
    }
}

/// Where the parser puts what it completes: a caller's closure or a batch. The parser is generic over
/// it so that each is specialised and the batch path makes no `String` for an event's data.
protocol ParserSink {
    /// An event: `data` is valid only for the call.
    mutating func appendEvent(type: String, data: UnsafeBufferPointer<UInt8>, lastEventID: String)
    /// Anything else: a comment, a retry value, a discarded oversized event.
    mutating func append(_ item: ServerSentEventItem)
}

extension ServerSentEventBatch: ParserSink {}

/// Hands each item to a closure, the event's data made a `String` at once.
private struct EmittingSink: ParserSink {
    let emit: (ServerSentEventItem) -> Void

    func appendEvent(type: String, data: UnsafeBufferPointer<UInt8>, lastEventID: String) {
        emit(.event(ServerSentEvent(type: type, data: String(decoding: data, as: UTF8.self), lastEventID: lastEventID)))
    }

    func append(_ item: ServerSentEventItem) {
        emit(item)
    }
}
