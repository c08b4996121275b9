import ServerSentEvents
import Testing

/// Every rule of SSE-RULES.md, fed whole, byte by byte and at every two-way split, under LF, CR and CRLF.
@Suite(.timeLimit(.minutes(3))) struct ServerSentEventParserTests {
    private func parse(_ text: String, _ ending: LineEnding) -> ParseResult {
        parseEveryWay(ending.apply(text))
    }

    private func event(_ data: String, type: String = "message", id: String = "") -> ServerSentEventItem {
        .event(ServerSentEvent(type: type, data: data, lastEventID: id))
    }

    // MARK: Decoding and lines

    @Test(arguments: LineEnding.allCases)
    func invalidUTF8BecomesReplacementCharacter(ending: LineEnding) {
        let bytes = ending.apply("data: a") + [0xFF] + ending.apply("b\n\n")
        #expect(parseEveryWay(bytes).items == [event("a\u{FFFD}b")])
    }

    @Test(arguments: LineEnding.allCases)
    func multiByteCharactersSplitAnywhereDecode(ending: LineEnding) {
        // "ok…" (U+2026 is E2 80 A6): every split lands inside it at some point.
        #expect(parse("data:ok\u{2026}\n\n", ending).items == [event("ok\u{2026}")])
        #expect(parse("data: 🚚 ünïcödé\n\n", ending).items == [event("🚚 ünïcödé")])
    }

    @Test(arguments: LineEnding.allCases)
    func leadingByteOrderMarkIsStripped(ending: LineEnding) {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + ending.apply("data: x\n\n")
        #expect(parseEveryWay(bytes).items == [event("x")])
    }

    @Test(arguments: LineEnding.allCases)
    func secondByteOrderMarkIsPartOfTheFieldName(ending: LineEnding) {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let bytes = bom + bom + ending.apply("data:1\n\ndata:2\n\n")
        #expect(parseEveryWay(bytes).items == [event("2")])
    }

    @Test(arguments: LineEnding.allCases)
    func byteOrderMarkLaterInTheStreamIsData(ending: LineEnding) {
        let bytes = ending.apply("data: ") + [0xEF, 0xBB, 0xBF] + ending.apply("x\n\n")
        #expect(parseEveryWay(bytes).items == [event("\u{FEFF}x")])
    }

    @Test func partialByteOrderMarkIsOrdinaryInput() {
        // EF BB then 'd': not a mark, so the two bytes start the field name and nothing dispatches.
        let bytes: [UInt8] = [0xEF, 0xBB] + Array("data: x\n\ndata: y\n\n".utf8)
        #expect(parseEveryWay(bytes).items == [event("y")])
    }

    @Test func byteOrderMarkIsStrippedAgainAtTheStartOfEachBody() {
        var parser = ServerSentEventParser()
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        #expect(parser.parse(bom + Array("data: 1\n\n".utf8)) == [event("1")])
        parser.endOfBody()
        #expect(parser.parse(bom + Array("data: 2\n\n".utf8)) == [event("2")])
    }

    @Test func carriageReturnOnlyAndMixedLineEnds() {
        #expect(parseEveryWay(Array("data: a\rdata: b\r\r".utf8)).items == [event("a\nb")])
        #expect(parseEveryWay(Array("data: a\r\ndata: b\ndata: c\r\r\n".utf8)).items == [event("a\nb\nc")])
        // CR then LF across the chunk boundary is one line end, not a blank line.
        var parser = ServerSentEventParser()
        #expect(parser.parse(Array("data: a\r".utf8)).isEmpty)
        #expect(parser.parse(Array("\ndata: b\r\n\r\n".utf8)) == [event("a\nb")])
    }

    @Test(arguments: LineEnding.allCases)
    func commentsAreIgnoredOrSurfaced(ending: LineEnding) {
        #expect(parse(": ping\n", ending).items == [.comment("ping")])
        #expect(parse(":ping\n:\n", ending).items == [.comment("ping"), .comment("")])
        var quiet = ServerSentEventParser()
        #expect(quiet.parse(ending.apply(": ping\ndata: x\n\n")) == [event("x")])
    }

    @Test(arguments: LineEnding.allCases)
    func exactlyOneSpaceIsRemovedAfterTheColon(ending: LineEnding) {
        #expect(parse("data:x\n\n", ending).items == [event("x")])
        #expect(parse("data: x\n\n", ending).items == [event("x")])
        #expect(parse("data:  x\n\n", ending).items == [event(" x")])
        #expect(parse("data:\tx\n\n", ending).items == [event("\tx")])
        #expect(parse("data: a:b\n\n", ending).items == [event("a:b")])
    }

    @Test(arguments: LineEnding.allCases)
    func lineWithoutColonIsANameWithEmptyValue(ending: LineEnding) {
        #expect(parse("data\n\n", ending).items == [event("")])
    }

    @Test(arguments: LineEnding.allCases)
    func fieldNamesAreCaseSensitive(ending: LineEnding) {
        #expect(parse("Data: x\n\n", ending).items == [])
        #expect(parse("DATA: x\nEvent: y\nID: 4\n\n", ending).lastEventID == "")
    }

    @Test(arguments: LineEnding.allCases)
    func unknownFieldsAreIgnored(ending: LineEnding) {
        #expect(parse("color: blue\ndata: x\n\n", ending).items == [event("x")])
        #expect(parse("dat: x\ndatas: y\nevents: z\nidx: 1\nretryy: 5\n\n", ending) == ParseResult(items: [], lastEventID: ""))
    }

    // MARK: Fields

    @Test(arguments: LineEnding.allCases)
    func lastEventFieldWins(ending: LineEnding) {
        #expect(parse("event: a\nevent: b\ndata: x\n\n", ending).items == [event("x", type: "b")])
    }

    @Test(arguments: LineEnding.allCases)
    func dataLinesJoinWithLineFeeds(ending: LineEnding) {
        #expect(parse("data: a\ndata: b\n\n", ending).items == [event("a\nb")])
        #expect(parse("data:\ndata: x\n\n", ending).items == [event("\nx")])
        #expect(parse("data\ndata\n\n", ending).items == [event("\n")])
    }

    @Test(arguments: LineEnding.allCases)
    func idWithNulIsIgnoredAndEmptyIdResets(ending: LineEnding) {
        #expect(parse("id: 1\nid: a\u{0}b\ndata: x\n\n", ending).items == [event("x", id: "1")])
        #expect(parse("id: 1\ndata: a\n\nid\ndata: b\n\n", ending).items == [event("a", id: "1"), event("b")])
        #expect(parse("id: 1\ndata: a\n\nid:\ndata: b\n\n", ending).items == [event("a", id: "1"), event("b")])
    }

    @Test(arguments: LineEnding.allCases)
    func retryAcceptsOnlyDigits(ending: LineEnding) {
        #expect(parse("retry: 3000\n", ending).items == [.retry(3000)])
        for bogus in ["retry: 1000x", "retry: -1", "retry: +5", "retry: 1e3", "retry:  5", "retry:", "retry"] {
            #expect(parse(bogus + "\n", ending).items == [], "\(bogus)")
        }
        #expect(parse("retry:2000\nretry:1000x\ndata:x\n\n", ending).items == [.retry(2000), event("x")])
        #expect(parse("retry: 99999999999999999999999\n", ending).items == [.retry(Int.max)])
    }

    // MARK: Dispatch

    @Test(arguments: LineEnding.allCases)
    func idOnlyBlockCommitsTheLastEventID(ending: LineEnding) {
        let result = parse("id: 7\n\n", ending)
        #expect(result.items == [])
        #expect(result.lastEventID == "7")
    }

    @Test(arguments: LineEnding.allCases)
    func emptyDataDispatchesNothing(ending: LineEnding) {
        #expect(parse("event: x\n\n", ending).items == [])
        #expect(parse("\n\n\n", ending).items == [])
        // The type buffer was reset by the empty dispatch.
        #expect(parse("event: x\n\ndata: y\n\n", ending).items == [event("y")])
    }

    @Test(arguments: LineEnding.allCases)
    func oneTrailingLineFeedIsRemoved(ending: LineEnding) {
        #expect(parse("data:\n\n", ending).items == [event("")])
    }

    @Test(arguments: LineEnding.allCases)
    func emptyOrBlankEventTypeMeansMessage(ending: LineEnding) {
        #expect(parse("event:\ndata: x\n\n", ending).items == [event("x")])
        #expect(parse("event: \ndata: x\n\n", ending).items == [event("x")])
        #expect(parse("event: order.updated\ndata: 1\n\nevent: order.updated\ndata: 2\n\ndata: 3\n\n", ending).items
            == [event("1", type: "order.updated"), event("2", type: "order.updated"), event("3")])
    }

    @Test(arguments: LineEnding.allCases)
    func lastEventIDPersistsChangesAndResets(ending: LineEnding) {
        let result = parse("id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\ndata: d\n\nid\ndata: e\n\n", ending)
        #expect(result.items == [event("a", id: "1"), event("b", id: "1"), event("c", id: "2"),
                                 event("d", id: "2"), event("e")])
        #expect(result.lastEventID == "")
    }

    @Test(arguments: LineEnding.allCases)
    func pendingBlockIsDiscardedAtEndOfBody(ending: LineEnding) {
        #expect(parse("data: x", ending).items == [])
        #expect(parse("data: x\n", ending).items == [])
        let result = parse("id: 3\ndata: a\n\nid: 9\ndata: y\n", ending)
        #expect(result.items == [event("a", id: "3")])
        #expect(result.lastEventID == "3")
    }

    @Test func pendingIdDoesNotLeakIntoTheNextBody() {
        var parser = ServerSentEventParser()
        #expect(parser.parse(Array("id: 3\ndata: a\n\nid: 9\ndata: y\n".utf8)) == [event("a", id: "3")])
        parser.endOfBody()
        #expect(parser.lastEventID == "3")
        #expect(parser.parse(Array("data: b\n\n".utf8)) == [event("b", id: "3")])
    }

    @Test(arguments: LineEnding.allCases)
    func nulIsLegalInData(ending: LineEnding) {
        #expect(parse("data:\u{0}\n\n", ending).items == [event("\u{0}")])
    }

    @Test(arguments: LineEnding.allCases)
    func specificationExampleStreams(ending: LineEnding) {
        let first = parse(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
                          ending)
        #expect(first.items == [.comment("test stream"), event("first event", id: "1"), event("second event"),
                                event(" third event")])
        #expect(first.lastEventID == "")
        #expect(parse("data\n\ndata\ndata\n\ndata:", ending).items == [event(""), event("\n")])
    }

    @Test func seededLastEventIDIsUsedUntilChanged() {
        var parser = ServerSentEventParser(lastEventID: "41")
        #expect(parser.parse(Array("data: a\n\nid: 42\ndata: b\n\n".utf8)) == [event("a", id: "41"), event("b", id: "42")])
    }

    // MARK: Size and scale

    @Test func oversizedEventIsDiscardedWholeAndTheStreamContinues() {
        let configuration = ServerSentEventParser.Configuration(maximumEventBytes: 64)
        let big = String(repeating: "x", count: 100)
        let input = Array("id: 1\ndata: \(big)\ndata: more\nid: 2\n\ndata: small\n\n".utf8)
        let result = parseEveryWay(input, configuration: configuration)
        // The discarded event's own id still counts: the cursor moves past it, as it would for any event.
        #expect(result.items == [.oversizedEventDiscarded(lastEventID: "2"), event("small", id: "2")])
    }

    @Test func oversizedEventSplitAcrossChunksIsDiscarded() {
        var parser = ServerSentEventParser(configuration: .init(maximumEventBytes: 10))
        var items = parser.parse(Array("data: 0123456789abc".utf8))
        items += parser.parse(Array("def".utf8))
        items += parser.parse(Array("\n".utf8))
        #expect(items.isEmpty, "the discarded line's end must not read as a blank line")
        items += parser.parse(Array("\ndata: ok\n\n".utf8))
        #expect(items == [.oversizedEventDiscarded(lastEventID: ""), event("ok")])
    }

    @Test func longNonDataLineCountsAgainstTheLimitWhetherOrNotItIsSplit() {
        // Found by the fuzzer: an over-long `event:` line used to be kept when it arrived in one chunk
        // but discarded when split.
        let input = Array(": c\nid: 1\nevent: ord%r.updat{\"order\":{\"idder\":{\"id\":1}}\n\n".utf8)
        let result = parseEveryWay(input, configuration: .init(maximumEventBytes: 30))
        #expect(result.items == [.oversizedEventDiscarded(lastEventID: "1")])
    }

    @Test func fourteenMegabyteEventInOneTwoAndManyChunks() {
        let payload = String(repeating: "0123456789abcdef", count: 14 * 65_536)
        let body = Array("event: big\ndata: \(payload)\n\n".utf8)
        for chunkSize in [body.count, body.count / 2 + 1, 16_384, 1_000_003] {
            var parser = ServerSentEventParser()
            var received: [ServerSentEvent] = []
            var offset = 0
            while offset < body.count {
                let end = min(offset + chunkSize, body.count)
                body[offset..<end].withUnsafeBytes { raw in
                    parser.parse(raw) { if case .event(let event) = $0 { received.append(event) } }
                }
                offset = end
            }
            #expect(received.count == 1, "chunk size \(chunkSize)")
            #expect(received.first?.type == "big")
            #expect(received.first?.data.utf8.count == payload.utf8.count)
            #expect(received.first?.data == payload)
        }
    }
}

