import ServerSentEvents

/// Parses the input three ways — whole, in chunks whose sizes the input itself chooses, and byte by
/// byte — and the chunked way again into batches (as the event source parses), with a small event limit so the discard path runs too, and traps if they disagree or an
/// invariant breaks. libFuzzer reports a trap (or an ASan finding) as a crash with its input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let configuration = ServerSentEventParser.Configuration(
        reportsComments: bytes[0] & 1 == 1, maximumEventBytes: Int(bytes[0] >> 1) + 1)

    func run(chunkSizes: (Int) -> Int) -> ([ServerSentEventItem], String) {
        var parser = ServerSentEventParser(configuration: configuration)
        var items: [ServerSentEventItem] = []
        var offset = 0
        var index = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + max(1, chunkSizes(index)))
            bytes[offset..<end].withUnsafeBytes { raw in parser.parse(raw) { items.append($0) } }
            offset = end
            index += 1
        }
        parser.endOfBody()
        return (items, parser.lastEventID)
    }

    /// One batch reused across chunks, emptied after each chunk's items were read.
    func runBatched(chunkSizes: (Int) -> Int) -> ([ServerSentEventItem], String) {
        var parser = ServerSentEventParser(configuration: configuration)
        var items: [ServerSentEventItem] = []
        var batch = ServerSentEventBatch()
        var offset = 0
        var index = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + max(1, chunkSizes(index)))
            bytes[offset..<end].withUnsafeBytes { raw in parser.parse(raw, into: &batch) }
            items += batch
            batch.removeAll(keepingCapacity: true)
            offset = end
            index += 1
        }
        parser.endOfBody()
        return (items, parser.lastEventID)
    }

    let whole = run { _ in bytes.count }
    let chunked = run { Int(bytes[$0 % bytes.count] % 17) + 1 }
    let byteByByte = run { _ in 1 }
    if whole.0 != chunked.0 || whole.1 != chunked.1 || whole.0 != byteByByte.0 || whole.1 != byteByByte.1 {
        fatalError("chunking changed the result")
    }
    let batched = runBatched { Int(bytes[$0 % bytes.count] % 17) + 1 }
    if batched.0 != whole.0 || batched.1 != whole.1 { fatalError("batches changed the result") }
    for item in whole.0 {
        switch item {
        case .event(let event):
            if event.type.isEmpty { fatalError("an event without a type") }
            if event.lastEventID.contains("\0") { fatalError("a last-event-ID with NUL") }
            // The limit counts raw bytes; each raw byte decodes to at most one scalar (invalid ones to U+FFFD).
            if event.data.unicodeScalars.count > configuration.maximumEventBytes { fatalError("an event over the limit") }
        case .retry(let milliseconds):
            if milliseconds < 0 { fatalError("a negative retry") }
        case .comment, .oversizedEventDiscarded:
            break
        }
    }
    return 0
}
