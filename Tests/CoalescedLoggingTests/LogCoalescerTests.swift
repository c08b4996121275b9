import AsyncSignals
import CoalescedLogging
import Logging
import TestKit
import Testing
import InMemoryLogging

@Suite(.timeLimit(.minutes(3))) struct LogCoalescerTests {
    /// A monotonic clock the test moves.
    final class Uptime: Sendable {
        private let value = Locked(Duration.zero)
        var now: Duration { value.withLock { $0 } }
        func advance(by delta: Duration) { value.withLock { $0 += delta } }
    }

    @Test func theFirstLineIsWrittenThenOneLinePerIntervalWithTheCount() {
        let logs = CapturedLogs()
        let uptime = Uptime()
        let coalescer = LogCoalescer(logger: logs.logger(level: .info), interval: .seconds(10), uptime: { uptime.now })
        var written = 0
        for _ in 0..<1_000 {
            if coalescer.log(.warning, "push refused", key: "refused/unauthorized") { written += 1 }
            uptime.advance(by: .milliseconds(1))  // 1,000 in one second
        }
        #expect(written == 1)
        uptime.advance(by: .seconds(10))
        #expect(coalescer.log(.warning, "push refused", key: "refused/unauthorized"))
        let entries = logs.entries
        #expect(entries.count == 2)
        #expect(entries.first?.metadata["log.repeated"] == nil, "the first line is written as it came")
        #expect(entries.last?.metadata["log.repeated"] == "1000", "\(entries)")
        #expect(entries.allSatisfy { $0.level == .warning && $0.message == "push refused" })
    }

    @Test func differentConditionsAreCoalescedApartAndLevelsBelowTheLoggerCostNothing() {
        let logs = CapturedLogs()
        let uptime = Uptime()
        let coalescer = LogCoalescer(logger: logs.logger(level: .info), interval: .seconds(10), uptime: { uptime.now })
        for _ in 0..<100 {
            coalescer.log(.info, "push refused", key: "refused/too_large")
            coalescer.log(.error, "a push could not be journaled", key: "journal")
            coalescer.log(.debug, "ignored", key: "debug")
        }
        #expect(logs.entries.map(\.message.description).sorted() == ["a push could not be journaled", "push refused"])
        #expect(logs.entries("ignored").isEmpty)
    }

    @Test func memoryIsBoundedWhateverTheNumberOfKinds() {
        let logs = CapturedLogs()
        let coalescer = LogCoalescer(logger: logs.logger(level: .info), uptime: { .zero })
        // As many kinds as it remembers: each is written once, and a repeat of the first is coalesced.
        for index in 0..<LogCoalescer.maximumKinds { coalescer.log(.info, "kind", key: "\(index)") }
        coalescer.log(.info, "kind", key: "0")
        #expect(logs.entries.count == LogCoalescer.maximumKinds)
        // One kind more: the memory is cleared rather than grown, so the first kind is forgotten and
        // written again (with unbounded memory it would still be coalesced).
        coalescer.log(.info, "kind", key: "\(LogCoalescer.maximumKinds)")
        coalescer.log(.info, "kind", key: "0")
        #expect(logs.entries.count == LogCoalescer.maximumKinds + 2)
    }
}
