import Foundation
import JSONToolkit
public import StoreModel

extension OrderRecord {
    /// Reads an order object built in a test: it is serialised with sorted keys, and that text, or
    /// `rawText` when given, is decoded by the agent's rules (``OrderRecord/decode(_:text:appliedAt:)``).
    public static func parse(
        _ object: [String: Any], rawText: Substring? = nil, appliedAt: Double
    ) throws(OrderParseError) -> OrderRecord {
        guard JSONSerialization.isValidJSONObject(object),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
              let fields = JSONObjectText(Array(data))?.fields
        else { throw OrderParseError("the order cannot be read as a JSON object") }
        return try decode(fields, text: rawText.map(String.init) ?? String(decoding: data, as: UTF8.self), appliedAt: appliedAt)
    }
}
