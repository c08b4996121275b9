/// Header fields in the order they were sent or received; names compare case-insensitively.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The field name as written.
        public var name: String
        /// The field value, without surrounding white space.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in order.
    public private(set) var fields: [Field]

    /// Creates headers from fields.
    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// Creates headers from name-value pairs.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value for `name` (case-insensitive), or nil.
    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first { $0.name.lowercased() == lowered }?.value
    }

    /// Appends a field, keeping any earlier one of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` with one field of that value.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        let lowered = name.lowercased()
        fields.removeAll { $0.name.lowercased() == lowered }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }
}

/// Transport-security options for one transfer.
public struct TLSOptions: Sendable, Hashable {
    /// An extra CA bundle (PEM) trusted in addition to the system's; empty for none.
    public var caFile: String
    /// A public-key pin in libcurl's `sha256//<base64>` form (several joined with `;`); empty for none.
    public var pinnedPublicKey: String
    /// A PEM client certificate presented to the server (mutual TLS), and its key; empty for none.
    public var clientCertificate: String
    public var clientKey: String

    /// Creates options; the defaults trust the system store, pin nothing and present no certificate.
    public init(caFile: String = "", pinnedPublicKey: String = "", clientCertificate: String = "", clientKey: String = "") {
        self.caFile = caFile
        self.pinnedPublicKey = pinnedPublicKey
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }
}

/// One HTTP request, as a value.
public struct HTTPRequest: Sendable {
    /// The absolute `http` or `https` URL.
    public var url: String
    /// The method, `GET` by default.
    public var method: String
    /// Request headers. libcurl adds `Host`, `Accept-Encoding` and, for bodies, `Content-Length`.
    public var headers: HTTPHeaders
    /// The request body, if any.
    public var body: [UInt8]?
    /// How long connecting (DNS, TCP, TLS) may take.
    public var connectTimeout: Duration
    /// How long the whole transfer may take; nil for no limit (streams).
    public var timeout: Duration?
    /// TLS trust and pinning.
    public var tls: TLSOptions
    /// The most redirects followed before the transfer fails.
    public var maximumRedirects: Int
    /// The largest response body `perform` accepts, in bytes.
    public var maximumResponseBytes: Int
    /// The proxy, set on the transfer with libcurl's proxy environment variables ignored; nil leaves
    /// libcurl's own handling (which reads `http_proxy`, `HTTPS_PROXY`, `NO_PROXY`).
    public var proxy: ProxyRoute?
    /// Addresses the transfer refuses to connect to; nil for none refused.
    public var addressGuard: AddressGuard?

    /// The connect deadline of a request that names none (and of `upstream.connect_timeout_ms`).
    public static let standardConnectTimeout = Duration.seconds(10)
    /// The whole-request deadline of a request that names none (and of `upstream.request_timeout_ms`).
    public static let standardTimeout = Duration.seconds(10)

    /// Creates a request.
    public init(
        url: String,
        method: String = "GET",
        headers: HTTPHeaders = [:],
        body: [UInt8]? = nil,
        connectTimeout: Duration = HTTPRequest.standardConnectTimeout,
        timeout: Duration? = HTTPRequest.standardTimeout,
        tls: TLSOptions = .init(),
        maximumRedirects: Int = 5,
        maximumResponseBytes: Int = 64 << 20,
        proxy: ProxyRoute? = nil,
        addressGuard: AddressGuard? = nil
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.tls = tls
        self.maximumRedirects = maximumRedirects
        self.maximumResponseBytes = maximumResponseBytes
        self.proxy = proxy
        self.addressGuard = addressGuard
    }
}

/// A transfer's proxy, as configured rather than as the environment says.
public struct ProxyRoute: Sendable, Hashable {
    /// The proxy's URL (`http://host:port`); empty: no proxy.
    public var url: String
    /// Hosts reached directly, `NO_PROXY`'s syntax (comma-separated names, domains, addresses, `*`).
    public var bypass: String

    /// Creates a route; the defaults are no proxy at all.
    public init(url: String = "", bypass: String = "") {
        self.url = url
        self.bypass = bypass
    }
}
