// JSONToolkit: the one JSON reader and writer of orderlive (STYLE 13). A strict byte-level reader
// (RFC 8259, nesting capped), the exact text of members for storing what was received, string
// escaping, and the one reading of "an id is a number or a string". No I/O, no other module.

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

/// How much of a member ``JSONObjectText/init(buffer:keepingTextOf:building:)`` builds.
public enum JSONMemberShape: Sendable, Hashable {
    /// The whole value.
    case whole
    /// When the value is an object, only these of its members (``JSONReader/members(_:depth:)``);
    /// any other value whole.
    case members(Set<String>)
}

/// A JSON object as read (whole, or only the members the caller builds), with the exact text of the
/// members the caller asked to keep.
public struct JSONObjectText: Sendable, Hashable {
    /// The members.
    public var fields: [String: JSONValue]
    /// The exact text of each kept member's value, as received (first occurrence).
    public var texts: [String: String]

    /// Reads `bytes` as one JSON object (nothing but whitespace after it), keeping the text of
    /// `keys`' values; nil when it is not valid JSON or not an object.
    public init?(_ bytes: [UInt8], keepingTextOf keys: Set<String> = []) {
        guard let read = bytes.withUnsafeBufferPointer({ Self(buffer: $0, keepingTextOf: keys, building: nil) }) else {
            return nil
        }
        self = read
    }

    /// Reads `buffer` as one JSON object, as ``init(_:keepingTextOf:)`` does, accepting exactly what
    /// it accepts, but building only the members named in `shape` (every other one is checked and
    /// skipped, see ``JSONReader/skipValue(depth:)``), each as its ``JSONMemberShape`` says. With
    /// `shape` nil, every member is built whole.
    /// A stream of order events spent a tenth of its time building members nobody read.
    public init?(
        buffer: UnsafeBufferPointer<UInt8>, keepingTextOf keys: Set<String> = [], building shape: [String: JSONMemberShape]?
    ) {
        var fields: [String: JSONValue] = [:]
        var texts: [String: String] = [:]
        var reader = JSONReader(buffer)
        do {
            guard reader.peek() == 0x7B else { return nil }
            try reader.object { (reader, key) throws(JSONReader.Failure) in
                reader.skipWhitespace()
                let start = reader.index
                if let shape {
                    switch shape[key] {
                    case nil:
                        try reader.skipValue(depth: 1)
                    case .whole?:
                        fields[key] = try reader.value(depth: 1)
                    case .members(let members)?:
                        if reader.peek() == 0x7B, let object = try reader.members(members, depth: 1) {
                            fields[key] = .object(object)
                        } else {
                            fields[key] = try reader.value(depth: 1)
                        }
                    }
                } else {
                    fields[key] = try reader.value(depth: 1)
                }
                if keys.contains(key), texts[key] == nil { texts[key] = reader.text(start..<reader.index) }
            }
        } catch {
            return nil
        }
        reader.skipWhitespace()
        guard reader.atEnd else { return nil }
        self.fields = fields
        self.texts = texts
    }
}
