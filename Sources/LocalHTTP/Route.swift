public import HTTPTypes
public import Hummingbird

/// One route of a listener: what its `GET /openapi.json` documents, what its router registers, and
/// what ``MethodNotAllowedMiddleware`` answers `405` for when the path is asked with another method.
public struct Route: Sendable {
    /// The method.
    public var method: HTTPRequest.Method
    /// The path, as the router matches it (`{name}` is one segment).
    public var path: String
    /// The handler.
    public var respond: @Sendable (Request, BasicRequestContext) async -> Response

    /// Creates a route.
    public init(method: HTTPRequest.Method, path: String, respond: @escaping @Sendable (Request, BasicRequestContext) async -> Response) {
        self.method = method
        self.path = path
        self.respond = respond
    }
}

extension Router where Context == BasicRequestContext {
    /// A router with `routes` registered in order, behind the 405/404 middleware that knows them.
    /// Every `GET` route answers `HEAD` too (RFC 9110 §9.1: uptime monitors, `curl -I` and load
    /// balancers use it), with the `GET`'s status and headers and no body: Hummingbird's own
    /// generated `HEAD` endpoints.
    public static func serving(_ routes: [Route]) -> Router<BasicRequestContext> {
        serving(routes) { _ in }
    }

    /// ``serving(_:)`` with `first` running before everything else (the orders API's CORS).
    public static func serving(
        _ routes: [Route], first: some RouterMiddleware<BasicRequestContext>
    ) -> Router<BasicRequestContext> {
        serving(routes) { $0.add(middleware: first) }
    }

    private static func serving(
        _ routes: [Route], before: (Router<BasicRequestContext>) -> Void
    ) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        before(router)
        router.add(middleware: MethodNotAllowedMiddleware(routes: routes))
        for route in routes {
            router.on(RouterPath(route.path), method: route.method, use: route.respond)
        }
        return router
    }
}
