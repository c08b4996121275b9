import Agent
public import CurlHTTP

/// What `orderlive inspect` was asked to do (DESIGN §5), already parsed.
public struct InspectOptions: Sendable {
    /// The stream URL (http or https).
    public var url: String
    /// Extra request headers, in order.
    public var headers: HTTPHeaders
    /// A bearer token for `Authorization`; never printed.
    public var bearerToken: String?
    /// The method.
    public var method: String
    /// A request body.
    public var body: String?
    /// The cursor for the first request.
    public var lastEventID: String
    /// Show only events of these types; empty shows all.
    public var eventTypes: Set<String>
    /// Show comment lines.
    public var showsComments: Bool
    /// The reconnect base delay (0 allowed).
    public var initialDelay: Duration
    /// Drop a connection after this long without a byte; nil for never.
    public var readTimeout: Duration?
    /// Exit 0 after this many (shown) events.
    public var count: Int?
    /// Exit 0 after this long.
    public var duration: Duration?
    /// Reconnect after a lost connection.
    public var reconnects: Bool
    /// JSON lines instead of the readable view.
    public var json: Bool
    /// Colour the readable view; nil decides by whether stdout is a terminal and `NO_COLOR`.
    public var color: Bool?

    /// Creates options with `inspect`'s defaults.
    public init(
        url: String,
        headers: HTTPHeaders = [:],
        bearerToken: String? = nil,
        method: String = "GET",
        body: String? = nil,
        lastEventID: String = "",
        eventTypes: Set<String> = [],
        showsComments: Bool = false,
        initialDelay: Duration = .seconds(1),
        readTimeout: Duration? = nil,
        count: Int? = nil,
        duration: Duration? = nil,
        reconnects: Bool = true,
        json: Bool = false,
        color: Bool? = nil
    ) {
        self.url = url
        self.headers = headers
        self.bearerToken = bearerToken
        self.method = method
        self.body = body
        self.lastEventID = lastEventID
        self.eventTypes = eventTypes
        self.showsComments = showsComments
        self.initialDelay = initialDelay
        self.readTimeout = readTimeout
        self.count = count
        self.duration = duration
        self.reconnects = reconnects
        self.json = json
        self.color = color
    }

    /// Checks what can be checked before any request; the message says what to fix.
    public func validate() throws(CommandUsageError) {
        try Self.validateURL(url)
        if let count, count < 1 { throw CommandUsageError("--count must be at least 1, got \(count)") }
        if let duration, duration <= .zero { throw CommandUsageError("--duration must be more than 0 seconds") }
        if initialDelay < .zero { throw CommandUsageError("--initial-delay must be 0 or more milliseconds") }
        if let readTimeout, readTimeout <= .zero { throw CommandUsageError("--read-timeout must be more than 0 ms") }
        if lastEventID.contains(where: { $0 == "\0" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) {
            throw CommandUsageError("--last-event-id cannot contain NUL, CR or LF")
        }
        if method.isEmpty || !method.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-") }) {
            throw CommandUsageError("--method must be an HTTP method name such as GET or POST, got '\(method)'")
        }
    }

    /// An absolute http(s) URL with a host and no white space or control characters.
    public static func validateURL(_ url: String) throws(CommandUsageError) {
        if let problem = HTTPURLCheck.problem(url) { throw CommandUsageError(problem) }
    }

    /// Parses a `-H "Name: value"` argument.
    public static func parseHeader(_ argument: String) throws(CommandUsageError) -> HTTPHeaders.Field {
        guard let colon = argument.firstIndex(of: ":") else {
            throw CommandUsageError("header '\(argument)' must look like 'Name: value'")
        }
        let name = argument[..<colon].trimming()
        let value = argument[argument.index(after: colon)...].trimming()
        let token = name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && scalar.value > 0x20 && scalar.value < 0x7F && !"()<>@,;:\\\"/[]?={}".unicodeScalars.contains(scalar)
        }
        guard !name.isEmpty, token else { throw CommandUsageError("header name '\(name)' is not a valid HTTP field name") }
        guard !value.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" || $0 == "\0" }) else {
            throw CommandUsageError("header '\(name)' has a line break in its value")
        }
        return HTTPHeaders.Field(name: name, value: value)
    }
}

