import CheckedInput

/// Member names a reader matches keys against as bytes (``JSONReader/object(_:_:)-(JSONKeys,_)``,
/// ``JSONReader/members(_:depth:)``): no `String` is made of a key, and nothing is hashed.
public struct JSONKeys: Sendable, Hashable {
    /// The names, as UTF-8, in the order their positions refer to.
    private let names: [[UInt8]]

    /// Keys named by their position in `names`.
    public init(_ names: [String]) {
        self.names = names.map { Array($0.utf8) }
    }

    /// How many names.
    public var count: Int { names.count }

    /// The position of the name whose UTF-8 is `key`, if any (the first, should one repeat).
    func position(of key: UnsafeBufferPointer<UInt8>) -> Int? {
        for position in names.indices where names[position].count == key.count {
            if names[position].withUnsafeBufferPointer({ $0.elementsEqual(key) }) { return position }
        }
        return nil
    }
}

/// A strict RFC 8259 JSON reader over raw bytes: the one JSON reader of the pushes, the events and the
/// orders client. Foundation's
/// `JSONDecoder` with `Codable` and a `JSONSerialization` round trip for the order cost about 250 µs
/// per one-notification request (docs/PERFORMANCE.md, push ingest); this reads the body once, keeps
/// the exact text of `data.order`, and never re-serialises. Nesting is capped at
/// ``maximumDepth`` so a hostile body cannot exhaust the stack.
public struct JSONReader {
    /// The input is not JSON (or not the JSON the caller expects).
    public struct Failure: Error {
        /// Creates a failure.
        public init() {}
    }

    /// Deeper documents are refused.
    public static let maximumDepth = 64

    /// The input (internal: the number reader, `JSONReader+Number.swift`, reads it too).
    let bytes: UnsafeBufferPointer<UInt8>
    /// The offset of the next byte to read.
    public internal(set) var index = 0

