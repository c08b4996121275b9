import HTTPTypes
import Hummingbird

/// Answers what the router does not match with a JSON error instead of an empty 404: a path the
/// listener serves, asked with another method, is `405` with `Allow` naming the methods it takes
/// (RFC 9110 §15.5.6); any other path is `404`. Both bodies are `{"code":N,"message":"…"}` like
/// every other refusal. The router runs this for unmatched requests too (its not-found responder
/// is built behind the same middleware).
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    /// Methods by path.
    private let allowed: [String: [HTTPRequest.Method]]

    init(routes: [PushServer.Route]) {
        allowed = Dictionary(grouping: routes, by: \.path).mapValues { $0.map(\.method) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let methods = allowed[request.uri.path] else {
                return PushEndpoint.json(.notFound, "no such route: \(request.uri.path) (GET /openapi.json lists the routes)")
            }
            let names = methods.map(\.rawValue).joined(separator: ", ")
            var response = PushEndpoint.json(.methodNotAllowed, "\(request.uri.path) takes \(names), not \(request.method.rawValue)")
            response.headers[.allow] = names
            return response
        }
    }
}
