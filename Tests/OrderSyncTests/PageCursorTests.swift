import OrderSync
import Testing

/// `next_cursor` read before a page is decoded (issue 39's full sync pipeline): read from the body's
/// end when the backend wrote it last, else by walking the top level; always what the page decoder
/// reads from the same bytes.
@Suite(.timeLimit(.minutes(3))) struct PageCursorTests {
    static let bodies: [(body: String, cursor: String?)] = [
        (#"{"orders":[{"id":1,"status":"created"}],"next_cursor":"c2"}"#, "c2"),
        ("{ \"orders\": [],\r\n \"next_cursor\" :\t\"c2\" } \n", "c2"),
        (#"{"orders":[],"next_cursor":null}"#, nil),
        (#"{"orders":[],"next_cursor": null }"#, nil),
        (#"{"next_cursor":"c3","orders":[]}"#, "c3"),
        (#"{"orders":[],"next_cursor":42}"#, "42"),
        (#"{"orders":[],"next_cursor":"a\"b\\"}"#, #"a"b\"#),
        (#"{"orders":[],"next_cursor":"\\\\"}"#, #"\\"#),
        (#"{"orders":[],"next_cursor":"caf\u00e9"}"#, "café"),
        (#"{"orders":[],"next_cursor":""}"#, nil),
        (#"[{"id":1,"status":"created"}]"#, nil),
        (#"{"orders":[],"note":"\"next_cursor\":\"x\""}"#, nil),
        (#"{"orders":[],"note":",\"next_cursor\":\"x\"}"}"#, nil),
        (#"{"orders":[],"next\u005fcursor":"k"}"#, "k"),
        (#"{"next_cursor":"a","orders":[],"next_cursor":"b"}"#, "b"),
        (#"{"orders":[],"next_cursor":"b","xnext_cursor":"a"}"#, "b"),
        (#"{"orders":[],"page":{"next_cursor":"inner"}}"#, nil),
        (#"{"orders":[]}"#, nil),
    ]

    @Test(arguments: bodies) func readsTheCursorTheDecoderReads(body: String, cursor: String?) throws {
        let bytes = Array(body.utf8)
        #expect(try OrdersClient.pageCursor(bytes) == cursor)
        #expect(try OrdersClient.decodePage(bytes, appliedAt: 0).next == cursor)
    }

    @Test(arguments: [#"{"orders":["#, #""x""#, "", #"{"orders":[]} x"#, #"{"orders":[],"next_cursor":"a}"#, "{"])
    func refusesABodyThatIsNotAPage(body: String) {
        #expect(throws: SyncError.self) { try OrdersClient.pageCursor(Array(body.utf8)) }
    }

    /// Every prefix and every one-byte change of a real page: wherever the decoder accepts the bytes,
    /// the cursor is the one it reads.
    @Test func agreesWithTheDecoderOnEveryPrefixAndEveryChangedByte() {
        let body = Array(#"{"orders":[{"id":"o-1","status":"created","version":2},{"id":7,"status":"assigned"}],"next_cursor":"p\"2"}"#.utf8)
        var checked = 0
        func agree(_ bytes: [UInt8]) {
            guard let page = try? OrdersClient.decodePage(bytes, appliedAt: 0) else { return }
            checked += 1
            #expect((try? OrdersClient.pageCursor(bytes)) == .some(page.next), "\(String(decoding: bytes, as: UTF8.self))")
        }
        for end in 0...body.count { agree(Array(body[..<end])) }
        for index in body.indices {
            for byte: UInt8 in [0x20, 0x22, 0x2C, 0x3A, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x6E, 0x61] {
                var changed = body
                changed[index] = byte
                agree(changed)
            }
        }
        #expect(checked > 10, "the decoder accepted too few variants to compare")
    }
}
