import AsyncSignals
import CurlHTTP
import Foundation

/// The JSON log lines of a running child, as they arrive; tests wait for a line matching a predicate.
public final class LogWatch: Sendable {
    public typealias Line = [String: String]
    public typealias Match = (index: Int, line: Line)

    private struct State {
        var lines: [Line] = []
        var unparsable: [String] = []
        var raw: [String] = []
        var rawWaiters: [(predicate: @Sendable (String) -> Bool, continuation: CheckedContinuation<String?, Never>)] = []
        var finished = false
        var waiters: [(from: Int, predicate: @Sendable (Line) -> Bool, continuation: CheckedContinuation<Match?, Never>)] = []
    }

    private let state = Locked(State())

    /// An empty watch.
    public init() {}

    /// Reads `lines` until it ends (the child exited).
    public func follow(_ lines: AsyncStream<String>) async {
        for await text in lines {
            let rawReady = state.withLock { state in
                state.raw.append(text)
                var ready: [CheckedContinuation<String?, Never>] = []
                state.rawWaiters.removeAll { waiter in
                    guard waiter.predicate(text) else { return false }
                    ready.append(waiter.continuation)
                    return true
                }
                return ready
            }
            for continuation in rawReady { continuation.resume(returning: text) }
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                state.withLock { $0.unparsable.append(text) }
                continue
            }
            let line = object.mapValues { "\($0)" }
            let ready = state.withLock { state in
                state.lines.append(line)
                let index = state.lines.count - 1
                var ready: [(CheckedContinuation<Match?, Never>, Match)] = []
                state.waiters.removeAll { waiter in
                    guard index >= waiter.from, waiter.predicate(line) else { return false }
                    ready.append((waiter.continuation, (index, line)))
                    return true
                }
                return ready
            }
            for (continuation, match) in ready { continuation.resume(returning: match) }
        }
        let (waiters, rawWaiters) = state.withLock { state in
            state.finished = true
            defer { state.waiters = []; state.rawWaiters = [] }
            return (state.waiters, state.rawWaiters)
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
        for waiter in rawWaiters { waiter.continuation.resume(returning: nil) }
    }

    /// The first output line (JSON or not) matching `predicate`, or nil if the child exits first.
    public func waitForRaw(_ predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        await withCheckedContinuation { continuation in
            let found: String?? = state.withLock { state in
                if let line = state.raw.first(where: predicate) { return .some(line) }
                if state.finished { return .some(nil) }
                state.rawWaiters.append((predicate, continuation))
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// Every output line as written.
    public var raw: [String] { state.withLock { $0.raw } }

    /// The first line at or after index `from` matching `predicate`, or nil if the child exits first.
    public func wait(from: Int = 0, for predicate: @escaping @Sendable (Line) -> Bool) async -> Match? {
        await withCheckedContinuation { continuation in
            let found: Match?? = state.withLock { state in
                if let index = state.lines.indices.first(where: { $0 >= from && predicate(state.lines[$0]) }) {
                    return .some((index, state.lines[index]))
                }
                if state.finished { return .some(nil) }
                state.waiters.append((from, predicate, continuation))
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// Waits for a line whose `message` is `message` (and whose fields match `fields`).
    public func wait(from: Int = 0, message: String, _ fields: [String: String] = [:]) async -> Match? {
        await wait(from: from) { line in
            line["message"] == message && fields.allSatisfy { line[$0.key] == $0.value }
        }
    }

    public var lines: [Line] { state.withLock { $0.lines } }
    public var unparsable: [String] { state.withLock { $0.unparsable } }
    public var count: Int { state.withLock { $0.lines.count } }
}

/// A small HTTP client for the agent's own endpoints.
public struct AgentHTTP: Sendable {
    public let loop: CurlLoop

    /// A client over `loop`.
    public init(loop: CurlLoop) {
        self.loop = loop
    }

    public func get(_ url: String) async throws -> (status: Int, body: String) {
        let response = try await loop.perform(HTTPRequest(url: url))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }
}

/// Prometheus text: every line a comment or `name{labels} value`; returns the samples.
public func prometheusSamples(_ text: String) -> [String: Double]? {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
        if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") { continue }
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        let name = line[..<space]
        guard let first = name.first, first.isLetter || first == "_" else { return nil }
        if let brace = name.firstIndex(of: "{"), !name.hasSuffix("}") || name[brace...].contains(" ") { return nil }
        samples[String(name)] = value
    }
    return samples
}
