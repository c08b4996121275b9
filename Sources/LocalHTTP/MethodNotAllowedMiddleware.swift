public import HTTPTypes
public import Hummingbird

/// Answers what the router does not match with a JSON error instead of an empty 404: a path the
/// listener serves, asked with another method, is `405` with `Allow` naming the methods it takes
/// (RFC 9110 §15.5.6); any other path is `404`. Both bodies are `{"code":N,"message":"…"}` like
/// every other refusal. The router runs this for unmatched requests too (its not-found responder
/// is built behind the same middleware). Both listeners (push and orders API) use it.
public struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {

    /// Methods by path pattern (`{name}` matches one segment), in the order first registered.
    private let allowed: [(pattern: [Substring], methods: [HTTPRequest.Method])]

    /// Answers for these routes.
    public init(routes: [Route]) {
        self.init(routes: routes.map { ($0.method, $0.path) })
    }

    /// Answers for `routes`, each a method and a router path whose `{name}` segments match any one segment.
    public init(routes: [(method: HTTPRequest.Method, path: String)]) {
        var allowed: [(pattern: [Substring], methods: [HTTPRequest.Method])] = []
        for route in routes {
            let pattern = route.path.split(separator: "/", omittingEmptySubsequences: false)
            if let index = allowed.firstIndex(where: { $0.pattern == pattern }) {
                allowed[index].methods.append(route.method)
            } else {
                allowed.append((pattern, [route.method]))
            }
        }
        // Every GET answers HEAD as well (``Router/serving(_:)``).
        for index in allowed.indices where allowed[index].methods.contains(.get) && !allowed[index].methods.contains(.head) {
            allowed[index].methods.insert(.head, at: (allowed[index].methods.firstIndex(of: .get) ?? 0) + 1)
        }
        self.allowed = allowed
    }

    /// The methods a path takes, from the first pattern it matches (constant segments before `{}`).
    private func methods(for path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let matching = allowed.filter { entry in
            entry.pattern.count == segments.count && zip(entry.pattern, segments).allSatisfy { pattern, segment in
                pattern == segment || (pattern.hasPrefix("{") && pattern.hasSuffix("}") && !segment.isEmpty)
            }
        }
        return matching.first { !$0.pattern.contains { $0.hasPrefix("{") } }?.methods ?? matching.first?.methods
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let methods = methods(for: request.uri.path) else {
                return JSONError(.notFound, "no such route: \(request.uri.path) (GET /openapi.json lists the routes)").response
            }
            let names = methods.map(\.rawValue).joined(separator: ", ")
            var response = JSONError(.methodNotAllowed, "\(request.uri.path) takes \(names), not \(request.method.rawValue)").response
            response.headers[.allow] = names
            return response
        }
    }
}
