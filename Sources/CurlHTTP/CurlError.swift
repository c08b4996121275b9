/// A transfer that did not produce a response: what went wrong, in words a person can act on.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: Sendable, Hashable {
        /// The URL could not be parsed or uses a scheme other than http/https.
        case invalidURL
        /// The host name did not resolve.
        case couldNotResolveHost
        /// Nothing accepted the connection.
        case couldNotConnect
        /// A connect or total timeout fired.
        case timedOut
        /// TLS failed: handshake, certificate, or public-key pin.
        case tls
        /// More redirects than allowed.
        case tooManyRedirects
        /// A redirect status without a usable `Location`.
        case redirectWithoutLocation
        /// The response body went over the request's limit.
        case responseTooLarge
        /// The connection broke mid-transfer (reset, truncated chunked body, HTTP/2 stream error).
        case connectionLost
        /// The caller cancelled the transfer.
        case cancelled
        /// The loop has shut down and takes no more transfers.
        case shutDown
        /// Any other libcurl failure.
        case other
    }

    /// What kind of failure this is.
    public var kind: Kind
    /// libcurl's own message (its error buffer, else its code's text), without request headers.
    public var message: String
    /// libcurl's `CURLcode`, or 0 for failures found by this module.
    public var code: Int

    /// Creates an error.
    public init(kind: Kind, message: String, code: Int = 0) {
        self.kind = kind
        self.message = message
        self.code = code
    }

    /// One line: the message, then libcurl's code when there is one.
    public var description: String {
        code == 0 ? message : "\(message) (curl error \(code))"
    }
}