    /// A reader over `bytes`, which must outlive it.
    public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Parses one whole document: a value and nothing but whitespace after it.
    public static func parse(_ bytes: [UInt8]) -> JSONValue? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            guard let value = try? reader.value(depth: 0) else { return nil }
            reader.skipWhitespace()
            return reader.atEnd ? value : nil
        }
    }

    /// True when every byte has been read.
    public var atEnd: Bool { index >= bytes.count }

    /// The text of `range` (valid UTF-8, as the reader has already read it).
    public func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// Calls `body` with the bytes of `range` (already read), without copying them.
    public func withBytes<Result>(_ range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        body(UnsafeBufferPointer(rebasing: bytes[range]))
    }

    /// Skips JSON whitespace.
    public mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` after whitespace, or fails.
    public mutating func expect(_ byte: UInt8) throws(Failure) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { throw Failure() }
        index += 1
    }

    /// Consumes `byte` after whitespace if it is next.
    public mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// The next non-whitespace byte, not consumed.
    public mutating func peek() -> UInt8? {
        skipWhitespace()
        return index < bytes.count ? bytes[index] : nil
    }

    /// Walks the members of an object, calling `member` with each key; `member` must read the value.
    public mutating func object(_ member: (inout JSONReader, String) throws(Failure) -> Void) throws(Failure) {
        try expect(0x7B)
        if consume(0x7D) { return }
        repeat {
            skipWhitespace()
            let key = try string()
            try expect(0x3A)
            try member(&self, key)
        } while consume(0x2C)
        try expect(0x7D)
    }

    /// Walks the elements of an array, calling `element` for each; `element` must read the value.
    public mutating func array(_ element: (inout JSONReader) throws(Failure) -> Void) throws(Failure) {
        try expect(0x5B)
        if consume(0x5D) { return }
        repeat { try element(&self) } while consume(0x2C)
        try expect(0x5D)
    }

    /// Consumes `null` if it is next.
    public mutating func consumeNull() -> Bool {
        guard peek() == 0x6E, (try? literal("null")) != nil else { return false }
        return true
    }

    /// A string or null.
    public mutating func optionalString() throws(Failure) -> String? {
        if consumeNull() { return nil }
        guard peek() == 0x22 else { throw Failure() }
        return try string()
    }

    /// A boolean or null.
    public mutating func optionalBool() throws(Failure) -> Bool? {
        switch peek() {
        case 0x6E: try literal("null"); return nil
        case 0x74: try literal("true"); return true
        case 0x66: try literal("false"); return false
        default: throw Failure()
        }
    }

    /// An integer (a number without a fraction, in range) or null.
    public mutating func optionalInteger() throws(Failure) -> Int? {
        if consumeNull() { return nil }
        guard let next = peek(), next == 0x2D || (0x30...0x39).contains(next) else { throw Failure() }
        guard let integer = Checked.jsonInteger(try number()), let value = Int(exactly: integer) else { throw Failure() }
        return value
    }

    /// Any value.
    public mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard depth < Self.maximumDepth, let next = peek() else { throw Failure() }
        switch next {
        case 0x7B:
            var fields: [String: JSONValue] = [:]
            try object { (reader, key) throws(Failure) in fields[key] = try reader.value(depth: depth + 1) }
            return .object(fields)
        case 0x5B:
            var elements: [JSONValue] = []
            try array { (reader) throws(Failure) in elements.append(try reader.value(depth: depth + 1)) }
            return .array(elements)
        case 0x22:
            return .string(try string())
        case 0x74:
            try literal("true")
            return .bool(true)
        case 0x66:
            try literal("false")
            return .bool(false)
        case 0x6E:
            try literal("null")
            return .null
        default:
            return .number(try number())
        }
    }

    /// Checks and passes over one value exactly as ``value(depth:)`` reads it (the same grammar, the
    /// same depth cap, stopping at the same byte), without building it: no containers, no values.
    public mutating func skipValue(depth: Int) throws(Failure) {
        guard depth < Self.maximumDepth, let next = peek() else { throw Failure() }
        switch next {
        case 0x7B: try object { (reader, _) throws(Failure) in try reader.skipValue(depth: depth + 1) }
        case 0x5B: try array { (reader) throws(Failure) in try reader.skipValue(depth: depth + 1) }
        case 0x22: _ = try string()
        case 0x74: try literal("true")
        case 0x66: try literal("false")
        case 0x6E: try literal("null")
        default: _ = try number()
        }
    }

    /// Reads an object keeping only the members named in `keys`, by their position there (the last
    /// of a repeated key, as ``value(depth:)`` keeps it; nil for one that is absent); every other
    /// member is checked and skipped (``skipValue(depth:)``). Accepts exactly what ``value(depth:)``
    /// accepts. Nil, with the value passed over, when the next value is valid JSON but not an object.
    /// The order decoders read six fields of objects that carry many more: a full sync spent a sixth
    /// of its time building the rest, and then hashing keys into dictionaries.
    public mutating func members(_ keys: JSONKeys, depth: Int) throws(Failure) -> [JSONValue?]? {
        guard depth < Self.maximumDepth, let next = peek() else { throw Failure() }
        guard next == 0x7B else {
            try skipValue(depth: depth)
            return nil
        }
        var values = [JSONValue?](repeating: nil, count: keys.count)
        try object(keys) { (reader, position) throws(Failure) in
            if let position {
                values[position] = try reader.value(depth: depth + 1)
            } else {
                try reader.skipValue(depth: depth + 1)
            }
        }
        return values
    }

    /// Walks the members of an object like ``object(_:)-(_)``, naming each key by its position in
    /// `keys` (nil for any other key) instead of making a `String` of it: a key without escapes or
    /// non-ASCII bytes is compared as bytes where it lies. Every key is checked exactly as
    /// ``string()`` checks it, so this accepts and refuses the same documents.
    public mutating func object(_ keys: JSONKeys, _ member: (inout JSONReader, Int?) throws(Failure) -> Void) throws(Failure) {
        try expect(0x7B)
        if consume(0x7D) { return }
        repeat {
            skipWhitespace()
            let position = try key(in: keys)
            try expect(0x3A)
            try member(&self, position)
        } while consume(0x2C)
        try expect(0x7D)
    }

    /// A key's position in `keys`, read as ``string()`` would read it.
    private mutating func key(in keys: JSONKeys) throws(Failure) -> Int? {
        guard index < bytes.count, bytes[index] == 0x22 else { throw Failure() }
        var end = index + 1
        while end < bytes.count {
            let byte = bytes[end]
            if byte == 0x22 {
                // Printable ASCII only: the bytes are the key, and valid.
                let raw = UnsafeBufferPointer(rebasing: bytes[(index + 1)..<end])
                index = end + 1
                return keys.position(of: raw)
            }
            // An escape or a non-ASCII byte: the full reading (unescaping, UTF-8 validation).
            if byte == 0x5C || byte >= 0x80 { break }
            guard byte >= 0x20 else { throw Failure() }
            end += 1
        }
        var text = try string()
        return text.withUTF8 { keys.position(of: $0) }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw Failure() }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw Failure() }
        index += count
    }

    /// A string, unescaped; control characters, bad escapes, lone surrogates and invalid UTF-8 fail.
    public mutating func string() throws(Failure) -> String {
        guard index < bytes.count, bytes[index] == 0x22 else { throw Failure() }
        index += 1
        let start = index
        // Every byte ORed together: below 0x80, the string is ASCII and needs no UTF-8 validation.
        // `String(validating:as:)` costs about 950 instructions a string, most of them generic
        // metadata lookups, where decoding ASCII costs a tenth of that: a push has about 15 strings.
        var seen: UInt8 = 0
        // The common case: no escapes, so the bytes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x22 {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if seen < 0x80 { return String(decoding: raw, as: UTF8.self) }
                guard let text = String(validating: raw, as: UTF8.self) else { throw Failure() }
                return text
            }
            if byte == 0x5C { break }
            guard byte >= 0x20 else { throw Failure() }
            seen |= byte
            index += 1
        }
        var scalars = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case 0x22:
                guard let text = String(validating: scalars, as: UTF8.self) else { throw Failure() }
                return text
            case 0x5C:
                guard index < bytes.count else { throw Failure() }
                let escape = bytes[index]
                index += 1
                switch escape {
                case 0x22, 0x5C, 0x2F: scalars.append(escape)
                case 0x62: scalars.append(0x08)
                case 0x66: scalars.append(0x0C)
                case 0x6E: scalars.append(0x0A)
                case 0x72: scalars.append(0x0D)
                case 0x74: scalars.append(0x09)
                case 0x75:
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        guard index + 1 < bytes.count, bytes[index] == 0x5C, bytes[index + 1] == 0x75 else { throw Failure() }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw Failure() }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(code) {
                        throw Failure()
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw Failure() }
                    scalars.append(contentsOf: UTF8.encode(scalar).map(Array.init) ?? [])
                default:
                    throw Failure()
                }
            default:
                guard byte >= 0x20 else { throw Failure() }
                scalars.append(byte)
            }
        }
        throw Failure()
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw Failure() }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw Failure()
            }
            code = code << 4 | digit
        }
        return code
    }
}
