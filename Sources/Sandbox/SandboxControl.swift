import CheckedInput
import Foundation
import Hummingbird

/// The control API under `/sandbox/`, for people pointing `orderlive run` at the Sandbox and breaking
/// things on purpose (tests use the Swift API). Every route answers JSON; a bad parameter is a 400
/// that names it.
///
/// | Route | Effect |
/// |---|---|
/// | `GET /sandbox/orders` | the backend's orders: `{"<id>":{"status":…,"version":…}}` |
/// | `POST /sandbox/orders?status=S&announce=A` | creates an order; answers `{"id":N}` |
/// | `POST /sandbox/orders/{id}?status=S&announce=A` | changes its status (and version) |
/// | `DELETE /sandbox/orders/{id}?announce=full\|silent` | deletes it |
/// | `POST /sandbox/faults/drop-stream?after_bytes=N&times=T` | the next T streams are cut after N bytes |
/// | `POST /sandbox/faults/drop-open-streams` | every open stream is cut now |
/// | `POST /sandbox/faults/fetch?status=503&times=T` | the next T single-order fetches fail |
/// | `POST /sandbox/faults/slow-fetch?ms=N&times=T` | the next T single-order fetches answer after N ms |
/// | `POST /sandbox/faults/break-order?id=N&status=503` | every fetch of order N fails, until healed |
/// | `POST /sandbox/faults/heal-order?id=N` | order N is served again |
/// | `POST /sandbox/faults/outage?status=503` | every orders request (fetches and pages) fails, until healed |
/// | `POST /sandbox/faults/heal-outage` | the orders endpoint answers again |
/// | `POST /sandbox/faults/refresh?status=503&times=T` | the next T refreshes fail |
/// | `POST /sandbox/faults/login?status=503&times=T` | the next T logins fail |
/// | `POST /sandbox/faults/expire-access-tokens` | every access token issued so far stops working |
/// | `POST /sandbox/faults/revoke-refresh-tokens` | every refresh token issued so far is revoked |
///
/// `announce` is `full` (the event carries the order, the default), `id` (only id and version: the
/// client must fetch) or `silent` (no event: only a push or a full sync will reveal the change).
extension Sandbox {
    func addControlRoutes(to router: Router<BasicRequestContext>) {
        let orders = self.orders
        router.get("/sandbox/orders") { _, _ in
            let entries = orders.snapshot.sorted { (Int($0.key) ?? 0) < (Int($1.key) ?? 0) }.map { id, order in
                #""\#(id)":{"status":"\#(order.status)","version":\#(order.version)}"#
            }
            return Self.json(200, "{" + entries.joined(separator: ",") + "}")
        }
        router.post("/sandbox/orders") { request, _ in
            let query = request.uri.queryParameters
            guard let announce = Self.announcement(query.get("announce")) else { return Self.badAnnounce }
            let status = query.get("status") ?? "created"
            guard Self.isPlainStatus(status) else { return Self.badStatus }
            let id = orders.create(status: status, announce: announce)
            return Self.json(200, #"{"id":\#(id)}"#)
        }
        router.post("/sandbox/orders/:id") { request, context in
            let query = request.uri.queryParameters
            guard let id = context.parameters.get("id", as: Int.self), orders.snapshot["\(id)"] != nil else {
                return Self.json(404, #"{"error":"no such order; GET /sandbox/orders lists them"}"#)
            }
            guard let announce = Self.announcement(query.get("announce")) else { return Self.badAnnounce }
            guard let status = query.get("status"), Self.isPlainStatus(status) else { return Self.badStatus }
            orders.update(id, status: status, announce: announce)
            return Self.json(200, #"{"id":\#(id)}"#)
        }
        router.delete("/sandbox/orders/:id") { request, context in
            guard let id = context.parameters.get("id", as: Int.self), orders.snapshot["\(id)"] != nil else {
                return Self.json(404, #"{"error":"no such order; GET /sandbox/orders lists them"}"#)
            }
            guard let announce = Self.announcement(request.uri.queryParameters.get("announce")) else {
                return Self.badAnnounce
            }
            orders.delete(id, announce: announce != .silent)
            return Self.json(200, #"{"id":\#(id)}"#)
        }
        router.post("/sandbox/faults/:kind") { [self] request, context in
            let query = request.uri.queryParameters
            // Every parameter is checked text (DESIGN §10): a malformed or out-of-range one is a 400
            // naming it, never a silent default or a trap in `Array(repeating:count:)`.
            guard let status = Self.parameter(query.get("status"), default: 503, in: 100...599) else {
                return Self.json(400, #"{"error":"status must be an HTTP status, 100...599"}"#)
            }
            guard let times = Self.parameter(query.get("times"), default: 1, in: 0...1_000) else {
                return Self.json(400, #"{"error":"times must be a whole number, 0...1000"}"#)
            }
            switch context.parameters.get("kind") ?? "" {
            case "refresh": authority.failRefreshes(Array(repeating: status, count: times))
            case "login": authority.failLogins(Array(repeating: status, count: times))
            case "fetch": orders.failFetches(Array(repeating: status, count: times))
            case "slow-fetch":
                guard let milliseconds = Self.parameter(query.get("ms"), default: nil, in: 0...600_000) else {
                    return Self.json(400, #"{"error":"slow-fetch needs ms=N (0...600000)"}"#)
                }
                orders.delayFetches(Array(repeating: .milliseconds(milliseconds), count: times))
            case "drop-stream":
                guard let bytes = Self.parameter(query.get("after_bytes"), default: nil, in: 0...Int.max) else {
                    return Self.json(400, #"{"error":"drop-stream needs after_bytes=N (N >= 0)"}"#)
                }
                orders.dropNextStreams(afterBytes: Array(repeating: bytes, count: times))
            case "break-order", "heal-order":
                guard let id = Self.parameter(query.get("id"), default: nil, in: 1...Int.max) else {
                    return Self.json(400, #"{"error":"break-order and heal-order need id=N (N >= 1)"}"#)
                }
                if context.parameters.get("kind") == "break-order" {
                    orders.breakOrder(id, status: status)
                } else {
                    orders.healOrder(id)
                }
            case "outage": orders.beginOutage(status: status)
            case "heal-outage": orders.endOutage()
            case "drop-open-streams": orders.dropOpenStreams()
            case "expire-access-tokens": authority.expireAccessTokens()
            case "revoke-refresh-tokens": authority.revokeAllRefreshTokens()
            default:
                return Self.json(404, #"{"error":"unknown fault; use drop-stream, drop-open-streams, fetch, slow-fetch, break-order, "#
                    + #"heal-order, outage, heal-outage, refresh, login, expire-access-tokens or revoke-refresh-tokens"}"#)
            }
            return Self.json(200, #"{"ok":true}"#)
        }
    }

    /// A whole-number query parameter within `range`: `fallback` when absent, nil when malformed or
    /// out of range (or absent without a fallback).
    static func parameter(_ text: String?, default fallback: Int?, in range: ClosedRange<Int>) -> Int? {
        guard let text else { return fallback }
        return Checked.int(decimal: text, in: range)
    }

    private static func announcement(_ value: String?) -> OrderAnnouncement? {
        switch value {
        case nil, "full": .fullBody
        case "id": .idOnly
        case "silent": .silent
        default: nil
        }
    }

    /// Statuses go into JSON unescaped; keep them to a plain word.
    private static func isPlainStatus(_ status: String) -> Bool {
        !status.isEmpty && status.count <= 64
            && status.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-" }
    }

    private static var badAnnounce: Response {
        json(400, #"{"error":"announce must be full, id or silent"}"#)
    }

    private static var badStatus: Response {
        json(400, #"{"error":"status must be a word of letters, digits, _ or - (for example picked_up)"}"#)
    }
}
