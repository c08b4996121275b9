import CheckedInput
import Foundation
import JSONToolkit

/// What a login or refresh returns (DESIGN §3 "Token pair"), with absolute expiry times.
public struct TokenPair: Sendable, Hashable {
    /// The bearer token for API calls and the stream.
    public var accessToken: String
    /// The single-use refresh token (it rotates on every refresh).
    public var refreshToken: String
    /// When the access token expires, in Unix seconds; nil when unknown (then only a 401 tells).
    public var accessExpiresAt: Double?
    /// When the refresh token expires, in Unix seconds, if the backend said.
    public var refreshExpiresAt: Double?
    /// The user the tokens belong to.
    public var userID: String?
    /// The user's role.
    public var role: String?
    /// The stores the user may see.
    public var storeIDs: [String]

    /// Creates a pair.
    public init(
        accessToken: String, refreshToken: String, accessExpiresAt: Double?, refreshExpiresAt: Double?,
        userID: String?, role: String?, storeIDs: [String]
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessExpiresAt = accessExpiresAt
        self.refreshExpiresAt = refreshExpiresAt
        self.userID = userID
        self.role = role
        self.storeIDs = storeIDs
    }

    /// Decodes a token-pair body received at `now` (Unix seconds). Expiry comes from `expires_in`,
    /// else `expires_at` (RFC 3339 or Unix seconds), else the access token's JWT `exp` claim.
    public static func decode(_ body: [UInt8], receivedAt now: Double) throws(AuthError) -> TokenPair {
        guard let object = JSONObjectText(body)?.fields else {
            throw AuthError(.invalidResponse, "the token response is not a JSON object")
        }
        guard let access = object["access_token"]?.string, !access.isEmpty else {
            throw AuthError(.invalidResponse, "the token response has no access_token")
        }
        guard let refresh = object["refresh_token"]?.string, !refresh.isEmpty else {
            throw AuthError(.invalidResponse, "the token response has no refresh_token")
        }
        // Every number from the backend is checked before it is used (DESIGN §10): an id or an
        // expiry out of range is a clear decoding error, never a trap.
        var accessExpiresAt: Double?
        if let seconds = try lifetime(object["expires_in"], field: "expires_in") {
            accessExpiresAt = now + seconds
        } else if let value = object["expires_at"] {
            accessExpiresAt = try instant(value, field: "expires_at")
        } else {
            accessExpiresAt = try jwtExpiry(access)
        }
        var refreshExpiresAt: Double?
        if let seconds = try lifetime(object["refresh_expires_in"], field: "refresh_expires_in") {
            refreshExpiresAt = now + seconds
        } else if let value = object["refresh_expires_at"] {
            refreshExpiresAt = try instant(value, field: "refresh_expires_at")
        }
        var stores: [String] = []
        if let list = object["store_ids"], list != .null {
            guard case .array(let list) = list else {
                throw AuthError(.invalidResponse, "the token response's store_ids is not a list")
            }
            for element in list {
                if let store = try identifier(element, field: "store_ids") { stores.append(store) }
            }
        }
        return TokenPair(
            accessToken: access, refreshToken: refresh, accessExpiresAt: accessExpiresAt,
            refreshExpiresAt: refreshExpiresAt, userID: try identifier(object["user_id"], field: "user_id"),
            role: object["role"]?.string, storeIDs: stores)
    }

    /// The longest token lifetime accepted: ten years, in seconds.
    static let longestLifetime: Double = 315_576_000

    /// A JSON number (not a string, not a Boolean), as a Double; nil when absent or another type.
    static func number(_ value: JSONValue?) -> Double? {
        if case .number(let number)? = value { number } else { nil }
    }

    /// A lifetime in seconds (`expires_in`): a number from 0 to ten years, else a decoding error.
    static func lifetime(_ value: JSONValue?, field: String) throws(AuthError) -> Double? {
        guard let seconds = number(value) else { return nil }
        guard let valid = Checked.finite(seconds, in: 0...longestLifetime) else {
            throw AuthError(.invalidResponse, "the token response's \(field) is out of range (0 to \(Int64(longestLifetime)) seconds)")
        }
        return valid
    }

    /// An absolute time (`expires_at`): Unix seconds or RFC 3339, between 1970 and 9999, else a
    /// decoding error.
    static func instant(_ value: JSONValue, field: String) throws(AuthError) -> Double? {
        if value == .null { return nil }
        let range = Double(Checked.unixTimeRange.lowerBound)...Double(Checked.unixTimeRange.upperBound)
        let seconds: Double? = if let text = value.string { parseRFC3339(text) } else { number(value) }
        guard let seconds, let valid = Checked.finite(seconds, in: range) else {
            throw AuthError(.invalidResponse, "the token response's \(field) is not a time between 1970 and 9999")
        }
        return valid
    }

    /// An id that may be an integer or a string; compared as a string. Absent or null is nil; an
    /// integer beyond ±2^53, a fraction or another type is a decoding error.
    static func identifier(_ value: JSONValue?, field: String) throws(AuthError) -> String? {
        guard let value, value != .null else { return nil }
        if let string = value.string { return string }
        if case .number = value, let integer = value.identifier { return integer }
        throw AuthError(.invalidResponse, "the token response's \(field) is not a string or an integer within ±2^53")
    }

    /// Unix seconds of an RFC 3339 timestamp, with or without fractional seconds.
    static func parseRFC3339(_ text: String) -> Double? {
        Checked.rfc3339(text)
    }

    /// The `exp` claim of a JWT's payload, if the token is a JWT.
    static func jwtExpiry(_ token: String) throws(AuthError) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let claims = JSONObjectText(Array(data))?.fields else { return nil }
        guard let exp = claims["exp"] else { return nil }
        return try instant(exp, field: "access token's exp claim")
    }
}

/// Why an auth operation failed. The message never holds a token or a password.
public struct AuthError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: Sendable, Hashable {
        /// The backend rejected the credentials or the refresh token (401/403): the session is over.
        case rejected
        /// Network, timeout, 429 or 5xx: try again later; the session stands.
        case transient
        /// The backend answered something that is not a token pair.
        case invalidResponse
        /// There is no session and no password to start one.
        case unauthenticated
        /// Stored credentials exist but cannot be read now (permissions, I/O).
        case locked
    }

    /// The kind of failure.
    public var kind: Kind
    /// A one-line reason a person can act on.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
