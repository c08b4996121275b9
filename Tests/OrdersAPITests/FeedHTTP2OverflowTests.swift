import Foundation
import LocalHTTP
import OrdersAPI
import SQLiteStore
import StoreModel
import Synchronization
import TestHarnesses
import Testing
import TestKit

/// The change feed over HTTP/2 when a subscriber reads nothing (issue 57, DESIGN §14): the bytes
/// held for it are bounded as on HTTP/1.1 — the connection's write buffer, then the hub's
/// `subscriber_buffer` — so its streams fall behind and are cut off with an `overflow` event and
/// END_STREAM, a subscriber on another connection stays live, and the stalled connection, once it
/// reads again, serves its next stream and resumes the feed from its last id.
@Suite(.timeLimit(.minutes(3))) struct FeedHTTP2OverflowTests {
    static let stalledStreams: [UInt32] = [1, 3, 5, 7, 9]

    @Test func streamsOfAConnectionThatReadsNothingAreCutOffAndItResumesOnTheSameConnection() async throws {
        try await APIHarness.with(hub: .init(subscriberBuffer: 64), http2: ListenerHTTP2(cleartext: true)) { api in
            // The largest windows HTTP/2 allows: flow control never holds the server back, only the
            // socket nobody reads does (a browser tab frozen by the OS, a client stuck in a debugger).
            let stalled = try RawConnection(port: api.port, receiveBuffer: 4_096)
            var opening = HTTP2Wire.preface
                + HTTP2Wire.frame(HTTP2Wire.settings, [0, 4] + HTTP2Wire.word(0x7fff_ffff))
                + HTTP2Wire.frame(HTTP2Wire.windowUpdate, HTTP2Wire.word(0x7fff_ffff - 65_535))
            for stream in Self.stalledStreams {
                opening += HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endStream | HTTP2Wire.endHeaders, stream: stream,
                                           HTTP2Wire.requestBlock(path: "/v1/orders/stream"))
            }
            #expect(stalled.send(bytes: opening))
            #expect(await FeedHTTP2Tests.subscribers(api, reach: Self.stalledStreams.count) == Self.stalledStreams.count)
            let live = try await api.feed()
            _ = try await live.events(through: "ready")
            #expect(await FeedHTTP2Tests.subscribers(api, reach: Self.stalledStreams.count + 1) == Self.stalledStreams.count + 1)

            // Changes of 2 KB until the five stalled streams are cut off, a page of 20 at a time, each
            // page once the live subscriber has read the one before: it stays within its buffer however
            // slowly the loaded machine runs its reader, and it is live — it gets every page's last
            // change. How many pages that takes depends on the kernel's socket buffers under the
            // suite's load: the bound only stops a broken test.
            let padding = String(repeating: "x", count: 2_000)
            var page = 0
            var liveGotEveryPage = true
            while api.metric("orderlive_api_subscribers_cut_off_total") < Double(Self.stalledStreams.count), page < 1_000 {
                try api.store.applyPage(try (0..<20).map { index in
                    try order(page * 20 + index, status: "created", version: 1, extra: ["padding": padding])
                })
                let last = String(page * 20 + 19)
                var seen = false
                while !seen, let event = try await live.nextEvent(within: .seconds(20)) {
                    #expect(event.type != "overflow")
                    seen = event.data.contains(#""id":\#(last)"#) || event.data.contains(#""id":"\#(last)""#)
                }
                liveGotEveryPage = liveGotEveryPage && seen
                page += 1
            }
            #expect(api.metric("orderlive_api_subscribers_cut_off_total") == Double(Self.stalledStreams.count),
                    "after \(page) pages of 20 orders of 2 KB")
            #expect(liveGotEveryPage, "the live subscriber received every page's last order")

            // The stalled connection reads again: each of its streams ends with the overflow event
            // and END_STREAM, not a reset.
            let scan = StreamEnds()
            _ = await stalled.readBytes { received, _ in scan.read(received, until: Self.stalledStreams) }
            let ends = scan.ends
            for stream in Self.stalledStreams {
                #expect(ends[stream]?.endStream == true, "stream \(stream) ended with END_STREAM")
                #expect(ends[stream]?.overflow == true, "stream \(stream) carried the overflow event")
                #expect(ends[stream]?.reset == false, "stream \(stream) was not reset")
            }
            // And the connection serves its next stream.
            stalled.send(bytes: HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endStream | HTTP2Wire.endHeaders, stream: 11,
                                                HTTP2Wire.requestBlock()))
            let next = StreamEnds()
            _ = await stalled.readBytes { received, _ in next.read(received, until: [11]) }
            #expect(next.ends[11]?.endStream == true, "GET /healthz on stream 11 was answered")
            #expect(next.ends[11]?.text.contains(#"{"status":"ok"}"#) == true)

            // A stream cut off resumes on the same connection from its last id: exactly the changes
            // after it, no reset and no snapshot.
            let head = try await api.orders().seq
            try api.store.applyUpsert(try order("after-overflow", status: "created", version: 1))
            stalled.send(bytes: HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endStream | HTTP2Wire.endHeaders, stream: 13,
                                                HTTP2Wire.requestBlock(path: "/v1/orders/stream?since=\(head)")))
            let resumed = StreamEnds()
            _ = await stalled.readBytes { received, _ in
                resumed.read(received) { $0[13]?.text.contains("after-overflow") == true || $0[13]?.endStream == true }
            }
            let text = resumed.ends[13]?.text ?? ""
            #expect(text.contains("after-overflow"), "the resumed stream received the next change: \(text.prefix(300))")
            #expect(!text.contains("event: reset") && !text.contains("event: snapshot"), "\(text.prefix(300))")
            #expect(api.server.hub.subscriberCount == 2)
            live.close()
        }
    }
}

/// How each stream ended, read frame by frame as the bytes arrive (each byte parsed once: a stalled
/// connection drains megabytes). Its state is behind one `Mutex`: `readBytes` calls it on a thread
/// of its own, the test reads it after.
final class StreamEnds: Sendable {
    struct End: Sendable {
        var endStream = false
        var reset = false
        var overflow = false
        var text = ""
    }

    private let state = Mutex<(at: Int, ends: [UInt32: End])>((0, [:]))

    var ends: [UInt32: End] { state.withLock { $0.ends } }

    /// Takes in the frames now whole; true once every stream of `streams` has ended.
    func read(_ received: [UInt8], until streams: [UInt32]) -> Bool {
        read(received) { ends in streams.allSatisfy { ends[$0]?.endStream == true || ends[$0]?.reset == true } }
    }

    /// Takes in the frames now whole; true once `done` says the streams' ends so far are enough.
    func read(_ received: [UInt8], done: ([UInt32: End]) -> Bool) -> Bool {
        state.withLock { state in
            for frame in HTTP2Wire.frames(received, from: &state.at) where frame.stream != 0 {
                var end = state.ends[frame.stream] ?? End()
                if frame.type == HTTP2Wire.data {
                    let text = String(decoding: frame.payload, as: UTF8.self)
                    if text.contains("event: overflow") { end.overflow = true }
                    if end.text.utf8.count < 65_536 { end.text += text }
                }
                if frame.type == HTTP2Wire.data || frame.type == HTTP2Wire.headers, frame.flags & HTTP2Wire.endStream != 0 {
                    end.endStream = true
                }
                if frame.type == HTTP2Wire.rstStream { end.reset = true }
                state.ends[frame.stream] = end
            }
            return done(state.ends)
        }
    }
}
