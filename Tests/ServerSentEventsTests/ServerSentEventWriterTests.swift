import ServerSentEvents
import Testing

/// What the writer writes, the parser reads back as the same event, fed whole, byte by byte and at
/// every split (``parseEveryWay(_:configuration:sourceLocation:)``).
@Suite(.timeLimit(.minutes(3))) struct ServerSentEventWriterTests {
    @Test(arguments: [
        ("message", nil, "hello"),
        ("order.upserted", "42", #"{"seq":42,"order":{"id":1}}"#),
        ("ready", "9007199254740993", "{}"),
        ("snapshot", nil, "{\n  \"order\": {\n    \"id\": 3\n  }\n}"),
        ("order.removed", "7", ""),
        ("message", "1", "\n\nblank lines around\n\n"),
        ("message", nil, "data: looks like a field\nid: 99\n: and a comment"),
    ] as [(String, String?, String)])
    func anEventReadsBackAsWritten(type: String, id: String?, data: String) {
        let text = ServerSentEventWriter.event(type, id: id, data: data)
        let result = parseEveryWay(Array(text.utf8))
        #expect(result.items == [.event(ServerSentEvent(type: type, data: data, lastEventID: id ?? ""))], "\(text)")
        #expect(result.lastEventID == (id ?? ""))
    }

    @Test func carriageReturnsInThePayloadEndLinesAsTheParserReadsThem() {
        let text = ServerSentEventWriter.event("x", data: "a\r\nb\rc\nd")
        #expect(text == "event: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n")
        #expect(parseEveryWay(Array(text.utf8)).items == [.event(ServerSentEvent(type: "x", data: "a\nb\nc\nd"))])
    }

    @Test func commentsAndRetryReadBackAndAreNotEvents() {
        let text = ServerSentEventWriter.comment("orderlive sandbox live feed\nsecond line")
            + ServerSentEventWriter.retry(milliseconds: 1000) + ServerSentEventWriter.comment("ping")
        #expect(parseEveryWay(Array(text.utf8)).items
                == [.comment("orderlive sandbox live feed"), .comment("second line"), .retry(1000), .comment("ping")])
        #expect(ServerSentEventWriter.retry(milliseconds: -5) == "retry: 0\n\n", "a negative delay is written as 0")
    }
}
