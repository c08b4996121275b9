import ServerSentEvents
import Testing

/// The result of feeding one body to a fresh parser and ending it.
struct ParseResult: Equatable {
    var items: [ServerSentEventItem]
    var lastEventID: String
}

/// Feeds `bytes` as one chunk, byte by byte, and at every two-way split; checks that every feeding
/// reports the same thing, and returns it.
func parseEveryWay(
    _ bytes: [UInt8],
    configuration: ServerSentEventParser.Configuration = .init(reportsComments: true),
    sourceLocation: SourceLocation = #_sourceLocation
) -> ParseResult {
    func run(_ chunks: [ArraySlice<UInt8>]) -> ParseResult {
        var parser = ServerSentEventParser(configuration: configuration)
        var items: [ServerSentEventItem] = []
        for chunk in chunks {
            Array(chunk).withUnsafeBytes { raw in parser.parse(raw) { items.append($0) } }
        }
        parser.endOfBody()
        return ParseResult(items: items, lastEventID: parser.lastEventID)
    }
    /// The same through batches: one batch per chunk, as the event source parses, and one batch
    /// reused (emptied, keeping its capacity) after each chunk's items were read.
    func runBatched(_ chunks: [ArraySlice<UInt8>], reusing: Bool) -> ParseResult {
        var parser = ServerSentEventParser(configuration: configuration)
        var items: [ServerSentEventItem] = []
        var reused = ServerSentEventBatch()
        for chunk in chunks {
            var batch = reusing ? reused : ServerSentEventBatch(reservingBytes: chunk.count, items: 1)
            Array(chunk).withUnsafeBytes { raw in parser.parse(raw, into: &batch) }
            items += batch
            if reusing {
                batch.removeAll(keepingCapacity: true)
                reused = batch
            }
        }
        parser.endOfBody()
        return ParseResult(items: items, lastEventID: parser.lastEventID)
    }
    let whole = run([bytes[...]])
    let byteByByte = run(bytes.indices.map { bytes[$0...$0] })
    #expect(byteByByte == whole, "byte by byte", sourceLocation: sourceLocation)
    #expect(runBatched([bytes[...]], reusing: false) == whole, "batched, one chunk", sourceLocation: sourceLocation)
    #expect(runBatched(bytes.indices.map { bytes[$0...$0] }, reusing: true) == whole, "batched, byte by byte",
            sourceLocation: sourceLocation)
    for split in 0...bytes.count {
        let result = run([bytes[..<split], bytes[split...]])
        #expect(result == whole, "split at \(split)", sourceLocation: sourceLocation)
        let batched = runBatched([bytes[..<split], bytes[split...]], reusing: split % 2 == 0)
        #expect(batched == whole, "batched, split at \(split)", sourceLocation: sourceLocation)
        if result != whole || batched != whole { break }
    }
    return whole
}

/// The events among `items`.
func events(_ result: ParseResult) -> [ServerSentEvent] {
    result.items.compactMap { if case .event(let event) = $0 { event } else { nil } }
}
