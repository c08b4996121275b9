public import JSONToolkit
import StoreModel

/// A notification's `data`, read straight from its bytes into what orderlive uses (DESIGN §9): the
/// type, the order's id and version, and the order itself — six members and its exact text — with
/// every other member checked and skipped, never built. The reading before built the whole object
/// as `JSONValue`s (a dictionary, then the order's own dictionary) and read the same six fields
/// back out of it: about a sixth of a push's instructions.
public struct PushData: Sendable, Hashable {
    /// `data.type`, when it is a string.
    public var type: String?
    /// `data.order_id` as an id (an integer, or a non-empty string).
    public var orderID: String?
    /// `data.version`, when it is an integer within ±2^53.
    public var version: Int64?
    /// `data.order`, when present.
    public var order: Order?

    /// `data.order` as sent.
    public enum Order: Sendable, Hashable {
        /// An object: the members ``OrderRecord/decodedKeys`` names, by position, and its exact text.
        case object(members: [JSONValue?], text: String)
        /// A JSON string (FCM delivers data values as strings): the order's text, if it is one.
        case text(String)
        /// Any other value.
        case other
    }

    /// Creates data (tests, tools).
    public init(type: String? = nil, orderID: String? = nil, version: Int64? = nil, order: Order? = nil) {
        self.type = type
        self.orderID = orderID
        self.version = version
        self.order = order
    }

    static let keys = JSONKeys(["type", "order_id", "version", "order"])

    /// Reads a `data` object (`depth` is the object's own): accepts exactly what
    /// `JSONReader.value(depth:)` accepts, and keeps the last of a repeated key, as a dictionary did.
    init(reading reader: inout JSONReader, depth: Int) throws(JSONReader.Failure) {
        try reader.object(Self.keys) { (reader, position) throws(JSONReader.Failure) in
            reader.skipWhitespace()
            switch position {
            case 0:
                let value = try reader.value(depth: depth + 1)
                type = if case .string(let text) = value { text } else { nil }
            case 1:
                orderID = try reader.value(depth: depth + 1).identifier
            case 2:
                version = try reader.value(depth: depth + 1).integer
            case 3:
                let start = reader.index
                switch reader.peek() {
                case 0x7B:
                    guard let members = try reader.members(OrderRecord.decodedKeys, depth: depth + 1) else {
                        throw JSONReader.Failure()
                    }
                    order = .object(members: members, text: reader.text(start..<reader.index))
                case 0x22:
                    order = .text(try reader.string())
                default:
                    try reader.skipValue(depth: depth + 1)
                    order = .other
                }
            default:
                try reader.skipValue(depth: depth + 1)
            }
        }
    }
}
