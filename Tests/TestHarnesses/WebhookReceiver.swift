import AsyncSignals
import Foundation
import Hummingbird
import Logging
import TestKit
import WebhookSigning

/// A webhook receiver on 127.0.0.1 for the outgoing-webhook tests (issue 40): it records every request
/// and checks its Standard Webhooks signature with the endpoint's secret, and answers what the test
/// queued (200 when nothing is queued), or holds the request unanswered while `hanging`.
public final class WebhookReceiver: Sendable {
    /// One request as received.
    public struct Received: Sendable {
        public var id: String
        public var timestamp: String
        /// The `webhook-signature` header as sent.
        public var signature: String
        public var body: String
        /// True when one of its signatures matched the secret.
        public var verified: Bool
        /// The status it was answered.
        public var status: Int
        /// When it was taken down, before it was answered.
        public var at = ContinuousClock.now
        /// The W3C `traceparent` header, when one was sent.
        public var traceparent: String?
        /// Every header, by lowercased name (the last of a repeated one).
        public var headers: [String: String] = [:]
    }

    private let verifier: StandardWebhooks
    private let state = Locked<(received: [Received], answers: [Int], hanging: Bool, waiting: Int, hangAfter: Int?)>(([], [], false, 0, nil))
    private let arrived = WakeSignal()
    /// Each request is answered after a random wait in this range (ms): a receiver of varying speed.
    private let answerDelay = Locked<ClosedRange<Int>?>(nil)

    /// Answers every request after a random wait of `milliseconds` (nil: at once).
    public func delay(_ milliseconds: ClosedRange<Int>?) { answerDelay.withLock { $0 = milliseconds } }

    init(secret: String) throws {
        verifier = try StandardWebhooks(secret: secret)
    }

    /// Everything received so far.
    public var received: [Received] { state.withLock { $0.received } }

    /// The next requests are answered these statuses, in order.
    public func answer(_ statuses: Int...) { state.withLock { $0.answers += statuses } }

    /// While true, requests get no answer (a receiver that hangs).
    public func hang(_ on: Bool) {
        state.withLock {
            $0.hanging = on
            $0.hangAfter = nil
        }
    }

    /// Answers `count` more requests, then holds the next ones as ``hang(_:)`` does.
    public func hang(after count: Int) {
        state.withLock { $0.hangAfter = $0.received.count + count }
    }

    /// Requests held unanswered now (while hanging).
    public var waiting: Int { state.withLock { $0.waiting } }

    /// Waits until `condition` holds of what was received, for at most `limit`; true when it did.
    public func until(_ limit: Duration = .seconds(30), _ condition: ([Received]) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        while clock.now < deadline {
            if condition(received) { return true }
            await arrived.wait(until: deadline, clock: clock)
        }
        return condition(received)
    }

    private func take(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        let bytes = [UInt8](buffer: body)
        func header(_ name: String) -> String? { request.headers.first { $0.name.canonicalName == name }?.value }
        let verified: Bool = if case .success = verifier.verify(
            id: header("webhook-id"), timestamp: header("webhook-timestamp"), signatures: header("webhook-signature"), body: bytes,
            now: Int64(Date().timeIntervalSince1970)) { true } else { false }
        state.withLock { state in
            state.waiting += 1
            if let after = state.hangAfter, state.received.count >= after { state.hanging = true }
        }
        arrived.signal()
        while state.withLock({ $0.hanging }) { try await Task.sleep(for: .milliseconds(20)) }
        if let range = answerDelay.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(Int.random(in: range))) }
        state.withLock { $0.waiting -= 1 }
        let status = state.withLock { state -> Int in
            let status = state.answers.isEmpty ? 200 : state.answers.removeFirst()
            state.received.append(Received(
                id: header("webhook-id") ?? "", timestamp: header("webhook-timestamp") ?? "",
                signature: header("webhook-signature") ?? "", body: String(decoding: bytes, as: UTF8.self), verified: verified,
                status: status, traceparent: header("traceparent"),
                headers: Dictionary(request.headers.map { ($0.name.canonicalName.lowercased(), $0.value) }, uniquingKeysWith: { $1 })))
            return status
        }
        arrived.signal()
        return Response(status: .init(code: status))
    }

    /// Runs a receiver checking signatures with `secret` for the duration of `body`, which gets its URL.
    /// A `wanted` port (a receiver coming back where it was) may be held for a moment by another
    /// connection's local end on a busy machine: binding it is tried for up to 10 s. A receiver that
    /// cannot listen throws, naming the port, rather than leaving `body` unrun and the test waiting.
    public static func withRunning<T: Sendable>(
        secret: String, port wanted: Int = 0, _ body: (WebhookReceiver, String) async throws -> T
    ) async throws -> T {
        if wanted != 0 {
            for _ in 0..<40 where !loopbackPortIsFree(wanted) { try await Task.sleep(for: .milliseconds(250)) }
        }
        let receiver = try WebhookReceiver(secret: secret)
        let router = Router()
        router.post("/hook") { request, _ in try await receiver.take(request) }
        let port = OneShot<Int?>()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: wanted)),
            onServerRunning: { channel in _ = port.give(channel.localAddress?.port ?? 0) },
            logger: Logger(label: "webhook-receiver", factory: { _ in SwiftLogNoOpLogHandler() }))
        return try await withGracefulServing(ReportingServer(run: { try await app.run() }, ended: { _ = port.give(nil) })) {
            guard let bound = await port.value else {
                throw ReceiverFailure(description: "the webhook receiver could not listen on 127.0.0.1:\(wanted)")
            }
            return try await body(receiver, "http://127.0.0.1:\(bound)/hook")
        }
    }
}

/// The webhook receiver could not start.
public struct ReceiverFailure: Error, CustomStringConvertible {
    public let description: String
}
