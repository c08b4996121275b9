import AsyncSignals
import CurlHTTP
import Logging
import Sandbox
import TestHarnesses
import Testing

/// The curl multi loop against the real Sandbox on 127.0.0.1.
@Suite(.timeLimit(.minutes(3))) struct CurlLoopTests {
    private let logger = Logger(label: "test.curl")

    @Test func performsAGetAndCollectsTheBody() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let response = try await loop.perform(HTTPRequest(url: base + "/sandbox/bytes/100000"))
                #expect(response.status == 200)
                #expect(response.body.count == 100_000)
                #expect(response.body.allSatisfy { $0 == 0x61 })
            }
        }
    }

    @Test func postsABodyWithNulBytesAndAnyMethod() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let body: [UInt8] = [0x7B, 0x00, 0x7D] + Array(repeating: 0x41, count: 70_000)
                let request = HTTPRequest(
                    url: base + "/sandbox/echo", method: "POST",
                    headers: ["Content-Type": "application/octet-stream"], body: body)
                let response = try await loop.perform(request)
                #expect(response.status == 200)
                #expect(response.body == body)
                #expect(response.head.headers["x-echo-method"] == "POST")
            }
        }
    }

    /// A CR or LF in a header's name or value cannot start a header line of its own, nor a colon in
    /// a name split it; clean headers are sent as they are.
    @Test func requestHeadersCannotInjectLines() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let response = try await loop.perform(HTTPRequest(
                    url: base + "/sandbox/echo", method: "POST",
                    headers: ["X-Value": "one\r\nX-Injected: 1", "X-Na:me\r\nX-Also": "two", "X-Clean": "three: 3"], body: []))
                #expect(response.status == 200)
                let names = response.head.headers["x-echo-header-names"]?.lowercased().split(separator: ",").map(String.init) ?? []
                #expect(names.contains("x-value") && names.contains("x-namex-also") && names.contains("x-clean"), "\(names)")
                #expect(!names.contains("x-injected"), "\(names)")
                #expect(response.head.headers["x-echo-value"] == "oneX-Injected: 1")
            }
        }
    }

    @Test func followsRedirectsUpToTheLimit() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let followed = try await loop.perform(HTTPRequest(url: base + "/sandbox/redirect/5"))
                #expect(followed.status == 200)
                #expect(followed.head.url.hasSuffix("/healthz"))
                let error = await #expect(throws: CurlError.self) {
                    try await loop.perform(HTTPRequest(url: base + "/sandbox/redirect/6"))
                }
                #expect(error?.kind == .tooManyRedirects)
            }
        }
    }

    @Test func redirectWithoutLocationIsAnError() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let error = await #expect(throws: CurlError.self) {
                    try await loop.perform(HTTPRequest(url: base + "/sandbox/redirect-without-location"))
                }
                #expect(error?.kind == .redirectWithoutLocation)
            }
        }
    }

    @Test func refusedConnectionAndBadURLAreTypedErrors() async throws {
        try await CurlLoop.withLoop(logger: logger) { loop in
            // Port 1 on loopback: nothing listens there.
            let refused = await #expect(throws: CurlError.self) {
                try await loop.perform(HTTPRequest(url: "http://127.0.0.1:1/", connectTimeout: .seconds(2)))
            }
            #expect(refused?.kind == .couldNotConnect)
            #expect(refused?.message.isEmpty == false)
            let malformed = await #expect(throws: CurlError.self) {
                try await loop.perform(HTTPRequest(url: "ftp://127.0.0.1/file"))
            }
            #expect(malformed?.kind == .invalidURL)
        }
    }

    @Test func responseOverTheLimitFails() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let error = await #expect(throws: CurlError.self) {
                    try await loop.perform(HTTPRequest(url: base + "/sandbox/bytes/5000", maximumResponseBytes: 1000))
                }
                #expect(error?.kind == .responseTooLarge)
            }
        }
    }

    @Test func streamsHeadThenChunksThenCleanEnd() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(StreamScript(steps: [.send(Array("one".utf8)), .waitFor("second"), .send(Array("two".utf8))]))
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let response = try await loop.stream(HTTPRequest(url: base + "/v1/events", timeout: nil))
                #expect(response.head.status == 200)
                #expect(response.head.contentType == "text/event-stream")
                var received: [UInt8] = []
                var iterator = response.body.makeAsyncIterator()
                // The head arrived before any of the body was allowed to be sent.
                if let first = try await iterator.next() { received += first }
                #expect(received == Array("one".utf8))
                sandbox.release("second")
                while let chunk = try await iterator.next() { received += chunk }
                #expect(received == Array("onetwo".utf8))
            }
        }
    }

    @Test func midStreamDropIsAConnectionLoss() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(StreamScript(steps: [.send(Array("data: partial".utf8)), .drop]))
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let response = try await loop.stream(HTTPRequest(url: base + "/v1/events", timeout: nil))
                let error = await #expect(throws: CurlError.self) {
                    for try await _ in response.body {}
                }
                #expect(error?.kind == .connectionLost)
            }
        }
    }

    @Test func cancellingAStreamEndsIt() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(StreamScript(steps: [.send(Array(": hi\n".utf8)), .hold]))
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let response = try await loop.stream(HTTPRequest(url: base + "/v1/events", timeout: nil))
                var iterator = response.body.makeAsyncIterator()
                _ = try await iterator.next()
                response.body.cancel()
                let error = await #expect(throws: CurlError.self) {
                    while try await iterator.next() != nil {}
                }
                #expect(error?.kind == .cancelled)
            }
        }
    }

    @Test func cancellingTheTaskCancelsAPerform() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(StreamScript(steps: [.hold]))
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let task = Task {
                    try await loop.perform(HTTPRequest(url: base + "/v1/events", timeout: nil))
                }
                // Wait until the request is really in flight at the server, then cancel.
                var requests = sandbox.streamRequests.makeAsyncIterator()
                _ = await requests.next()
                task.cancel()
                let result = await task.result
                #expect(throws: CurlError.self) { try result.get() }
            }
        }
    }

    @Test func slowConsumerPausesTheTransferAndMemoryStaysBounded() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let limit = 64 << 10
                let probe = DelegateProbe(limit: limit)
                let transfer = try loop.startStream(
                    HTTPRequest(url: base + "/sandbox/bytes/\(8 << 20)", timeout: nil), delegate: probe)
                probe.attach(transfer)
                let total = try await probe.consumeSlowly()
                #expect(total == 8 << 20)
                // Never more than the limit plus one libcurl chunk was held.
                #expect(probe.peakBuffered <= limit + (512 << 10))
                #expect(probe.pauses > 0, "a consumer that drains only on demand must pause the transfer")
            }
        }
    }

    @Test func completedStreamReleasesItsDelegate() async throws {
        // A delegate that keeps its transfer (to resume it) forms a cycle through the transfer; the
        // loop must break it at completion, or every reconnect leaks a connection's worth of objects.
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                weak var released: DelegateProbe?
                do {
                    let probe = DelegateProbe(limit: 1 << 20)
                    released = probe
                    let transfer = try loop.startStream(HTTPRequest(url: base + "/sandbox/bytes/10"), delegate: probe)
                    probe.attach(transfer)
                    #expect(try await probe.consumeSlowly() == 10)
                }
                // The loop handles commands in order: once this request is done, so is the finish above.
                _ = try await loop.perform(HTTPRequest(url: base + "/healthz"))
                #expect(released == nil, "the delegate outlived its transfer")
            }
        }
    }

    @Test func shutdownEndsRunningTransfersAndRefusesNewOnes() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(StreamScript(steps: [.send(Array(": hi\n".utf8)), .hold]))
            let base = await sandbox.baseURL
            let loop = try CurlLoop(logger: logger)
            let response = try await loop.stream(HTTPRequest(url: base + "/v1/events", timeout: nil))
            await loop.shutdown()
            let ended = await #expect(throws: CurlError.self) {
                for try await _ in response.body {}
            }
            #expect(ended?.kind == .shutDown)
            let refused = await #expect(throws: CurlError.self) {
                try await loop.perform(HTTPRequest(url: base + "/healthz"))
            }
            #expect(refused?.kind == .shutDown)
        }
    }
}

