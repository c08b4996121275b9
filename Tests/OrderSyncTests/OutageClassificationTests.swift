import CurlHTTP
import Foundation
import OrderSync
import StoreModel
import TestHarnesses
import TestKit
import Testing
import SQLiteStore

/// DESIGN §8 "Sync": which failures may be the backend's (and so are checked against another order
/// before they count), and how far apart an unavailable backend is probed.
@Suite(.timeLimit(.minutes(1))) struct OutageClassificationTests {
    static func response(_ status: Int, _ headers: HTTPHeaders = [:]) -> HTTPResponse {
        HTTPResponse(head: HTTPResponseHead(status: status, headers: headers, url: "http://127.0.0.1/"), body: [])
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504, 599])
    func statusesThatMayBeTheBackendsAreUnavailable(_ status: Int) {
        let error = SyncError.answered("GET order 7", Self.response(status), now: 1_000)
        #expect(error.unavailable && error.message == "GET order 7 answered HTTP \(status)")
    }

    @Test(arguments: [400, 401, 403, 409, 410, 422])
    func otherStatusesAreTheOrdersOwn(_ status: Int) {
        #expect(!SyncError.answered("GET order 7", Self.response(status), now: 1_000).unavailable)
    }

    @Test func retryAfterIsReadFromA429OrA503AndClamped() {
        let seconds = SyncError.answered("GET orders", Self.response(503, ["Retry-After": "30"]), now: 1_000)
        #expect(seconds.retryAfter == .seconds(30))
        let date = SyncError.answered("GET orders", Self.response(429, ["Retry-After": "Thu, 01 Jan 1970 00:17:20 GMT"]), now: 1_000)
        #expect(date.retryAfter == .seconds(40))
        let huge = SyncError.answered("GET orders", Self.response(503, ["Retry-After": "99999999999999999999"]), now: 1_000)
        #expect(huge.retryAfter == .seconds(300), "clamped to the longest honoured")
        #expect(SyncError.answered("GET orders", Self.response(500, ["Retry-After": "30"]), now: 1_000).retryAfter == nil)
        #expect(SyncError.answered("GET orders", Self.response(503, ["Retry-After": "soon"]), now: 1_000).retryAfter == nil)
    }

    @Test func transportFailuresAreUnavailableButABadRequestIsNot() {
        for kind in [CurlError.Kind.couldNotResolveHost, .couldNotConnect, .timedOut, .tls, .connectionLost] {
            #expect(SyncError.transfer(CurlError(kind: kind, message: "x")).unavailable, "\(kind)")
        }
        for kind in [CurlError.Kind.invalidURL, .tooManyRedirects, .redirectWithoutLocation, .responseTooLarge, .other] {
            #expect(!SyncError.transfer(CurlError(kind: kind, message: "x")).unavailable, "\(kind)")
        }
    }

    /// A backend that answers 503 with `Retry-After: 20`: the probe waits those 20 s, beyond the
    /// 5 s of `sync.outage_probe_max_s`, and no attempt is counted.
    @Test func aRetryAfterLongerThanTheProbeMaximumIsHonoured() async throws {
        struct Busy: OrderSource {
            func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? {
                throw SyncError("GET order \(id) answered HTTP 503", unavailable: true, retryAfter: .seconds(20))
            }
            func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
                throw SyncError("GET orders answered HTTP 503", unavailable: true, retryAfter: .seconds(20))
            }
        }
        let wall = WallClock()
        let temporary = try TemporaryStore(now: { wall.now })
        let executor = SyncExecutor(
            store: temporary.store, source: Busy(), configuration: .init(maximumAttempts: 1, probeMaximum: .seconds(5)),
            now: { wall.now }, random: { 1 }, logger: quietLogger)
        try await temporary.store.journal([NewJob(kind: .fetch, orderID: "7", source: "test")])
        #expect(try await executor.runReadyJobs() == .init(unavailable: 1))
        #expect(executor.availability.snapshot.nextProbeAt == wall.now + 20)
        wall.advance(by: 19)
        #expect(try await executor.runReadyJobs() == .init(), "not before the Retry-After")
        wall.advance(by: 1)
        #expect(try await executor.runReadyJobs() == .init(unavailable: 1))
        #expect(try temporary.store.deadLetters().isEmpty && temporary.store.headJobs(limit: 1).first?.attempts == 0)
    }
}
