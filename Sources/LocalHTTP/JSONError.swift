public import HTTPTypes
public import Hummingbird
import JSONToolkit

/// A refusal as every listener renders it: Gorush's `{"code": N, "message": "…"}` with the status,
/// optionally `Retry-After` (seconds) and `Connection: close` (the rest of the request is not read).
/// It renders itself (Hummingbird's `HTTPResponseError` habit), so no module borrows another's
/// helpers to answer, and a handler may also throw it.
public struct JSONError: Error, Sendable, Hashable, HTTPResponseError {
    /// The status.
    public var status: HTTPResponse.Status
    /// What was wrong and what to do; never a secret.
    public var message: String
    /// Seconds to wait before trying again, when the refusal is temporary.
    public var retryAfter: Int?
    /// Close the connection once the answer is written.
    public var close: Bool

    /// Creates a refusal.
    public init(_ status: HTTPResponse.Status, _ message: String, retryAfter: Int? = nil, close: Bool = false) {
        self.status = status
        self.message = message
        self.retryAfter = retryAfter
        self.close = close
    }

    /// The body: `{"code": N, "message": "..."}`.
    public var body: String {
        #"{"code":\#(status.code),"message":\#(JSONText.string(message))}"#
    }

    /// The response.
    public var response: Response {
        Response.json(status, body, retryAfter: retryAfter, close: close)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response { response }
}

extension Response {
    /// A JSON response of `text` (`application/json; charset=utf-8`, with its length), with
    /// `Retry-After` (seconds) and `Connection: close` when asked for.
    public static func json(_ status: HTTPResponse.Status, _ text: String, retryAfter: Int? = nil, close: Bool = false) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if close { headers[.connection] = "close" }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
