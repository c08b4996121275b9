import HTTPTypes
import Hummingbird
import HummingbirdCore
import StoreModel
import LocalHTTP

/// How consumers of the orders API authenticate (`api.auth`, DESIGN §11, §14).
public enum APIAuthentication: Sendable {
    /// Anyone who can reach the listener (allowed only on loopback): every store, read.
    case none
    /// `Authorization: Bearer <token>` or `?access_token=<token>`, the token of one of the consumers.
    case bearer(APIConsumers)

    /// Consumers with these tokens, each of every store.
    public static func bearer(tokens: [String]) -> APIAuthentication {
        .bearer(APIConsumers(tokens: tokens))
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

    /// The consumer a request with these headers and this URI is, or why it is refused (401).
    func consumer(headers: HTTPFields, uri: URI) throws(APIDenial) -> APIConsumer {
        guard case .bearer(let consumers) = self else { return .anyone }
        let presented: Substring
        if let header = headers[.authorization] {
            let prefix = "bearer "
            guard header.count > prefix.count, header.prefix(prefix.count).lowercased() == prefix else {
                throw .unauthorized("the Authorization header is not a bearer token")
            }
            presented = header.dropFirst(prefix.count)
        } else if let query = uri.queryParameters["access_token"] {
            presented = query
        } else {
            throw .unauthorized("missing Authorization: Bearer header or access_token parameter")
        }
        guard let consumer = consumers.consumer(presenting: presented) else { throw .unauthorized("wrong bearer token") }
        return consumer
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