/// A delegate that buffers up to a limit and pauses beyond it, recording how much it ever held.
private final class DelegateProbe: StreamingResponseDelegate {
    private enum Signal { case paused, finished }

    private struct State {
        var buffered = 0
        var peak = 0
        var pauses = 0
    }

    private let state = Locked(State())
    private let channel: BackpressureChannel<Int>
    private let resumeTarget = TransferSlot()
    private let signals: AsyncStream<Signal>
    private let signal: AsyncStream<Signal>.Continuation

    init(limit: Int) {
        let target = resumeTarget
        channel = BackpressureChannel(highWater: limit) { target.resume() }
        (signals, signal) = AsyncStream.makeStream(of: Signal.self)
    }

    func attach(_ transfer: StreamingTransfer) {
        resumeTarget.transfer.withLock { $0 = transfer }
    }

    var peakBuffered: Int { state.withLock { $0.peak } }
    var pauses: Int { state.withLock { $0.pauses } }

    func transferDidReceiveHead(_ head: HTTPResponseHead) {}

    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if channel.shouldPause() {
            state.withLock { $0.pauses += 1 }
            signal.yield(.paused)
            return false
        }
        state.withLock { state in
            state.buffered += bytes.count
            state.peak = max(state.peak, state.buffered)
        }
        channel.push(contentsOf: [bytes.count], cost: bytes.count)
        return true
    }

    func transferDidComplete(_ result: Result<HTTPResponseHead, CurlError>) {
        switch result {
        case .success: channel.finish()
        case .failure(let error): channel.finish(throwing: error)
        }
        signal.yield(.finished)
    }

    /// Drains only after the producer has paused (or finished): the slowest consumer there is.
    func consumeSlowly() async throws -> Int {
        var total = 0
        for await signal in signals {
            repeat {
                let batch = try await channel.nextBatch()
                if batch.isEmpty { return total }
                let size = batch.reduce(0, +)
                total += size
                state.withLock { $0.buffered -= size }
            } while signal == .finished
        }
        return total
    }
}
