import HTTPTypes
import Hummingbird
import HummingbirdCore
import StoreModel
import LocalHTTP
import Foundation

/// How consumers of the orders API authenticate (`api.auth`, DESIGN §11, §14).
public enum APIAuthentication: Sendable {
    /// Anyone who can reach the listener (allowed only on loopback): every store, read.
    case none
    /// `Authorization: Bearer <token>`, `?access_token=<token>` (unless `api.query_tokens` is false)
    /// or the board's session cookie, for one of the consumers of these credentials.
    case bearer(APICredentials)

    /// Consumers with these tokens, each of every store.
    public static func bearer(tokens: [String]) -> APIAuthentication {
        .bearer(consumers: APIConsumers(tokens: tokens))
    }

    /// These consumers, with the default session settings.
    public static func bearer(consumers: APIConsumers) -> APIAuthentication {
        .bearer(APICredentials(consumers: consumers))
    }

    /// The credentials of `bearer`; nil for `none`.
    public var credentials: APICredentials? {
        guard case .bearer(let credentials) = self else { return nil }
        return credentials
    }

    /// `api.auth: none` is refused unless the listener is on loopback.
    /// A client certificate required by the listener (`api.tls.client_ca_file`, mTLS) counts as
    /// authentication: then `none` may listen beyond loopback.
    public static func refusal(host: String, authentication: APIAuthentication, mutualTLS: Bool = false) -> String? {
        guard case .none = authentication, !mutualTLS else { return nil }
        return Listener.isLoopback(host) ? nil : "api.auth is none but api.listen is not a loopback address (\(host)): "
            + "set api.auth to bearer with api.tokens_file, require client certificates with api.tls.client_ca_file, "
            + "or listen on 127.0.0.1"
    }

    /// The name of the board's session cookie.
    static let sessionCookie = "orderlive_session"

    /// What a request presents, read without waiting: who it is (a token of `api.tokens_file`, a
    /// session, anyone), or a JWT still to verify.
    enum Presented {
        case principal(APIPrincipal)
        case jwt(Substring, JWTVerifier)
    }

    /// What a request with these headers and this URI presents, or why it is refused (401). The
    /// `Authorization` header comes first, then `?access_token=`, then the session cookie.
    func presented(headers: HTTPFields, uri: URI) throws(APIDenial) -> Presented {
        guard case .bearer(let credentials) = self else { return .principal(.anyone) }
        func token(_ token: Substring) throws(APIDenial) -> Presented {
            if let principal = credentials.principal(presenting: token) { return .principal(principal) }
            if let verifier = credentials.jwt, JWTVerifier.looksLikeJWT(token) { return .jwt(token, verifier) }
            throw .unauthorized("wrong bearer token")
        }
        if let header = headers[.authorization] {
            let prefix = "bearer "
            guard header.count > prefix.count, header.prefix(prefix.count).lowercased() == prefix else {
                throw .unauthorized("the Authorization header is not a bearer token")
            }
            return try token(header.dropFirst(prefix.count))
        }
        if let query = uri.queryParameters["access_token"] {
            guard credentials.settings.queryTokens else {
                throw .unauthorized("tokens in URLs are turned off (api.query_tokens: false): send Authorization: Bearer, "
                    + "or start a session with POST /v1/session")
            }
            return try token(query)
        }
        if let session = Self.cookie(Self.sessionCookie, in: headers) {
            guard let principal = credentials.principal(session: session) else {
                throw .unauthorized("the session has ended (signed out, expired, or its token was revoked): sign in again")
            }
            return .principal(principal)
        }
        throw .unauthorized("missing Authorization: Bearer header, access_token parameter or session cookie")
    }

    /// Who a request with these headers and this URI is (a JWT verified), or why it is refused (401).
    func principal(headers: HTTPFields, uri: URI) async throws(APIDenial) -> APIPrincipal {
        switch try presented(headers: headers, uri: uri) {
        case .principal(let principal): return principal
        case .jwt(let token, let verifier): return try await verifier.principal(token)
        }
    }

    /// The value of the cookie `name` in the request's `Cookie` headers (RFC 6265 §5.4), or nil.
    static func cookie(_ name: String, in headers: HTTPFields) -> Substring? {
        for header in headers[values: .cookie] {
            if let value = cookie(name, inHeader: header) { return value }
        }
        return nil
    }

    /// The value of the cookie `name` in one `Cookie` header's value, or nil (also for an empty value).
    /// Pure, for the fuzzer too.
    package static func cookie(_ name: String, inHeader header: String) -> Substring? {
        for pair in header.split(separator: ";") {
            let trimmed = pair.drop(while: { $0 == " " || $0 == "\t" })
            guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
            let value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            return value.isEmpty ? nil : Substring(value)
        }
        return nil
    }
}

/// A request's query, checked: the filters (`status`, `store_id`, `courier_id`, each repeatable),
/// `access_token`, and where the route takes it `since`. Anything else is refused with a message
/// that names it, so a typo never silently widens a view.
struct APIQuery {
    var filter = OrderFilter()
    var since: Substring?

    /// No filter, no `since`.
    init() {}

    init(_ uri: URI, allowsSince: Bool) throws(APIRefusal) {
        for (key, value) in uri.queryParameters {
            switch key {
            case "status", "store_id", "courier_id":
                guard !value.isEmpty else { throw APIRefusal("the '\(key)' filter needs a value, as in ?\(key)=assigned") }
                if key == "status" { filter.statuses.insert(String(value)) }
                if key == "store_id" { filter.storeIDs.insert(String(value)) }
                if key == "courier_id" { filter.courierIDs.insert(String(value)) }
            case "access_token":
                continue
            case "since" where allowsSince:
                since = value
            default:
                let known = allowsSince ? "status, store_id, courier_id, since and access_token"
                    : "status, store_id, courier_id and access_token"
                throw APIRefusal("unknown query parameter '\(String(key).prefix(64))': this route takes \(known)")
            }
        }
    }
}

/// A request refused with 400.
struct APIRefusal: Error {
    var message: String

    init(_ message: String) {
        self.message = message
    }
}
