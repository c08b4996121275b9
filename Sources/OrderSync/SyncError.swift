import CheckedInput
public import CurlHTTP
import EventStream

/// Why talking to the orders API failed. Never holds a token.
public struct SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// True when the job could not run because there is no session: nothing is wrong with the
    /// job, so it waits (its attempts are not counted) until a login.
    public var waitsForSession: Bool
    /// True when the failure says the backend itself may be unavailable (DESIGN §8 "Sync"): no
    /// connection, a reset, a timeout, a TLS or DNS failure, 408, 429 or any 5xx. Whether it is the
    /// backend or this one order is decided by asking the backend about another (``SyncExecutor``).
    public var unavailable: Bool
    /// A 429's or 503's `Retry-After`, when it had one that reads.
    public var retryAfter: Duration?

    /// Creates an error.
    public init(_ message: String, waitsForSession: Bool = false, unavailable: Bool = false, retryAfter: Duration? = nil) {
        self.message = message
        self.waitsForSession = waitsForSession
        self.unavailable = unavailable
        self.retryAfter = retryAfter
    }

    /// The message.
    public var description: String { message }

    /// An answer other than the one expected: `unavailable` for 408, 429 and 5xx, with a 429's or
    /// 503's `Retry-After` read (clamped to `maximumRetryAfter`).
    public static func answered(
        _ what: String, _ response: HTTPResponse, now: Double, maximumRetryAfter: Duration = .seconds(300)
    ) -> SyncError {
        let status = response.status
        let unavailable = status == 408 || status == 429 || (500...599).contains(status)
        var retryAfter: Duration?
        if status == 429 || status == 503, let value = response.head.headers["Retry-After"] {
            retryAfter = ResponseDecision.parseRetryAfter(
                value, now: Checked.int64(clamping: now), maximum: maximumRetryAfter)
        }
        return SyncError("\(what) answered HTTP \(status)", unavailable: unavailable, retryAfter: retryAfter)
    }

    /// A transfer that produced no response: `unavailable` unless the request itself was wrong
    /// (a bad URL, a redirect loop) or the answer was too large, which no outage explains.
    public static func transfer(_ error: CurlError) -> SyncError {
        let unavailable = switch error.kind {
        case .couldNotResolveHost, .couldNotConnect, .timedOut, .tls, .connectionLost: true
        case .invalidURL, .tooManyRedirects, .redirectWithoutLocation, .responseTooLarge, .cancelled, .shutDown, .other: false
        }
        return SyncError(error.description, unavailable: unavailable)
    }
}
