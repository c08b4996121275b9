import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import LocalHTTP
import NIOCore

/// `/v1/session` (DESIGN §14): a browser trades a token for an HttpOnly, SameSite=Strict cookie once,
/// so no token ever rides in a URL; the board lives on the cookie.
///
/// - `POST` with `Authorization: Bearer <token>`: `204` and `Set-Cookie`, a random id bound to the
///   token's consumer and scope, until `api.session_ttl_s`, `DELETE`, or the token's revocation.
/// - `GET`: who the request is (by header, `?access_token=` or cookie): name, stores, access, how,
///   and until when — what the board shows.
/// - `DELETE`: ends the cookie's session (and the feeds it opened) and clears the cookie; `204`
///   whether or not one was open.
extension OrdersAPIServer {
    static let sessionPath = "/v1/session"

    var sessionRoutes: [Route] {
        let (gate, hub, secure) = (self.gate, self.hub, configuration.authentication.credentials?.settings.secureCookie ?? false)
        return [
            Route(method: .post, path: Self.sessionPath) { request, _ in
                guard let credentials = gate.authentication.credentials else {
                    // api.auth: none needs no session: everyone reads already.
                    return Response(status: .noContent)
                }
                guard request.headers[.authorization] != nil else {
                    gate.audit.record(.unauthorized, principal: nil)
                    return JSONError(.unauthorized, "POST /v1/session takes the token in Authorization: Bearer <token>, never in the URL").response
                }
                let principal: APIPrincipal
                do throws(APIDenial) {
                    principal = try await gate.access(request, route: Self.sessionPath, query: .ignored).principal
                } catch {
                    return error.response
                }
                let (id, bound, ended) = credentials.startSession(for: principal)
                if !ended.isEmpty {
                    let keys = Set(ended)
                    hub.endSubscribers { $0.session.map(keys.contains) == true }
                }
                gate.audit.session("started", bound)
                let maxAge = Int(max(0, min((bound.expiresAt ?? 0) - credentials.now(), 366 * 86_400)).rounded())
                var headers = HTTPFields()
                headers[.setCookie] = Self.cookie(id, maxAge: maxAge, secure: secure)
                headers[.cacheControl] = "no-store"
                return Response(status: .noContent, headers: headers)
            },
            Route(method: .get, path: Self.sessionPath) { request, _ in
                let access: APIAccess
                do throws(APIDenial) { access = try await gate.access(request, route: Self.sessionPath, query: .ignored) } catch {
                    return error.response
                }
                var response = Response.json(.ok, Self.describe(access.principal, authenticated: gate.authentication.credentials != nil))
                response.headers[.cacheControl] = "no-store"
                return response
            },
            Route(method: .delete, path: Self.sessionPath) { request, _ in
                if let credentials = gate.authentication.credentials,
                   let id = APIAuthentication.cookie(APIAuthentication.sessionCookie, in: request.headers),
                   let key = credentials.endSession(id: id) {
                    hub.endSubscribers { $0.session == key }
                    gate.audit.session("ended", nil)
                }
                var headers = HTTPFields()
                headers[.setCookie] = Self.cookie("", maxAge: 0, secure: secure)
                headers[.cacheControl] = "no-store"
                return Response(status: .noContent, headers: headers)
            },
        ]
    }

    /// The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
    /// it), Path=/ and, on TLS, Secure.
    static func cookie(_ id: String, maxAge: Int, secure: Bool) -> String {
        "\(APIAuthentication.sessionCookie)=\(id); Max-Age=\(maxAge); Path=/; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// What `GET /v1/session` answers: `{"consumer": …, "stores": [...] | "*", "access": …, "via": …, "expires_at": …}`.
    static func describe(_ principal: APIPrincipal, authenticated: Bool) -> String {
        let consumer = principal.consumer
        let stores = consumer.stores.map { "[" + $0.sorted().map { "\"\($0)\"" }.joined(separator: ",") + "]" } ?? "\"*\""
        let via = authenticated ? principal.via : "none"
        let expires = principal.expiresAt.map { "\(Int64(max(0, min($0, 253_402_300_799))))" } ?? "null"
        return #"{"consumer":"\#(consumer.name)","stores":\#(stores),"access":"\#(consumer.access.rawValue)","via":"\#(via)","expires_at":\#(expires)}"#
    }
}
