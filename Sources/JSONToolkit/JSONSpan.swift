/// Finds the exact text of a top-level member's value in a JSON object, without re-encoding it, so
/// a stored order is byte for byte what the backend sent. Read with ``JSONReader``: on anything that
/// is not a valid JSON object it returns nil.
public enum JSONSpan {
    /// The raw text of `key`'s value in the top-level object `text` (its first occurrence), or nil.
    public static func member(_ key: String, in text: String) -> Substring? {
        let bytes = Array(text.utf8)
        let found: Range<Int>? = bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            var found: Range<Int>?
            do {
                guard reader.peek() == 0x7B else { return nil }
                try reader.object { (reader, name) throws(JSONReader.Failure) in
                    reader.skipWhitespace()
                    let start = reader.index
                    _ = try reader.value(depth: 1)
                    if name == key, found == nil { found = start..<reader.index }
                }
            } catch {
                return nil
            }
            return found
        }
        guard let found else { return nil }
        let utf8 = text.utf8
        let lower = utf8.index(utf8.startIndex, offsetBy: found.lowerBound)
        let upper = utf8.index(utf8.startIndex, offsetBy: found.upperBound)
        return text[lower..<upper]
    }
}
