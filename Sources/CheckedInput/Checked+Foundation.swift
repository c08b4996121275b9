import Foundation

extension Checked {
    /// A number from `JSONSerialization` that is a JSON integer within ±2^53 (see
    /// ``jsonInteger(_:)-(Double)``); nil for a Boolean, a fraction, or a value out of range. On
    /// Linux `1 is Bool` is true for an `NSNumber`, so a Boolean is told apart by its type code.
    public static func jsonInteger(_ value: Any?) -> Int64? {
        guard let value, !(value is String), let number = value as? NSNumber else { return nil }
        let limit = largestExactJSONInteger.magnitude
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "B"):
            return nil
        case UInt8(ascii: "d"), UInt8(ascii: "f"):
            return jsonInteger(number.doubleValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"), UInt8(ascii: "S"), UInt8(ascii: "C"):
            // An integer that JSONSerialization kept exact: checked as it is, not through a double
            // (9007199254740993 would round to 2^53 and pass).
            let unsigned = number.uint64Value
            return unsigned <= limit ? Int64(unsigned) : nil
        default:
            let signed = number.int64Value
            return signed.magnitude <= limit ? signed : nil
        }
    }

    /// A number from `JSONSerialization` (not a string, not a Boolean) as a Double.
    public static func jsonNumber(_ value: Any?) -> Double? {
        guard let value, !(value is String), let number = value as? NSNumber,
              number.objCType.pointee != CChar(UInt8(ascii: "c"))
        else { return nil }
        let double = number.doubleValue
        return double.isFinite ? double : nil
    }
}
