/// Finds the exact text of a top-level member's value in a JSON object, without re-encoding it, so
/// the stored order is byte for byte what the backend sent (and no time is spent re-serialising).
/// The input must already be known to be valid JSON; on anything unexpected it returns nil.
public enum JSONSpan {
    /// The raw text of `key`'s value in the top-level object `text`, or nil.
    public static func member(_ key: String, in text: String) -> Substring? {
        let bytes = Array(text.utf8)
        var index = 0
        func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }
        /// Skips a string starting at `index` (on its quote); returns its raw contents' range.
        func skipString() -> Range<Int>? {
            guard index < bytes.count, bytes[index] == 0x22 else { return nil }
            let start = index + 1
            index += 1
            while index < bytes.count {
                if bytes[index] == 0x5C { index += 2; continue }
                if bytes[index] == 0x22 { index += 1; return start..<(index - 1) }
                index += 1
            }
            return nil
        }
        func skipValue() -> Bool {
            skipWhitespace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case 0x22:
                return skipString() != nil
            case 0x7B, 0x5B:
                var depth = 0
                while index < bytes.count {
                    switch bytes[index] {
                    case 0x22:
                        guard skipString() != nil else { return false }
                        continue
                    case 0x7B, 0x5B:
                        depth += 1
                    case 0x7D, 0x5D:
                        depth -= 1
                        if depth == 0 { index += 1; return true }
                    default:
                        break
                    }
                    index += 1
                }
                return false
            default:
                while index < bytes.count, ![0x2C, 0x7D, 0x5D, 0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
                return true
            }
        }
        skipWhitespace()
        guard index < bytes.count, bytes[index] == 0x7B else { return nil }
        index += 1
        let wanted = Array(key.utf8)
        while true {
            skipWhitespace()
            guard let name = skipString() else { return nil }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == 0x3A else { return nil }
            index += 1
            skipWhitespace()
            let valueStart = index
            guard skipValue() else { return nil }
            if Array(bytes[name]) == wanted {
                let utf8 = text.utf8
                let lower = utf8.index(utf8.startIndex, offsetBy: valueStart)
                let upper = utf8.index(utf8.startIndex, offsetBy: index)
                return text[lower..<upper]
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == 0x2C else { return nil }
            index += 1
        }
    }
}
