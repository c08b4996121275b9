import AsyncSignals
public import CurlHTTP
import Foundation
import ServerSentEvents

/// One thing a change-feed subscriber received.
public enum FeedMessage: Sendable, Hashable {
    /// An event: its type, id (the last id field seen) and data.
    case event(type: String, id: String, data: String)
    /// A comment line (the heartbeat).
    case comment(String)
    /// The `retry:` field.
    case retry(Int)
}

/// A change-feed subscriber over a real libcurl transfer, parsed by the project's own SSE parser. A
/// pump task reads the body as it arrives; ``next(within:)`` takes what was parsed, failing after
/// its limit so a hung feed fails the test instead of hanging it. (A subscriber that reads nothing
/// at all is a ``RawConnection`` that never reads.)
public final class FeedReader: Sendable {
    /// The response status.
    public let status: Int
    /// The response headers.
    public let headers: HTTPHeaders
    private let state = Locked<(items: [FeedMessage], ended: Bool, error: String?)>(([], false, nil))
    private let arrived = WakeSignal()
    private let body: ByteStream
    private let pump: Task<Void, Never>

    /// Opens `url` with `headers` (trusting `tls`' CA on `https`, where libcurl offers HTTP/2 and
    /// multiplexes feeds on one connection); returns once the response head arrived.
    public init(loop: CurlLoop, url: String, headers: HTTPHeaders = [:], tls: TLSOptions = .init()) async throws {
        let response = try await loop.stream(HTTPRequest(url: url, headers: headers, timeout: nil, tls: tls))
        status = response.head.status
        self.headers = response.head.headers
        body = response.body
        let state = self.state
        let arrived = self.arrived
        let body = response.body
        pump = Task {
            var parser = ServerSentEventParser(configuration: .init(reportsComments: true))
            do {
                for try await chunk in body {
                    let items = parser.parse(chunk).compactMap { item -> FeedMessage? in
                        switch item {
                        case .event(let event): .event(type: event.type, id: event.lastEventID, data: event.data)
                        case .comment(let text): .comment(text)
                        case .retry(let value): .retry(value)
                        case .oversizedEventDiscarded: nil
                        }
                    }
                    state.withLock { $0.items.append(contentsOf: items) }
                    arrived.signal()
                }
                state.withLock { $0.ended = true }
            } catch {
                state.withLock { $0.ended = true; $0.error = "\(error)" }
            }
            arrived.signal()
        }
    }

    deinit {
        body.cancel()
        pump.cancel()
    }

    /// Ends the transfer.
    public func close() {
        body.cancel()
    }

    /// The next message, or nil when the body ended. Fails after `within` (a hung feed fails the test).
    public func next(within limit: Duration = .seconds(20)) async throws -> FeedMessage? {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        while true {
            let taken = state.withLock { state -> (FeedMessage?, Bool) in
                if !state.items.isEmpty { return (state.items.removeFirst(), false) }
                return (nil, state.ended)
            }
            if let message = taken.0 { return message }
            if taken.1 { return nil }
            guard clock.now < deadline else { throw FeedTimeout(limit: limit) }
            await arrived.wait(until: deadline, clock: clock)
        }
    }

    /// True once the body ended (the server closed the stream).
    public var hasEnded: Bool { state.withLock { $0.ended && $0.items.isEmpty } }

    /// The next event, skipping comments and `retry:`.
    public func nextEvent(within limit: Duration = .seconds(20)) async throws -> (type: String, id: String, data: String)? {
        while let message = try await next(within: limit) {
            if case .event(let type, let id, let data) = message { return (type, id, data) }
        }
        return nil
    }

    /// Events until (and including) the first of `type`; throws if the body ends first.
    public func events(
        through type: String, within limit: Duration = .seconds(20)
    ) async throws -> [(type: String, id: String, data: String)] {
        var events: [(type: String, id: String, data: String)] = []
        while let event = try await nextEvent(within: limit) {
            events.append(event)
            if event.type == type { return events }
        }
        throw FeedEnded(waitingFor: type, received: events.map(\.type))
    }
}

/// A feed did not deliver in time.
public struct FeedTimeout: Error, CustomStringConvertible {
    public let limit: Duration
    public var description: String { "the feed delivered nothing within \(limit)" }
}

/// A feed ended before an expected event.
public struct FeedEnded: Error, CustomStringConvertible {
    public let waitingFor: String
    public let received: [String]
    public var description: String { "the feed ended before \(waitingFor); received \(received)" }
}

/// A view of the orders rebuilt from a feed's events, as a consumer keeps it.
public struct FeedView: Sendable {
    /// Orders by id, as JSON objects' text.
    public private(set) var orders: [String: String] = [:]
    /// The last id received.
    public private(set) var lastID: String = ""
    /// Every change seq received, in order.
    public private(set) var seqs: [Int64] = []

    public init() {}

    /// Applies one event; returns false for an event a view cannot apply.
    @discardableResult
    public mutating func apply(type: String, id: String, data: String) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else { return false }
        switch type {
        case "reset":
            orders = [:]
        case "snapshot", "order.upserted":
            guard let order = object["order"] as? [String: Any], let orderID = order["id"] else { return false }
            orders["\(orderID)"] = Self.canonical(order)
        case "order.removed", "order.deleted":
            guard let orderID = object["order_id"] as? String else { return false }
            orders[orderID] = nil
        case "ready", "overflow":
            break
        default:
            return false
        }
        if !id.isEmpty, type != "snapshot", type != "reset", type != "overflow" {
            lastID = id
            if type != "ready", let seq = Int64(id) { seqs.append(seq) }
        }
        return true
    }

    /// An order object's text with sorted keys, to compare what two readers hold.
    public static func canonical(_ object: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}
