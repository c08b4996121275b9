import CurlHTTP
import Foundation
import HummingbirdCore
import LocalHTTP
import PushIngest
import Prometheus
import Testing
import TestHarnesses
import TestKit

/// HTTP/2 abuse against the push listener over `h2c` (issue 57): rapid reset (CVE-2023-44487), a
/// SETTINGS flood, connections that never send a complete request head, an oversized header block,
/// and streams past `max_streams_per_connection`. Each is cut off and counted by reason while a real
/// push on another connection is answered within 2 s. The attacker writes frames by hand — what no
/// well-behaved client library would send.
@Suite(.timeLimit(.minutes(3))) struct HTTP2AttackTests {
    /// Connections closed for `reason`, read from the registry (not over HTTP: a full listener
    /// would refuse the request).
    static func closed(_ harness: PushServerHarness, _ reason: String) async throws -> Double {
        let text = harness.registry.emitToString()
        return try #require(prometheusSamples(text))[#"orderlive_connections_closed_total{listener="push",reason="\#(reason)"}"#] ?? 0
    }

    /// Sends `attack` on a new connection, answers a real push meanwhile, and expects the attacker
    /// cut off and counted as `reason`.
    static func expectCutOff(
        _ reason: String, harness: PushServerHarness, _ attack: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let attacker = try RawConnection(port: harness.port)
        attacker.send(bytes: HTTP2Wire.preface + HTTP2Wire.frame(HTTP2Wire.settings) + attack)
        let clock = ContinuousClock()
        let started = clock.now
        let pushed = try await harness.push(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"order_id":"\#(reason)"}}]}"#)
        let took = clock.now - started
        #expect(pushed.status == 200, sourceLocation: sourceLocation)
        #expect(took < .seconds(2), "a push took \(took) during the \(reason) attack", sourceLocation: sourceLocation)
        let ending = await attacker.readUntilClosed()
        #expect(ending.closed, "the \(reason) attacker was not cut off", sourceLocation: sourceLocation)
        #expect(try await closed(harness, reason) == 1, sourceLocation: sourceLocation)
    }

    @Test func rapidResetIsCutOffAndCounted() async throws {
        try await PushServerHarness.with(http2: ListenerHTTP2(cleartext: true)) { harness in
            var attack: [UInt8] = []
            for index in 0..<400 {
                let stream = UInt32(2 * index + 1)
                attack += HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endHeaders, stream: stream, HTTP2Wire.requestBlock(post: true))
                attack += HTTP2Wire.frame(HTTP2Wire.rstStream, stream: stream, [0, 0, 0, 0x8])  // CANCEL
            }
            try await Self.expectCutOff("rapid_reset", harness: harness, attack)
        }
    }

    @Test func aSettingsFloodIsCutOffAndCounted() async throws {
        try await PushServerHarness.with(http2: ListenerHTTP2(cleartext: true)) { harness in
            let attack = (0..<1_000).flatMap { _ in HTTP2Wire.frame(HTTP2Wire.settings) }
            try await Self.expectCutOff("frame_flood", harness: harness, attack)
        }
    }

    @Test func anOversizedHeaderBlockIsCutOffAndCounted() async throws {
        try await PushServerHarness.with(http2: ListenerHTTP2(cleartext: true)) { harness in
            let name = Array("x-padding".utf8)
            let value = [UInt8](repeating: UInt8(ascii: "a"), count: Listener.headerLimits.maxHeaderListSize + 1_024)
            let block = HTTP2Wire.requestBlock() + [0x00, UInt8(name.count)] + name + HTTP2Wire.integer(value.count, prefix: 7) + value
            // HEADERS then CONTINUATION frames of at most 16 KiB (the default SETTINGS_MAX_FRAME_SIZE).
            let pieces = stride(from: 0, to: block.count, by: 16_384).map { Array(block[$0..<min($0 + 16_384, block.count)]) }
            var attack: [UInt8] = []
            for (index, piece) in pieces.enumerated() {
                let last: UInt8 = index == pieces.count - 1 ? HTTP2Wire.endHeaders : 0
                attack += index == 0
                    ? HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endStream | last, stream: 1, piece)
                    : HTTP2Wire.frame(HTTP2Wire.continuation, flags: last, stream: 1, piece)
            }
            try await Self.expectCutOff("oversized_headers", harness: harness, attack)
        }
    }

    @Test func connectionsWithoutACompleteRequestHeadAreClosedAtTheReadTimeout() async throws {
        try await PushServerHarness.with(readTimeout: .seconds(1), http2: ListenerHTTP2(cleartext: true)) { harness in
            // The preface and SETTINGS, then nothing; and a header block that never ends.
            let silent = try RawConnection(port: harness.port)
            silent.send(bytes: HTTP2Wire.preface + HTTP2Wire.frame(HTTP2Wire.settings))
            let unfinished = try RawConnection(port: harness.port)
            unfinished.send(bytes: HTTP2Wire.preface + HTTP2Wire.frame(HTTP2Wire.settings)
                + HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endStream, stream: 1, HTTP2Wire.requestBlock()))
            let pushed = try await harness.push(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"order_id":1}}]}"#)
            #expect(pushed.status == 200)
            #expect(await silent.readUntilClosed().closed)
            #expect(await unfinished.readUntilClosed().closed)
            #expect(try await Self.closed(harness, "head_timeout") == 2)
        }
    }

    @Test func aClientPastTheStreamLimitIsCutOffAfterItsStreamsWithinItWereServed() async throws {
        try await PushServerHarness.with(http2: ListenerHTTP2(cleartext: true, maximumStreamsPerConnection: 3)) { harness in
            let client = try RawConnection(port: harness.port)
            // The limit holds once the client acknowledged the server's SETTINGS (RFC 9113 §6.5.3).
            client.send(bytes: HTTP2Wire.preface + HTTP2Wire.frame(HTTP2Wire.settings))
            let greeting = HTTP2Wire.frames(await client.readBytes { received, _ in
                HTTP2Wire.frames(received).contains { $0.type == HTTP2Wire.settings && $0.flags & 0x1 == 0 }
            })
            // SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 3 is what the server announced.
            let announced = try #require(greeting.first { $0.type == HTTP2Wire.settings && $0.flags & 0x1 == 0 }).payload
            #expect(stride(from: 0, to: announced.count, by: 6).contains { announced[$0..<$0 + 6].elementsEqual([0, 3, 0, 0, 0, 3]) })
            // Three pushes whose bodies do not come yet: within the limit; stream 1's empty body ends it.
            var opening = HTTP2Wire.frame(HTTP2Wire.settings, flags: 0x1)
            for stream in [1, 3, 5] as [UInt32] {
                opening += HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endHeaders, stream: stream, HTTP2Wire.requestBlock(path: "/api/push", post: true))
            }
            opening += HTTP2Wire.frame(0x0, flags: HTTP2Wire.endStream, stream: 1)
            client.send(bytes: opening)
            let answered = await client.readBytes { received, _ in HTTP2Wire.frames(received).contains { $0.type == HTTP2Wire.headers && $0.stream == 1 } }
            #expect(HTTP2Wire.frames(answered).contains { $0.type == HTTP2Wire.headers && $0.stream == 1 }, "stream 1 is answered")

            // Streams 3 and 5 are still open: a third fits, a fourth at once ignores the announced
            // limit and the connection is cut off (GOAWAY PROTOCOL_ERROR; RFC 9113 §5.1.2), counted.
            var more: [UInt8] = []
            for stream in [7, 9] as [UInt32] {
                more += HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endHeaders, stream: stream, HTTP2Wire.requestBlock(path: "/api/push", post: true))
            }
            client.send(bytes: more)
            let ending = await client.readUntilClosed()
            #expect(ending.closed)
            #expect(try await Self.closed(harness, "stream_limit") == 1)
            let pushed = try await harness.push(#"{"notifications":[{"tokens":["t"],"platform":2,"data":{"order_id":9}}]}"#)
            #expect(pushed.status == 200)
        }
    }

    /// Admission counts streams: an HTTP/2 connection with a stream open is busy, so a full listener
    /// refuses a newcomer rather than close it; once its last stream ends it is idle, and the next
    /// newcomer takes its place.
    @Test func aConnectionWithAnOpenStreamIsBusyAndWithoutOneEvictable() async throws {
        try await PushServerHarness.with(maximumConnections: 1, http2: ListenerHTTP2(cleartext: true)) { harness in
            let held = try RawConnection(port: harness.port)
            // A push whose body has not come yet: stream 1 stays open.
            held.send(bytes: HTTP2Wire.preface + HTTP2Wire.frame(HTTP2Wire.settings)
                + HTTP2Wire.frame(HTTP2Wire.headers, flags: HTTP2Wire.endHeaders, stream: 1, HTTP2Wire.requestBlock(path: "/api/push", post: true)))
            _ = await held.readBytes { received, _ in HTTP2Wire.frames(received).contains { $0.type == HTTP2Wire.settings && $0.flags & 0x1 == 1 } }
            let refused = try RawConnection(port: harness.port)
            #expect(await refused.readUntilClosed().closed)
            #expect(try await Self.closed(harness, "refused") == 1)

            // The body ends: the stream is answered and closes, the connection is idle.
            held.send(bytes: HTTP2Wire.frame(0x0, flags: HTTP2Wire.endStream, stream: 1))
            _ = await held.readBytes { received, _ in HTTP2Wire.frames(received).contains { $0.type == HTTP2Wire.headers && $0.stream == 1 } }
            let newcomer = try RawConnection(port: harness.port)
            #expect(await held.readUntilClosed().closed, "the idle HTTP/2 connection makes room")
            newcomer.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await newcomer.readResponseHead().hasPrefix("HTTP/1.1 200"))
            #expect(try await Self.closed(harness, "evicted") == 1)
        }
    }
}
