import AsyncSignals
import Foundation

/// The JSON log lines of a running child, as they arrive; tests wait for a line matching a predicate.
///
/// Every wait has a deadline (`within`, 60 s unless a test says otherwise) and ends when the waiting
/// task is cancelled (a `.timeLimit`): a child that never writes the line fails the test with nil
/// instead of hanging the suite.
public final class LogWatch: Sendable {
    public typealias Line = [String: String]
    public typealias Match = (index: Int, line: Line)

    /// How long a wait lasts unless a test passes its own.
    public static let defaultDeadline: Duration = .seconds(60)

    private struct Waiter {
        var id: Int
        /// The match for this waiter in a new line (raw text and, when it parsed, the JSON line at its index).
        var matches: @Sendable (String, (Int, Line)?) -> Match??
        var continuation: CheckedContinuation<Match?, Never>
    }

    private struct State {
        var lines: [Line] = []
        var unparsable: [String] = []
        var raw: [String] = []
        var finished = false
        var nextID = 0
        var waiters: [Waiter] = []
        /// Waiters whose deadline passed before they were registered.
        var expired: Set<Int> = []
    }

    private let state = Locked(State())

    /// An empty watch.
    public init() {}

    /// Reads `lines` until it ends (the child exited).
    public func follow(_ lines: AsyncStream<String>) async {
        for await text in lines {
            var parsed: (Int, Line)?
            if let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] {
                parsed = (0, object.mapValues { "\($0)" })
            }
            let ready = state.withLock { state in
                state.raw.append(text)
                if let line = parsed?.1 {
                    state.lines.append(line)
                    parsed = (state.lines.count - 1, line)
                } else {
                    state.unparsable.append(text)
                }
                var ready: [(CheckedContinuation<Match?, Never>, Match?)] = []
                state.waiters.removeAll { waiter in
                    guard let match = waiter.matches(text, parsed) else { return false }
                    ready.append((waiter.continuation, match))
                    return true
                }
                return ready
            }
            for (continuation, match) in ready { continuation.resume(returning: match) }
        }
        let waiters = state.withLock { state in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
    }

    /// Waits until `existing` finds a match in what has arrived, or `matches` in a new line; nil when
    /// the child exits, the deadline passes or the task is cancelled first.
    private func wait(
        within deadline: Duration, existing: @Sendable (State) -> Match?,
        matches: @escaping @Sendable (String, (Int, Line)?) -> Match??
    ) async -> Match? {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let expiry = Task { [weak self] in
            try await Task.sleep(for: TestTime.bound(deadline))
            self?.give(up: id)
        }
        defer { expiry.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let found: Match?? = state.withLock { state in
                    if let match = existing(state) { return .some(match) }
                    if state.finished || Task.isCancelled || state.expired.remove(id) != nil { return .some(nil) }
                    state.waiters.append(Waiter(id: id, matches: matches, continuation: continuation))
                    return nil
                }
                if let found { continuation.resume(returning: found) }
            }
        } onCancel: {
            give(up: id)
        }
    }

    /// Ends waiter `id` with nil, if it is still waiting.
    private func give(up id: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                state.expired.insert(id)
                return nil
            }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(returning: nil)
    }

    /// The first output line (JSON or not) matching `predicate`, or nil if the child exits, the
    /// deadline passes or the task is cancelled first.
    public func waitForRaw(within deadline: Duration = defaultDeadline,
                           _ predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        let match = await wait(within: deadline) { state in
            state.raw.first(where: predicate).map { (0, ["raw": $0]) }
        } matches: { text, _ in
            predicate(text) ? .some((0, ["raw": text])) : nil
        }
        return match?.line["raw"]
    }

    /// Every output line as written.
    public var raw: [String] { state.withLock { $0.raw } }

    /// The first line at or after index `from` matching `predicate`, or nil if the child exits, the
    /// deadline passes or the task is cancelled first.
    public func wait(from: Int = 0, within deadline: Duration = defaultDeadline,
                     for predicate: @escaping @Sendable (Line) -> Bool) async -> Match? {
        await wait(within: deadline) { state in
            state.lines.indices.first(where: { $0 >= from && predicate(state.lines[$0]) }).map { ($0, state.lines[$0]) }
        } matches: { _, parsed in
            guard let (index, line) = parsed, index >= from, predicate(line) else { return nil }
            return .some((index, line))
        }
    }

    /// Waits for a line whose `message` is `message` (and whose fields match `fields`).
    public func wait(from: Int = 0, within deadline: Duration = defaultDeadline, message: String,
                     _ fields: [String: String] = [:]) async -> Match? {
        await wait(from: from, within: deadline) { line in
            line["message"] == message && fields.allSatisfy { line[$0.key] == $0.value }
        }
    }

    public var lines: [Line] { state.withLock { $0.lines } }
    public var unparsable: [String] { state.withLock { $0.unparsable } }
    public var count: Int { state.withLock { $0.lines.count } }
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
