import HTTPTypes
import Hummingbird
import HummingbirdCore
import LocalHTTP
import StoreModel

/// The one authorization rule of the orders API (DESIGN §14 "Scopes on the orders API"). Every
/// route that reads orders gets them only through an ``APIAccess``, made from the request by
/// ``APIGate``: who asks (``APIAuthentication``), and the request's filter intersected with that
/// consumer's stores.
/// A route never reads the store with a filter of its own, so no route can show an order outside the
/// scope: lists and snapshots read ``filter``, a single order passes ``mayRead(_:)`` or is the same
/// `404` as a missing one, and the change feed's subscriber is registered with ``filter``, which the
/// hub applies to every live change, backlog and reset (an order whose store leaves the scope is
/// `order.removed`, as for any filter).
struct APIAccess: Sendable {
    /// Who asks, and through which credentials.
    let principal: APIPrincipal
    /// Who asks.
    var consumer: APIConsumer { principal.consumer }
    /// What they may read of what they asked for.
    let filter: OrderFilter
    /// The request's `since`, where the route takes one.
    let since: Substring?

    /// What a route reads of the query besides `access_token`.
    enum Query {
        /// Nothing: one order's route has no filters, and ignores the rest of its query.
        case ignored
        /// The filters.
        case filters
        /// The filters and `since` (the feed).
        case filtersAndSince
    }

    /// The access of `principal` to a request for `uri`, or why it has none: `400` for a query that
    /// does not read, `403` for a `store_id` outside the consumer's stores (naming the stores it may read).
    init(principal: APIPrincipal, uri: URI, query use: Query) throws(APIDenial) {
        self.principal = principal
        var query = APIQuery()
        if use != .ignored {
            do throws(APIRefusal) {
                query = try APIQuery(uri, allowsSince: use == .filtersAndSince)
            } catch {
                throw .badRequest(error.message)
            }
        }
        filter = try Self.scoped(query.filter, to: principal.consumer)
        since = query.since
    }

    /// `requested` within `consumer`'s stores: no `store_id` asked means all of them; one outside is refused.
    static func scoped(_ requested: OrderFilter, to consumer: APIConsumer) throws(APIDenial) -> OrderFilter {
        guard let stores = consumer.stores else { return requested }
        var scoped = requested
        if requested.storeIDs.isEmpty {
            scoped.storeIDs = stores
            return scoped
        }
        let outside = requested.storeIDs.subtracting(stores)
        guard outside.isEmpty else {
            let named = outside.sorted().prefix(5).map { String($0.prefix(64)) }.joined(separator: ", ")
            throw .forbidden("store_id \(named) is outside what this consumer may read: \(consumer.storesText)")
        }
        return scoped
    }

    /// Whether the consumer may see `order` (else it is answered as if it did not exist).
    func mayRead(_ order: OrderRecord) -> Bool {
        guard let stores = consumer.stores else { return true }
        return order.storeID.map(stores.contains) == true
    }
}

/// Why a request gets no access: its answer.
enum APIDenial: Error, Sendable {
    /// No consumer's token: 401.
    case unauthorized(String)
    /// A store outside the consumer's: 403.
    case forbidden(String)
    /// A query that does not read: 400.
    case badRequest(String)

    /// The JSON error answer.
    var response: Response {
        switch self {
        case .unauthorized(let message): JSONError(.unauthorized, message).response
        case .forbidden(let message): JSONError(.forbidden, message).response
        case .badRequest(let message): JSONError(.badRequest, message).response
        }
    }
}
