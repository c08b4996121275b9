/// Numbers: JSON's grammar checked byte by byte, the value read without `strtod` where that is
/// exact, and integers past 2^53 never read as ones within it.
extension JSONReader {
    /// A number by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    public mutating func number() throws(Failure) -> Double {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - from
        }
        let negative = index < bytes.count && bytes[index] == 0x2D
        if negative { index += 1 }
        guard index < bytes.count else { throw Failure() }
        let integerStart = index
        if bytes[index] == 0x30 {
            index += 1
        } else if digits() == 0 {
            throw Failure()
        }
        let integerDigits = integerStart..<index
        var exponent = false
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            guard digits() > 0 else { throw Failure() }
        }
        if index < bytes.count, bytes[index] == 0x65 || bytes[index] == 0x45 {
            exponent = true
            index += 1
            if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D { index += 1 }
            guard digits() > 0 else { throw Failure() }
        }
        if let exact = Self.exactly(UnsafeBufferPointer(rebasing: bytes[start..<index]), negative: negative) {
            return exact
        }
        guard var value = Double(text(start..<index)), value.isFinite else { throw Failure() }
        // 2^53 + 1 rounds to 2^53 as a Double: an integer part past ±2^53 must never read as one
        // within it, or an out-of-range id or version would pass the check (DESIGN §10).
        if !exponent, Self.exceedsTwoToThe53(UnsafeBufferPointer(rebasing: bytes[integerDigits])),
           value.magnitude <= Self.twoToThe53 {
            value = negative ? -Self.twoToThe53.nextUp : Self.twoToThe53.nextUp
        }
        return value
    }

    private static let twoToThe53 = 9_007_199_254_740_992.0

    /// True when the decimal digits (no sign, no leading zero) are greater than 2^53.
    private static func exceedsTwoToThe53(_ digits: UnsafeBufferPointer<UInt8>) -> Bool {
        digits.count > twoToThe53Digits.count
            || (digits.count == twoToThe53Digits.count && twoToThe53Digits.lexicographicallyPrecedes(digits))
    }

    private static let twoToThe53Digits: [UInt8] = Array("9007199254740992".utf8)

    /// Exact powers of ten as doubles (10^22 is the largest a double holds exactly).
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
        1e21, 1e22,
    ]

    /// The value of a number already checked against JSON's grammar, computed without `strtod` when
    /// that is exact (Clinger's fast path): at most 15 significant digits, so the digits are an integer
    /// below 2^53 that a double holds exactly, scaled by a power of ten of at most 22, which a double
    /// also holds exactly; one multiplication or division of two exact doubles is correctly rounded,
    /// as `strtod` rounds. Nil for anything else (more digits, a larger exponent), which `strtod` reads.
    /// A push or an order event has about five numbers; through `strtod` and two `String`s each cost
    /// about 2,400 instructions.
    private static func exactly(_ text: UnsafeBufferPointer<UInt8>, negative: Bool) -> Double? {
        var mantissa: UInt64 = 0
        var digits = 0
        var scale = 0
        var position = negative ? 1 : 0
        var fraction = false
        while position < text.count {
            let byte = text[position]
            if byte == 0x2E {
                fraction = true
            } else if byte >= 0x30, byte <= 0x39 {
                // Leading zeros are not significant digits (JSON allows one, "0.000123" has several).
                if mantissa != 0 || byte != 0x30 { digits += 1 }
                guard digits <= 15 else { return nil }
                mantissa = mantissa &* 10 &+ UInt64(byte &- 0x30)
                if fraction { scale -= 1 }
            } else {
                break
            }
            position += 1
        }
        if position < text.count {
            // An exponent: `e` or `E`, a sign, then digits; more than three digits is beyond any fast path.
            position += 1
            var exponentNegative = false
            if text[position] == 0x2B || text[position] == 0x2D {
                exponentNegative = text[position] == 0x2D
                position += 1
            }
            guard text.count - position <= 3 else { return nil }
            var exponent = 0
            while position < text.count {
                exponent = exponent * 10 + Int(text[position] &- 0x30)
                position += 1
            }
            scale += exponentNegative ? -exponent : exponent
        }
        guard scale >= -22, scale <= 22 else { return nil }
        let magnitude = Double(mantissa)
        let value = scale < 0 ? magnitude / powersOfTen[-scale] : magnitude * powersOfTen[scale]
        return negative ? -value : value
    }
}