/// Events parsed into a batch keep their data as bytes until it is read (`parseEveryWay` checks
/// that batches report what `parse(_:emit:)` reports, at every split).
@Suite(.timeLimit(.minutes(3))) struct ServerSentEventBatchTests {
    private func batch(_ text: String, lastEventID: String = "") -> ServerSentEventBatch {
        var parser = ServerSentEventParser(configuration: .init(reportsComments: true), lastEventID: lastEventID)
        var batch = ServerSentEventBatch()
        Array(text.utf8).withUnsafeBytes { parser.parse($0, into: &batch) }
        return batch
    }

    @Test func aBatchedEventIsEqualToAndHashesLikeTheSameEventMadeFromAString() {
        let parsed = Array(batch("event: order.updated\nid: 7\ndata: {\"a\":1}\n\n"))
        let made = ServerSentEvent(type: "order.updated", data: #"{"a":1}"#, lastEventID: "7")
        #expect(parsed == [.event(made)])
        #expect(Set([ServerSentEventItem.event(made)]).contains(parsed[0]))
        guard case .event(var event) = parsed[0] else { return }
        #expect(event.data == #"{"a":1}"#)
        event.data = "changed"
        #expect(event.data == "changed")
        #expect(event != made)
    }

    @Test func eventsReadFromABatchKeepTheirDataWhenTheBatchIsEmptiedAndRefilled() {
        var parser = ServerSentEventParser()
        var batch = ServerSentEventBatch(reservingBytes: 64, items: 4)
        Array("data: first\n\ndata: second\n\n".utf8).withUnsafeBytes { parser.parse($0, into: &batch) }
        let kept = Array(batch)
        #expect(batch.dataByteCount == 11)
        batch.removeAll(keepingCapacity: true)
        #expect(batch.isEmpty && batch.dataByteCount == 0)
        Array("data: third, longer than the others\n\n".utf8).withUnsafeBytes { parser.parse($0, into: &batch) }
        #expect(kept == [.event(ServerSentEvent(data: "first")), .event(ServerSentEvent(data: "second"))])
        #expect(Array(batch) == [.event(ServerSentEvent(data: "third, longer than the others"))])
    }

    @Test func everyKindOfItemKeepsItsPlaceAmongTheEvents() {
        let items = Array(batch(": hello\ndata: a\n\nretry: 250\nid: 9\ndata: b\n\n", lastEventID: "1"))
        #expect(items == [
            .comment("hello"),
            .event(ServerSentEvent(data: "a", lastEventID: "1")),
            .retry(250),
            .event(ServerSentEvent(data: "b", lastEventID: "9")),
        ])
    }
}
