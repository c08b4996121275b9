import CheckedInput
import CurlHTTP
import Foundation
public import StoreModel

/// What `webhooks add|update` were told about an endpoint's delivery (DESIGN §14), each option nil
/// when not given; ``applied(to:)`` checks them all and writes them over the options the endpoint had.
public struct WebhookOptionsInput: Sendable {
    public var maxInFlight: String?
    public var batchSize: String?
    public var batchMilliseconds: String?
    public var rate: String?
    /// `NAME=VALUE` and `NAME=FILE` pairs, in the order given.
    public var headers: [String]
    public var headerFiles: [String]
    /// Header names to drop (`update --remove-header`).
    public var removedHeaders: [String]
    /// A client certificate and key; an empty path drops them.
    public var clientCertificate: String?
    public var clientKey: String?

    /// Creates the input.
    public init(maxInFlight: String? = nil, batchSize: String? = nil, batchMilliseconds: String? = nil, rate: String? = nil,
                headers: [String] = [], headerFiles: [String] = [], removedHeaders: [String] = [],
                clientCertificate: String? = nil, clientKey: String? = nil) {
        self.maxInFlight = maxInFlight
        self.batchSize = batchSize
        self.batchMilliseconds = batchMilliseconds
        self.rate = rate
        self.headers = headers
        self.headerFiles = headerFiles
        self.removedHeaders = removedHeaders
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// True when no option was given.
    public var isEmpty: Bool {
        maxInFlight == nil && batchSize == nil && batchMilliseconds == nil && rate == nil && headers.isEmpty && headerFiles.isEmpty
            && removedHeaders.isEmpty && clientCertificate == nil && clientKey == nil
    }

    /// Headers an endpoint may not set: the signature's, the body's framing, the trace's.
    static let reservedHeaders: Set<String> = [
        "content-type", "content-length", "host", "transfer-encoding", "connection", "expect", "webhook-id", "webhook-timestamp",
        "webhook-signature", "traceparent", "tracestate",
    ]

    /// `options` with what was given written over it; a refusal names the option that was wrong.
    public func applied(to options: WebhookDeliveryOptions) throws(WebhookAdministration.Refusal) -> WebhookDeliveryOptions {
        var result = options
        if let maxInFlight { result.maxInFlight = try Self.whole(maxInFlight, "--max-in-flight", WebhookDeliveryOptions.inFlightRange) }
        if let batchSize { result.batchSize = try Self.whole(batchSize, "--batch-size", WebhookDeliveryOptions.batchSizeRange) }
        if let batchMilliseconds {
            result.batchMilliseconds = try Self.whole(batchMilliseconds, "--batch-ms", WebhookDeliveryOptions.batchMillisecondsRange)
        }
        if let rate {
            guard let value = Double(rate), value.isFinite, WebhookDeliveryOptions.rateRange.contains(value) else {
                throw .init("--rate takes requests per second from 0 (no cap) to 100000, such as 20 or 0.5, not '\(rate)'")
            }
            result.ratePerSecond = value
        }
        let removed = Set(removedHeaders.map { $0.lowercased() })
        result.headers.removeAll { removed.contains($0.name.lowercased()) }
        for pair in headers {
            let (name, value) = try Self.pair(pair, "--header", "NAME=VALUE")
            guard value.utf8.count <= 8_192, !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" }) else {
                throw .init("--header \(name): the value must be one line of at most 8 KiB")
            }
            Self.replace(&result.headers, WebhookHeader(name: name, value: value))
        }
        for pair in headerFiles {
            let (name, file) = try Self.pair(pair, "--header-file", "NAME=FILE")
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw .init("--header-file \(name): cannot read \(file); give a file the agent can read, holding the header's value")
            }
            Self.replace(&result.headers, WebhookHeader(name: name, file: Self.absolute(file)))
        }
        guard result.headers.count <= 32 else { throw .init("an endpoint takes at most 32 extra headers") }
        if let clientCertificate { result.clientCertificate = try Self.file(clientCertificate, "--client-certificate") }
        if let clientKey { result.clientKey = try Self.file(clientKey, "--client-key") }
        if clientCertificate == "" { result.clientKey = "" }
        if result.clientCertificate.isEmpty, !result.clientKey.isEmpty {
            throw .init("--client-key needs --client-certificate: the key is the certificate's")
        }
        return result
    }

    private static func whole(_ text: String, _ option: String, _ range: ClosedRange<Int>) throws(WebhookAdministration.Refusal) -> Int {
        guard let value = Checked.int(decimal: text, in: range) else {
            throw .init("\(option) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    private static func pair(_ text: String, _ option: String, _ form: String) throws(WebhookAdministration.Refusal) -> (String, String) {
        guard let equals = text.firstIndex(of: "=") else { throw .init("\(option) takes \(form), not '\(text)'") }
        let name = String(text[..<equals]).trimmingCharacters(in: .whitespaces)
        let allowed = CharacterSet(charactersIn: "!#$%&'*+-.^_`|~").union(.alphanumerics)
        guard !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.isASCII && allowed.contains($0) }) else {
            throw .init("\(option): '\(name)' is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
        }
        guard !reservedHeaders.contains(name.lowercased()) else {
            throw .init("\(option): \(name) is set by orderlive itself and cannot be replaced")
        }
        return (name, String(text[text.index(after: equals)...]))
    }

    private static func replace(_ headers: inout [WebhookHeader], _ header: WebhookHeader) {
        if let index = headers.firstIndex(where: { $0.name.lowercased() == header.name.lowercased() }) {
            headers[index] = header
        } else {
            headers.append(header)
        }
    }

    private static func file(_ path: String, _ option: String) throws(WebhookAdministration.Refusal) -> String {
        guard !path.isEmpty else { return "" }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .init("\(option): cannot read \(path); give a PEM file the agent can read")
        }
        return absolute(path)
    }

    /// `path` made absolute, so the agent (started elsewhere) finds it.
    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
