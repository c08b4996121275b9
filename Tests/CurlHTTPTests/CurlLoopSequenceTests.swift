import CurlHTTP
import Logging
import Sandbox
import Testing

/// Requests performed one after another on the loop thread (outgoing webhooks, issue 40): in order,
/// stopping at the first refused answer or failure, and ending when the task is cancelled.
@Suite(.timeLimit(.minutes(3))) struct CurlLoopSequenceTests {
    private let logger = Logger(label: "test.curl")

    @Test func aSequenceRunsInOrderAndStopsAtTheFirstAnswerRefused() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let requests = ["/sandbox/bytes/3", "/sandbox/bytes/5", "/no-such-path", "/sandbox/bytes/7"]
                    .map { HTTPRequest(url: base + $0) }
                let results = await loop.performSequence(requests) { $0.status == 200 }
                let answers = results.compactMap { try? $0.get() }
                #expect(answers.map(\.status) == [200, 200, 404], "the fourth is not sent after a refused answer")
                #expect(answers.prefix(2).map(\.body.count) == [3, 5], "each answer is its own request's")
                #expect(await loop.performSequence([]) { _ in true }.isEmpty)
                let all = await loop.performSequence(requests.prefix(2).map { $0 }) { _ in true }
                #expect(all.count == 2)
            }
        }
    }

    @Test func aFailedTransferEndsTheSequence() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                // Port 1 on loopback: nothing listens there.
                let requests = [HTTPRequest(url: base + "/healthz"), HTTPRequest(url: "http://127.0.0.1:1/", connectTimeout: .seconds(2)),
                                HTTPRequest(url: base + "/healthz")]
                let results = await loop.performSequence(requests) { _ in true }
                #expect(results.count == 2)
                if case .failure(let error) = results.last { #expect(error.kind == .couldNotConnect) } else {
                    Issue.record("the refused connection did not end the sequence: \(results)")
                }
            }
        }
    }

    @Test func cancellingTheTaskCancelsTheTransferInFlightAndPerformsNoMore() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(StreamScript(steps: [.hold]))
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let requests = [HTTPRequest(url: base + "/healthz"), HTTPRequest(url: base + "/v1/events", timeout: nil),
                                HTTPRequest(url: base + "/healthz")]
                let task = Task { await loop.performSequence(requests) { _ in true } }
                // Wait until the second request is really in flight at the server, then cancel.
                var streams = sandbox.streamRequests.makeAsyncIterator()
                _ = await streams.next()
                task.cancel()
                let results = await task.value
                #expect(results.count == 2)
                if case .failure(let error) = results.last { #expect(error.kind == .cancelled) } else {
                    Issue.record("the held transfer was not cancelled: \(results)")
                }
            }
        }
    }
}
