import AsyncSignals
import CurlHTTP
import Foundation
import SQLiteStore
import StoreModel
import TestHarnesses
import TestKit
import Testing
import WebhookDelivery

/// On a machine busy to its last core, deliveries yield before each turn and still arrive (issue 40:
/// a delivery never takes the processor from pushes; a busy machine never stops deliveries).
@Suite(.timeLimit(.minutes(2))) struct WebhookYieldTests {
    @Test func onABusyMachineATurnWaitsFirstAndDeliveriesStillArriveInOrder() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try await WebhookReceiver.withRunning(secret: WebhookDeliveryTests.secret) { receiver, url in
            let endpoint = try await store.addWebhookEndpoint(NewWebhookEndpoint(url: url, secret: WebhookDeliveryTests.secret))
            let start = endpoint.cursor
            func upsert(_ index: Int) throws { try store.applyUpsert(try order(index, status: "created", version: 1), completing: nil) }
            try upsert(1)
            // A machine that never idles: each look finds 100 more ticks, none of them idle.
            let ticks = Locked<UInt64>(0)
            let looks = Locked(0)
            let loop = try CurlLoop(logger: quietLogger)
            let changed = WakeSignal()
            let deliverer = WebhookDeliverer(
                store: store, loop: loop, settings: WebhookSettings(timeout: .seconds(30)), changed: changed,
                processorCounters: {
                    looks.withLock { $0 += 1 }
                    return (idle: 500, total: ticks.withLock { $0 += 100; return $0 })
                },
                logger: quietLogger)
            let running = Task { await deliverer.run() }
            // The first look has nothing to compare with: the first change goes at once.
            #expect(await receiver.until { WebhookDeliveryTests.seqs($0) == [start + 1] })

            try upsert(2)
            try upsert(3)
            changed.signal()
            #expect(await receiver.until { WebhookDeliveryTests.seqs($0) == [start + 1, start + 2, start + 3] })
            // Every turn after the first answer waited out the yield before it read the store: the second
            // change came at least 250 ms after the first was taken down (a lower bound: never flaky).
            let received = receiver.received
            #expect(received[0].at.duration(to: received[1].at) >= .milliseconds(250))
            #expect(looks.withLock { $0 } >= 2)
            running.cancel()
            await running.value
            await loop.shutdown()
        }
    }
}

/// `/proc/stat`'s counters, read with checked conversions, as shares of idle time per window.
@Suite(.timeLimit(.minutes(1))) struct ProcessorIdleGaugeTests {
    @Test func parsesTheAggregateLineAndCountsIdleAndIowait() {
        let line: Substring = "cpu  8887798 61877 1450598 4455981 62520 0 248586 10400 0 0"
        let counters = ProcessorIdleGauge.parse(line)
        #expect(counters?.idle == 4_455_981 + 62_520)
        #expect(counters?.total == 8_887_798 + 61_877 + 1_450_598 + 4_455_981 + 62_520 + 0 + 248_586 + 10_400)
        // An old kernel's four fields.
        #expect(ProcessorIdleGauge.parse("cpu 1 2 3 4")?.idle == 4)
        #expect(ProcessorIdleGauge.parse("cpu 1 2 3 4")?.total == 10)
    }

    @Test func refusesAnythingElse() {
        for line: Substring in [
            "", "cpu", "cpu 1 2 3", "cpu0 1 2 3 4 5", "intr 1 2 3 4 5", "cpu 1 2 x 4 5", "cpu 1 2 -3 4 5",
            "cpu 18446744073709551616 0 0 0 0",  // 2^64: no UInt64
            "cpu 18446744073709551615 1 0 0 0",  // the sum overflows
        ] {
            #expect(ProcessorIdleGauge.parse(line) == nil, "\(line)")
        }
    }

    @Test func sharesAreTakenPerWindowAndShortOrBackwardWindowsTellNothingNew() {
        let readings = Locked<[ProcessorIdleGauge.Counters?]>([
            (idle: 100, total: 1_000),  // the first look: nothing to compare with
            (idle: 150, total: 1_100),  // 50 of 100 idle
            (idle: 151, total: 1_105),  // 5 ticks: too short, the last share stands
            (idle: 160, total: 1_200),  // since 1,100: 10 of 100
            (idle: 10, total: 200),  // backwards: a new window
            (idle: 30, total: 300),  // 20 of 100
            nil,  // unreadable
        ])
        var gauge = ProcessorIdleGauge(read: { readings.withLock { $0.isEmpty ? nil : $0.removeFirst() } })
        #expect(gauge.idleShare() == nil)
        #expect(gauge.idleShare() == 0.5)
        #expect(gauge.idleShare() == 0.5)
        #expect(gauge.idleShare() == 0.1)
        #expect(gauge.idleShare() == nil)
        #expect(gauge.idleShare() == 0.2)
        #expect(gauge.idleShare() == nil)
    }

    @Test func thisMachineHasCountersThatMove() {
        // Linux CI: /proc/stat is there and its totals only grow.
        guard let first = ProcessorIdleGauge.readProcStat() else {
            Issue.record("no /proc/stat")
            return
        }
        #expect(first.total > 0 && first.idle <= first.total)
    }
}
