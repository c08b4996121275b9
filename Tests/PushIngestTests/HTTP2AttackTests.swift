import Foundation
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
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// One frame: 24-bit length, type, flags, 31-bit stream id, payload (RFC 9113 §4.1).
    static func frame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
        let length = UInt32(payload.count)
        return [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
                type, flags] + withUnsafeBytes(of: stream.bigEndian, Array.init) + payload
    }

    static let settings: UInt8 = 0x4, headers: UInt8 = 0x1, rstStream: UInt8 = 0x3, continuation: UInt8 = 0x9
    static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4

    /// A request head in HPACK: `:method` (GET by static index 2, POST by 3), `:scheme http` (6),
    /// `:path` (`/healthz`) and `:authority` as literals without indexing.
    static func requestBlock(path: String = "/healthz", post: Bool = false) -> [UInt8] {
        let path = Array(path.utf8), authority = Array("127.0.0.1".utf8)
        return [post ? 0x83 : 0x82, 0x86, 0x04, UInt8(path.count)] + path + [0x01, UInt8(authority.count)] + authority
    }

    /// An HPACK integer with an `n`-bit prefix whose other bits are `flags` (RFC 7541 §5.1).
    static func integer(_ value: Int, prefix n: Int, flags: UInt8 = 0) -> [UInt8] {
        let limit = (1 << n) - 1
        guard value >= limit else { return [flags | UInt8(value)] }
        var bytes: [UInt8] = [flags | UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            bytes.append(UInt8(rest % 128) | 0x80)
            rest /= 128
        }
        return bytes + [UInt8(rest)]
    }

    /// The frames the server sent, as (type, flags, stream, payload).
    static func frames(_ bytes: [UInt8]) -> [(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8])] {
        var frames: [(UInt8, UInt8, UInt32, [UInt8])] = []
        var at = 0
        while bytes.count - at >= 9 {
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            guard bytes.count - at - 9 >= length else { break }
            let stream = UInt32(bytes[at + 5] & 0x7f) << 24 | UInt32(bytes[at + 6]) << 16 | UInt32(bytes[at + 7]) << 8 | UInt32(bytes[at + 8])
            frames.append((bytes[at + 3], bytes[at + 4], stream, Array(bytes[(at + 9)..<(at + 9 + length)])))
            at += 9 + length
        }
        return frames
    }

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
        attacker.send(bytes: preface + frame(settings) + attack)
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
                attack += Self.frame(Self.headers, flags: Self.endHeaders, stream: stream, Self.requestBlock(post: true))
                attack += Self.frame(Self.rstStream, stream: stream, [0, 0, 0, 0x8])  // CANCEL
            }
            try await Self.expectCutOff("rapid_reset", harness: harness, attack)
        }
    }

    @Test func aSettingsFloodIsCutOffAndCounted() async throws {
        try await PushServerHarness.with(http2: ListenerHTTP2(cleartext: true)) { harness in
            let attack = (0..<1_000).flatMap { _ in Self.frame(Self.settings) }
            try await Self.expectCutOff("frame_flood", harness: harness, attack)
        }
    }

    @Test func anOversizedHeaderBlockIsCutOffAndCounted() async throws {
        try await PushServerHarness.with(http2: ListenerHTTP2(cleartext: true)) { harness in
            let name = Array("x-padding".utf8)
            let value = [UInt8](repeating: UInt8(ascii: "a"), count: Listener.headerLimits.maxHeaderListSize + 1_024)
            let block = Self.requestBlock() + [0x00, UInt8(name.count)] + name + Self.integer(value.count, prefix: 7) + value
            // HEADERS then CONTINUATION frames of at most 16 KiB (the default SETTINGS_MAX_FRAME_SIZE).
            let pieces = stride(from: 0, to: block.count, by: 16_384).map { Array(block[$0..<min($0 + 16_384, block.count)]) }
            var attack: [UInt8] = []
            for (index, piece) in pieces.enumerated() {
                let last: UInt8 = index == pieces.count - 1 ? Self.endHeaders : 0
                attack += index == 0
                    ? Self.frame(Self.headers, flags: Self.endStream | last, stream: 1, piece)
                    : Self.frame(Self.continuation, flags: last, stream: 1, piece)
            }
            try await Self.expectCutOff("oversized_headers", harness: harness, attack)
        }
    }

    @Test func connectionsWithoutACompleteRequestHeadAreClosedAtTheReadTimeout() async throws {
        try await PushServerHarness.with(readTimeout: .seconds(1), http2: ListenerHTTP2(cleartext: true)) { harness in
            // The preface and SETTINGS, then nothing; and a header block that never ends.
            let silent = try RawConnection(port: harness.port)
            silent.send(bytes: Self.preface + Self.frame(Self.settings))
            let unfinished = try RawConnection(port: harness.port)
            unfinished.send(bytes: Self.preface + Self.frame(Self.settings)
                + Self.frame(Self.headers, flags: Self.endStream, stream: 1, Self.requestBlock()))
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
            client.send(bytes: Self.preface + Self.frame(Self.settings))
            let greeting = Self.frames(await client.readBytes { received, _ in
                Self.frames(received).contains { $0.type == Self.settings && $0.flags & 0x1 == 0 }
            })
            // SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 3 is what the server announced.
            let announced = try #require(greeting.first { $0.type == Self.settings && $0.flags & 0x1 == 0 }).payload
            #expect(stride(from: 0, to: announced.count, by: 6).contains { announced[$0..<$0 + 6].elementsEqual([0, 3, 0, 0, 0, 3]) })
            // Three pushes whose bodies do not come yet: within the limit; stream 1's empty body ends it.
            var opening = Self.frame(Self.settings, flags: 0x1)
            for stream in [1, 3, 5] as [UInt32] {
                opening += Self.frame(Self.headers, flags: Self.endHeaders, stream: stream, Self.requestBlock(path: "/api/push", post: true))
            }
            opening += Self.frame(0x0, flags: Self.endStream, stream: 1)
            client.send(bytes: opening)
            let answered = await client.readBytes { received, _ in Self.frames(received).contains { $0.type == Self.headers && $0.stream == 1 } }
            #expect(Self.frames(answered).contains { $0.type == Self.headers && $0.stream == 1 }, "stream 1 is answered")

            // Streams 3 and 5 are still open: a third fits, a fourth at once ignores the announced
            // limit and the connection is cut off (GOAWAY PROTOCOL_ERROR; RFC 9113 §5.1.2), counted.
            var more: [UInt8] = []
            for stream in [7, 9] as [UInt32] {
                more += Self.frame(Self.headers, flags: Self.endHeaders, stream: stream, Self.requestBlock(path: "/api/push", post: true))
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
            held.send(bytes: Self.preface + Self.frame(Self.settings)
                + Self.frame(Self.headers, flags: Self.endHeaders, stream: 1, Self.requestBlock(path: "/api/push", post: true)))
            _ = await held.readBytes { received, _ in Self.frames(received).contains { $0.type == Self.settings && $0.flags & 0x1 == 1 } }
            let refused = try RawConnection(port: harness.port)
            #expect(await refused.readUntilClosed().closed)
            #expect(try await Self.closed(harness, "refused") == 1)

            // The body ends: the stream is answered and closes, the connection is idle.
            held.send(bytes: Self.frame(0x0, flags: Self.endStream, stream: 1))
            _ = await held.readBytes { received, _ in Self.frames(received).contains { $0.type == Self.headers && $0.stream == 1 } }
            let newcomer = try RawConnection(port: harness.port)
            #expect(await held.readUntilClosed().closed, "the idle HTTP/2 connection makes room")
            newcomer.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await newcomer.readResponseHead().hasPrefix("HTTP/1.1 200"))
            #expect(try await Self.closed(harness, "evicted") == 1)
        }
    }
}
