import CheckedInput
import Foundation
public import JSONToolkit

/// DESIGN §3's reading of an order object, written once: the stream's events, the pushes and the
/// orders client all decode orders here.
extension OrderRecord {
    /// The members the decoder reads, by position (``decode(members:text:appliedAt:)``): a reader
    /// may skip every other one (`JSONReader.members(_:depth:)`).
    public static let decodedKeys = JSONKeys(["id", "status", "version", "store_id", "courier_id", "updated_at"])

    /// Reads an order object: `id` (an integer or a non-empty string) and a non-empty `status` are
    /// required; `version` is an integer within ±2^53 when it is a number (a string or null counts as
    /// none; anything else is an error); `store_id` and `courier_id` are ids; `updated_at` is kept
    /// as its text. `text`, the object's exact text as received, is stored as the body.
    public static func decode(
        _ fields: [String: JSONValue], text: String, appliedAt: Double
    ) throws(OrderParseError) -> OrderRecord {
        try decode(
            members: [fields["id"], fields["status"], fields["version"], fields["store_id"], fields["courier_id"],
                      fields["updated_at"]],
            text: text, appliedAt: appliedAt)
    }

    /// ``decode(_:text:appliedAt:)`` of the members read by position in ``decodedKeys``.
    public static func decode(
        members: [JSONValue?], text: String, appliedAt: Double
    ) throws(OrderParseError) -> OrderRecord {
        func member(_ position: Int) -> JSONValue? { position < members.count ? members[position] : nil }
        guard let id = member(0)?.identifier else { throw OrderParseError("the order has no usable id") }
        guard let status = member(1)?.string, !status.isEmpty else {
            throw OrderParseError("order \(id) has no status")
        }
        var version: Int64?
        switch member(2) {
        case nil, .null?, .string?:
            break
        case .number(let number)?:
            // DESIGN §10: a version out of range is an error, never a trap or a silent wrap.
            guard let checked = Checked.jsonInteger(number) else {
                throw OrderParseError("order \(id) has a version that is not an integer within ±2^53")
            }
            version = checked
        default:
            throw OrderParseError("order \(id) has a version that is not an integer within ±2^53")
        }
        return OrderRecord(
            id: id, status: status, storeID: member(3)?.identifier, courierID: member(4)?.identifier, version: version,
            updatedAt: member(5)?.string, body: text, appliedAt: appliedAt)
    }

    /// Reads one order from its exact text (surrounding whitespace is not stored).
    public static func decode(text: String, appliedAt: Double) throws(OrderParseError) -> OrderRecord {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let object = JSONObjectText(Array(trimmed.utf8)) else {
            throw OrderParseError("the order is not a JSON object")
        }
        return try decode(object.fields, text: trimmed, appliedAt: appliedAt)
    }
}
