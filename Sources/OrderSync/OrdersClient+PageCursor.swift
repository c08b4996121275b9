import JSONToolkit

/// Reading a page's `next_cursor` before its orders are decoded, so the full sync can ask for the
/// next page at once: the pages come one cursor after another, and decoding 500 orders before the
/// next request made every page wait for the one before it to be decoded.
extension OrdersClient {
    /// The `next_cursor` of a page body, as ``decodePage(_:appliedAt:)`` reads it: the last member
    /// of that name, a non-empty string or an integer (nil for anything else, for its absence and for
    /// a bare array). Read backwards from the body's end when it is the last member and a string or
    /// null, as the backend writes it: no other byte is looked at. Otherwise the top level is walked
    /// with every other value checked and skipped. Throws when neither can read it. The orders
    /// themselves are not checked here; ``decodePage(_:appliedAt:)`` does that (the fuzzer holds the
    /// two to the same cursor on every body that one accepts).
    public static func pageCursor(_ body: [UInt8]) throws(SyncError) -> String? {
        let trailing: TrailingCursor = body.withUnsafeBufferPointer { trailingCursor($0) }
        if case .read(let cursor) = trailing { return cursor }
        let walked: Result<String?, JSONReader.Failure> = body.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONReader.Failure) in try walkedCursor(buffer) }
        }
        guard case .success(let cursor) = walked else { throw pageShapeError }
        return cursor
    }

    /// The top level walked: `next_cursor` read, every other value checked and skipped.
    private static func walkedCursor(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONReader.Failure) -> String? {
        var reader = JSONReader(buffer)
        var next: String?
        switch reader.peek() {
        case 0x5B:
            try reader.skipValue(depth: 0)
        case 0x7B:
            try reader.object { (reader, key) throws(JSONReader.Failure) in
                if key == "next_cursor" {
                    next = try reader.value(depth: 1).identifier
                } else {
                    try reader.skipValue(depth: 1)
                }
            }
        default:
            throw JSONReader.Failure()
        }
        reader.skipWhitespace()
        guard reader.atEnd else { throw JSONReader.Failure() }
        return next
    }

    private enum TrailingCursor {
        case read(String?)
        case elsewhere
    }

    /// `… , "next_cursor": "…" }` or `… , "next_cursor": null }` at the end of `bytes`, read backwards.
    /// The last byte (before whitespace) closes the top-level object, so the member just before it is
    /// the object's last: its value is a string found by its first quote not escaped (a quote inside a
    /// JSON string always is), its key the exact bytes `"next_cursor"` with `,` or `{` before them.
    private static func trailingCursor(_ bytes: UnsafeBufferPointer<UInt8>) -> TrailingCursor {
        var index = bytes.count - 1
        func skipWhitespace() {
            while index >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index -= 1 }
        }
        skipWhitespace()
        guard index >= 0, bytes[index] == 0x7D else { return .elsewhere }
        index -= 1
        skipWhitespace()
        guard index >= 0 else { return .elsewhere }
        let cursor: String?
        if bytes[index] == 0x22 {
            let close = index
            index -= 1
            while index >= 0 {
                if bytes[index] == 0x22 {
                    var slashes = 0
                    while index - slashes - 1 >= 0, bytes[index - slashes - 1] == 0x5C { slashes += 1 }
                    if slashes % 2 == 0 { break }
                }
                index -= 1
            }
            guard index >= 0 else { return .elsewhere }
            var reader = JSONReader(UnsafeBufferPointer(rebasing: bytes[index...close]))
            guard let text = try? reader.string(), reader.atEnd else { return .elsewhere }
            cursor = text.isEmpty ? nil : text
        } else if index >= 3, bytes[(index - 3)...index].elementsEqual("null".utf8) {
            cursor = nil
            index -= 3
        } else {
            return .elsewhere
        }
        index -= 1
        skipWhitespace()
        guard index >= 0, bytes[index] == 0x3A else { return .elsewhere }
        index -= 1
        skipWhitespace()
        let key = Array(#""next_cursor""#.utf8)
        guard index - key.count + 1 >= 0, bytes[(index - key.count + 1)...index].elementsEqual(key) else { return .elsewhere }
        index -= key.count
        skipWhitespace()
        guard index >= 0, bytes[index] == 0x2C || bytes[index] == 0x7B else { return .elsewhere }
        return .read(cursor)
    }
}
