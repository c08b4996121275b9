import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Scans a feed's SSE body bytes for what the benchmark needs, no more: each live event's
/// `data: {"seq":N` line and the `"bench_ns":T` in it, the `ready` event (the one data line with a
/// seq and no order) and `overflow`. A full parse with a String per field cost the load generator
/// twice the agent's CPU, so the figures measured the client. One per subscriber, used on its event
/// loop only; HTTP/1.1 connections and HTTP/2 streams feed it the same way.
struct FeedBodyScanner {
    private static let seqMarker = Array(#"data: {"seq":"#.utf8)
    private static let benchMarker = Array(#""bench_ns":"#.utf8)
    private static let overflowMarker = Array("event: overflow".utf8)

    private var carry: [UInt8] = []
    private var isReady = false
    private(set) var sawOverflow = false

    /// Scans the bytes that just arrived and records what they carried in `shard`.
    mutating func scan(_ buffer: ByteBuffer, into shard: FeedShard) {
        let now = monotonicNanoseconds()
        var latencies: [(seq: Int64, nanoseconds: Int64)] = []
        var becameReady = false
        var bytes = carry
        bytes.append(contentsOf: buffer.readableBytesView)
        bytes.withUnsafeBytes { raw in
            var consumed = 0
            var position = 0
            while let start = Self.find(Self.seqMarker, in: raw, from: position) {
                guard let lineEnd = Self.find([0x0A], in: raw, from: start) else {
                    consumed = start  // the line is not complete yet: keep it for the next read
                    position = raw.count
                    break
                }
                let seq = Self.number(in: raw, at: start + Self.seqMarker.count)
                if let bench = Self.find(Self.benchMarker, in: raw, from: start), bench < lineEnd {
                    if isReady, let seq, let sent = Self.number(in: raw, at: bench + Self.benchMarker.count) {
                        latencies.append((seq, now - sent))
                    }
                } else if !isReady {
                    isReady = true
                    becameReady = true
                }
                consumed = lineEnd + 1
                position = lineEnd + 1
            }
            if Self.find(Self.overflowMarker, in: raw, from: 0) != nil { sawOverflow = true }
            if position >= raw.count, consumed < raw.count, Self.find(Self.seqMarker, in: raw, from: consumed) == consumed {
                carry = Array(raw[consumed...])
            } else {
                carry = Array(raw[max(consumed, raw.count - Self.overflowMarker.count + 1)...])
            }
        }
        if latencies.isEmpty && !becameReady { return }
        shard.state.withLock { state in
            if becameReady { state.ready += 1 }
            for (seq, nanoseconds) in latencies {
                state.deliveries.record(microseconds: nanoseconds / 1_000)
                let previous = state.perChange[seq] ?? (0, 0)
                state.perChange[seq] = (previous.count + 1, max(previous.latest, nanoseconds))
            }
            if !latencies.isEmpty {
                state.firstDelivery = min(state.firstDelivery, now)
                state.lastDelivery = max(state.lastDelivery, now)
            }
        }
    }

    /// Where `pattern` first occurs in `bytes` at or after `from`.
    static func find(_ pattern: [UInt8], in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < bytes.count, let base = bytes.baseAddress else { return nil }
        // memchr for the first byte, then a comparison (memmem is not in Swift's Glibc module).
        var index = from
        while index + pattern.count <= bytes.count {
            guard let hit = memchr(base + index, Int32(pattern[0]), bytes.count - index - pattern.count + 1) else { return nil }
            let start = base.distance(to: UnsafeRawPointer(hit))
            if pattern.withUnsafeBytes({ needle in needle.baseAddress.map { memcmp(base + start, $0, pattern.count) } }) == 0 {
                return start
            }
            index = start + 1
        }
        return nil
    }

    /// The decimal digits at `at`, nil when there are none (or they run past the end).
    static func number(in bytes: UnsafeRawBufferPointer, at: Int) -> Int64? {
        var index = at
        var value: Int64 = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39, value < Int64.max / 10 - 9 {
            value = value * 10 + Int64(bytes[index] - 0x30)
            index += 1
        }
        return index > at && index < bytes.count ? value : nil
    }
}

extension FeedShard {
    /// A subscriber's feed ended, cut off with `overflow` or not.
    func ended(overflow: Bool) {
        state.withLock { state in
            state.ended += 1
            if overflow { state.cutOff += 1 }
        }
    }
}
