import CheckedInput
import Foundation

/// How an order's freshness is judged (DESIGN §3): `version` when both sides have one, else
/// `updated_at`, else the last write wins.
public struct OrderFreshness: Sendable, Hashable {
    /// The integer version, when the backend sends one.
    public var version: Int64?
    /// The `updated_at` timestamp as sent (RFC 3339), when present.
    public var updatedAt: String?

    /// Creates a freshness.
    public init(version: Int64?, updatedAt: String?) {
        self.version = version
        self.updatedAt = updatedAt
    }

    /// True when `self` should replace `current`. Equal freshness is not newer, so applying the same
    /// change twice leaves the same state.
    public func isNewer(than current: OrderFreshness) -> Bool {
        if let version, let currentVersion = current.version { return version > currentVersion }
        if let updatedAt, let currentUpdatedAt = current.updatedAt {
            if let mine = Self.instant(updatedAt), let theirs = Self.instant(currentUpdatedAt) { return mine > theirs }
            return updatedAt > currentUpdatedAt
        }
        return true
    }

    /// Unix seconds of an RFC 3339 timestamp, with or without fractional seconds.
    static func instant(_ text: String) -> Double? {
        Checked.rfc3339(text)
    }
}

/// An order as the backend sent it, plus the indexed fields read out of it.
public struct OrderRecord: Sendable, Hashable {
    /// The id as a string (integer ids compare as their decimal text).
    public var id: String
    /// The status.
    public var status: String
    /// The store, if any.
    public var storeID: String?
    /// The courier, if any.
    public var courierID: String?
    /// The version, if any.
    public var version: Int64?
    /// The `updated_at` text, if any.
    public var updatedAt: String?
    /// The whole JSON object the backend sent, every field kept.
    public var body: String
    /// When it was applied locally, Unix seconds (set by the store when it applies the record).
    public var appliedAt: Double

    /// The freshness of this record.
    public var freshness: OrderFreshness { OrderFreshness(version: version, updatedAt: updatedAt) }

    /// Creates a record.
    public init(
        id: String, status: String, storeID: String?, courierID: String?, version: Int64?, updatedAt: String?,
        body: String, appliedAt: Double
    ) {
        self.id = id
        self.status = status
        self.storeID = storeID
        self.courierID = courierID
        self.version = version
        self.updatedAt = updatedAt
        self.body = body
        self.appliedAt = appliedAt
    }
}

/// Why an order object could not be read.
public struct OrderParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
