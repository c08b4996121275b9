import CheckedInput

/// Any JSON value. Numbers are kept as `Double`: integers are read out of them with a check
/// (``integer``), never by a conversion that could trap.
public enum JSONValue: Sendable, Hashable {
    /// `null`
    case null
    /// `true` or `false`
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; a key written twice keeps its last value.
    case object([String: JSONValue])
}

extension JSONValue {
    /// An id as DESIGN §3 reads it: a non-empty string as it is, or an integer within ±2^53 as its
    /// decimal text (so `7` and `"7"` are the same id). Anything else is no usable id.
    public var identifier: String? {
        switch self {
        case .string(let string) where !string.isEmpty: string
        case .number(let number): Checked.jsonInteger(number).map { String($0) }
        default: nil
        }
    }

    /// An integer hint (a push's or an event's `version`): a number within ±2^53, or a decimal string
    /// within Int64. Anything else is no integer.
    public var integer: Int64? {
        switch self {
        case .number(let number): Checked.jsonInteger(number)
        case .string(let string): Checked.int64(decimal: string)
        default: nil
        }
    }

    /// The string, when this is one.
    public var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The members, when this is an object.
    public var object: [String: JSONValue]? {
        if case .object(let value) = self { value } else { nil }
    }
}

/// A JSON object read whole, with the exact text of the members the caller asked to keep.
public struct JSONObjectText: Sendable, Hashable {
    /// The members.
    public var fields: [String: JSONValue]
    /// The exact text of each kept member's value, as received (first occurrence).
    public var texts: [String: String]

    /// Reads `bytes` as one JSON object (nothing but whitespace after it), keeping the text of
    /// `keys`' values; nil when it is not valid JSON or not an object.
    public init?(_ bytes: [UInt8], keepingTextOf keys: Set<String> = []) {
        var fields: [String: JSONValue] = [:]
        var texts: [String: String] = [:]
        let read: Bool = bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            do {
                guard reader.peek() == 0x7B else { return false }
                try reader.object { (reader, key) throws(JSONReader.Failure) in
                    reader.skipWhitespace()
                    let start = reader.index
                    fields[key] = try reader.value(depth: 1)
                    if keys.contains(key), texts[key] == nil { texts[key] = reader.text(start..<reader.index) }
                }
            } catch {
                return false
            }
            reader.skipWhitespace()
            return reader.atEnd
        }
        guard read else { return nil }
        self.fields = fields
        self.texts = texts
    }
}
