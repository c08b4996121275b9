import HTTPTypes
import Hummingbird

/// Which web origins may call the orders API from a browser (`api.cors_origins`, DESIGN §14): a
/// page of a listed origin — the business's own dashboard on another host — may read the orders and
/// the feed with its consumer's token; every other origin gets no CORS header at all, so its browser
/// refuses to hand it the answer. Answers always vary by `Origin`.
public struct CORSPolicy: Sendable, Hashable {
    /// The allowed origins, each `scheme://host[:port]` exactly as a browser sends it.
    public let origins: Set<String>

    /// A policy for these origins; none allows only the API's own origin (a browser's default).
    public init(origins: Set<String> = []) {
        self.origins = origins
    }

    /// The methods and request headers a preflight allows.
    static let methods = "GET, HEAD"
    static let requestHeaders = "Authorization, Last-Event-ID"

    /// Checks an origin as `api.cors_origins` gives it: nil when it reads, else why not.
    public static func problem(with origin: String) -> String? {
        let lowered = origin.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lowered.hasPrefix($0) }) else {
            return "'\(origin.prefix(128))' is not an origin: it starts with http:// or https://"
        }
        let rest = origin.dropFirst(scheme.count)
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("*"), !rest.contains(" "), !rest.contains("@") else {
            return "'\(origin.prefix(128))' is not an origin: scheme://host[:port], without a path, a trailing slash or a wildcard"
        }
        return nil
    }

    /// The CORS headers of an answer to a request from `origin` (none for an origin not listed).
    func headers(for origin: String?) -> HTTPFields {
        var headers = HTTPFields()
        headers[.vary] = "Origin"
        guard let origin, origins.contains(origin) else { return headers }
        headers[.accessControlAllowOrigin] = origin
        headers[.accessControlAllowCredentials] = "true"
        return headers
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`): `204` with what it
    /// may do for a listed origin; `403` with no CORS header for any other.
    func preflight(for origin: String?) -> Response {
        var headers = headers(for: origin)
        guard headers[.accessControlAllowOrigin] != nil else {
            return Response(status: .forbidden, headers: headers)
        }
        headers[.accessControlAllowMethods] = Self.methods
        headers[.accessControlAllowHeaders] = Self.requestHeaders
        headers[.accessControlMaxAge] = "600"
        return Response(status: .noContent, headers: headers)
    }
}

/// Applies a ``CORSPolicy`` to every answer of the router and answers preflights. The change feed,
/// which the router never sees, adds the same headers to its own head.
struct OriginPolicyMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: CORSPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let origin = request.headers[.origin]
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            return policy.preflight(for: origin)
        }
        var response = try await next(request, context)
        if origin != nil {
            for field in policy.headers(for: origin) { response.headers[field.name] = field.value }
        }
        return response
    }
}
