import StoreModel
import Testing
@testable import WebhookDelivery

/// The rules of parallel and batched delivery (issue 59), on the plan alone: one order's changes never
/// in two requests in flight and never out of order, batches in change-log order, a failed batch sent
/// again as it was, and the stored cursor only ever the contiguous low-water mark.
@Suite(.timeLimit(.minutes(1))) struct DeliveryPlanTests {
    static func change(_ seq: Int64, _ order: String, at: Double = 0) -> OrderChange {
        OrderChange(seq: seq, orderID: order, kind: .upserted, version: seq, body: "{}", at: at, after: nil, before: nil)
    }

    static func sent(_ next: DeliveryPlan.Next) -> DeliveryPlan.Unit? {
        if case .send(let unit) = next { return unit }
        return nil
    }

    @Test func anOrdersChangesWaitForItsRequestInFlightAndTheCursorIsTheLowWaterMark() throws {
        var plan = DeliveryPlan(handled: 10, answered: [], held: [:])
        plan.read([11, 12, 13, 14].map { Self.change($0, $0 == 13 ? "a" : ($0 == 11 ? "a" : "b\($0)")) }, wanted: { _ in true })
        let first = try #require(Self.sent(plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0)))
        let second = try #require(Self.sent(plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0)))
        let third = try #require(Self.sent(plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0)))
        #expect(first.seqs == [11] && second.seqs == [12] && third.seqs == [14], "13 is order a's, whose 11 is in flight")
        if case .nothing = plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0) {} else {
            Issue.record("order a's next change went while its previous one was in flight")
        }
        plan.delivered(second)
        plan.delivered(third)
        #expect(plan.handled == 10, "11 is unanswered: the cursor stays below it")
        plan.delivered(first)
        #expect(plan.handled == 12, "11 and 12 answered; 13 not sent yet")
        let fourth = try #require(Self.sent(plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0)))
        #expect(fourth.seqs == [13])
        plan.delivered(fourth)
        #expect(plan.handled == 14)
    }

    @Test func aFailedChangeGoesFirstAgainAndItsOrdersLaterChangesStayBehindIt() throws {
        var plan = DeliveryPlan(handled: 0, answered: [], held: [:])
        plan.read([Self.change(1, "a"), Self.change(2, "b"), Self.change(3, "a")], wanted: { _ in true })
        let a1 = try #require(Self.sent(plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0)))
        let b2 = try #require(Self.sent(plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0)))
        plan.failed(a1, holding: false)
        plan.delivered(b2)
        #expect(plan.handled == 0 && plan.answered == [2])
        let again = try #require(Self.sent(plan.next(batchSize: 1, batchWait: 0, atHead: true, now: 0)))
        #expect(again.seqs == [1], "the failed change first, never a's later one")
        plan.delivered(again)
        #expect(plan.handled == 2)
    }

    @Test func batchesAreInLogOrderWaitForMoreWhenShortAndAFailedOneIsHeldAsItWas() throws {
        var plan = DeliveryPlan(handled: 0, answered: [], held: [:])
        plan.read((1...5).map { Self.change($0, "o\($0 % 2)", at: 100) }, wanted: { $0.seq != 4 })
        #expect(plan.handled == 0 && plan.pendingCount == 4, "a change the filters skip counts as answered")
        if case .waitUntil(let time) = plan.next(batchSize: 10, batchWait: 0.5, atHead: true, now: 100.2) {
            #expect(time == 100.5)
        } else {
            Issue.record("a short batch at the head went before its wait")
        }
        let batch = try #require(Self.sent(plan.next(batchSize: 10, batchWait: 0.5, atHead: true, now: 100.6)))
        #expect(batch.seqs == [1, 2, 3, 5], "one order's changes may share a batch, in order")
        plan.failed(batch, holding: true)
        plan.read([Self.change(6, "o9", at: 101)], wanted: { _ in true })
        let retried = try #require(Self.sent(plan.next(batchSize: 10, batchWait: 0, atHead: true, now: 102)))
        #expect(retried.seqs == [1, 2, 3, 5], "held as it was: the new change waits for the next batch")
        plan.delivered(retried)
        #expect(plan.handled == 5 && plan.held.isEmpty)
        let next = try #require(Self.sent(plan.next(batchSize: 10, batchWait: 0, atHead: true, now: 102)))
        #expect(next.seqs == [6])
    }

    @Test func aResumedPlanSkipsWhatWasAnsweredAboveTheCursor() {
        var plan = DeliveryPlan(handled: 5, answered: [7], held: [:])
        plan.read([6, 7, 8].map { Self.change($0, "o\($0)") }, wanted: { _ in true })
        #expect(plan.pendingCount == 2)
        if case .send(let unit) = plan.next(batchSize: 5, batchWait: 0, atHead: true, now: 0) {
            #expect(unit.seqs == [6, 8])
            plan.delivered(unit)
        }
        #expect(plan.handled == 8 && plan.answered.isEmpty)
    }

    @Test func theRateBucketSpacesRequestsEvenly() {
        var bucket = RateBucket(perSecond: 20)
        let start = ContinuousClock.now
        #expect(bucket.take(at: start) == nil, "the first goes at once")
        #expect(bucket.take(at: start) == .milliseconds(50))
        #expect(bucket.take(at: start) == .milliseconds(100))
        // Sent 30 ms late, the next is still due on the even schedule: the average holds the cap.
        #expect(bucket.take(at: start.advanced(by: .milliseconds(180))) == nil)
        #expect(bucket.take(at: start.advanced(by: .milliseconds(180))) == .milliseconds(20))
        #expect(bucket.take(at: start.advanced(by: .seconds(1))) == nil, "an idle bucket does not save up a burst")
        #expect(bucket.take(at: start.advanced(by: .seconds(1))) == .milliseconds(50))
        var none = RateBucket(perSecond: 0)
        #expect(none.take(at: start) == nil && none.take(at: start) == nil)
    }
}
