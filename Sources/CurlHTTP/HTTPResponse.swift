/// The status line and headers of the final response (after redirects).
public struct HTTPResponseHead: Sendable, Hashable {
    /// The status code.
    public var status: Int
    /// The response headers.
    public var headers: HTTPHeaders
    /// The URL that answered, after redirects.
    public var url: String

    /// Creates a head.
    public init(status: Int, headers: HTTPHeaders, url: String) {
        self.status = status
        self.headers = headers
        self.url = url
    }

    /// The `Content-Type` value, if any.
    public var contentType: String? { headers["Content-Type"] }
}

/// A complete response.
public struct HTTPResponse: Sendable {
    /// Status and headers.
    public var head: HTTPResponseHead
    /// The body bytes, decoded from any content encoding.
    public var body: [UInt8]

    /// Creates a response.
    public init(head: HTTPResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    /// The status code.
    public var status: Int { head.status }
}
