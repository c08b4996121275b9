import Foundation

/// How one endpoint is sent its changes (DESIGN §14 "Outgoing webhooks for real integrators"), kept
/// with the endpoint in the store as one JSON document, so every agent of the account sends alike.
/// The defaults are the original behaviour: one change per request, one request in flight, no cap.
public struct WebhookDeliveryOptions: Sendable, Hashable, Codable {
    /// Requests in flight at once; above 1, changes of different orders travel together, and the
    /// changes of one order never do.
    public var maxInFlight: Int
    /// Changes per request; above 1 the body is a JSON array, signed as one message.
    public var batchSize: Int
    /// How long a batch short of ``batchSize`` waits for more changes before it is sent, in ms.
    public var batchMilliseconds: Int
    /// Requests per second at most (a token bucket keeping an even schedule); 0: no cap.
    public var ratePerSecond: Double
    /// Extra request headers, in order.
    public var headers: [WebhookHeader]
    /// A PEM client certificate (mTLS) and its key, by path; empty for none.
    public var clientCertificate: String
    public var clientKey: String

    /// The bounds of each option, which `webhooks add|update` check.
    public static let inFlightRange = 1...256
    public static let batchSizeRange = 1...1_000
    public static let batchMillisecondsRange = 0...60_000
    public static let rateRange = 0.0...100_000.0

    /// Creates options; the defaults are one change per request, one in flight, no cap, no extras.
    public init(maxInFlight: Int = 1, batchSize: Int = 1, batchMilliseconds: Int = 0, ratePerSecond: Double = 0,
                headers: [WebhookHeader] = [], clientCertificate: String = "", clientKey: String = "") {
        self.maxInFlight = maxInFlight
        self.batchSize = batchSize
        self.batchMilliseconds = batchMilliseconds
        self.ratePerSecond = ratePerSecond
        self.headers = headers
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// True when delivery is today's one change per request, one at a time, uncapped.
    public var isSequential: Bool { maxInFlight <= 1 && batchSize <= 1 && ratePerSecond <= 0 }

    private enum CodingKeys: String, CodingKey {
        case maxInFlight = "max_in_flight", batchSize = "batch_size", batchMilliseconds = "batch_ms", ratePerSecond = "rate_per_s"
        case headers, clientCertificate = "client_certificate", clientKey = "client_key"
    }

    /// Reads the stored document; a key it lacks (an older agent wrote it) takes its default, and a
    /// value out of bounds is brought inside them, so a hand-edited row cannot stop delivery.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = WebhookDeliveryOptions()
        func clamped(_ value: Int?, _ range: ClosedRange<Int>, _ fallback: Int) -> Int {
            min(max(value ?? fallback, range.lowerBound), range.upperBound)
        }
        maxInFlight = clamped(try container.decodeIfPresent(Int.self, forKey: .maxInFlight), Self.inFlightRange, defaults.maxInFlight)
        batchSize = clamped(try container.decodeIfPresent(Int.self, forKey: .batchSize), Self.batchSizeRange, defaults.batchSize)
        batchMilliseconds = clamped(
            try container.decodeIfPresent(Int.self, forKey: .batchMilliseconds), Self.batchMillisecondsRange, defaults.batchMilliseconds)
        let rate = try container.decodeIfPresent(Double.self, forKey: .ratePerSecond) ?? 0
        ratePerSecond = rate.isFinite ? min(max(rate, Self.rateRange.lowerBound), Self.rateRange.upperBound) : 0
        headers = try container.decodeIfPresent([WebhookHeader].self, forKey: .headers) ?? []
        clientCertificate = try container.decodeIfPresent(String.self, forKey: .clientCertificate) ?? ""
        clientKey = try container.decodeIfPresent(String.self, forKey: .clientKey) ?? ""
    }

    /// The stored form: compact JSON with its keys sorted.
    public var stored: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The options in a stored document; the defaults for an empty or unreadable one (a row written
    /// before the options existed holds `{}`).
    public static func stored(_ text: String?) -> WebhookDeliveryOptions {
        guard let text, !text.isEmpty, let options = try? JSONDecoder().decode(Self.self, from: Data(text.utf8)) else {
            return WebhookDeliveryOptions()
        }
        return options
    }
}

/// One extra header an endpoint is sent: a value written in the store, or a file read when a request
/// is made, so a key need not be typed on a command line nor kept in the database.
public struct WebhookHeader: Sendable, Hashable, Codable {
    /// The header's name.
    public var name: String
    /// Its value, when written in the store.
    public var value: String?
    /// A file whose contents (trimmed) are its value.
    public var file: String?

    /// Creates a header from a value or a file.
    public init(name: String, value: String? = nil, file: String? = nil) {
        self.name = name
        self.value = value
        self.file = file
    }
}
