import Foundation

extension Checked {
    /// A number from `JSONSerialization` that is a JSON integer within ±2^53 (see
    /// ``jsonInteger(_:)-(Double)``); nil for a Boolean, a fraction, or a value out of range. On
    /// Linux `1 is Bool` is true for an `NSNumber`, so a Boolean is told apart by its type code.
    public static func jsonInteger(_ value: Any?) -> Int64? {
        guard let value, !(value is String), let number = value as? NSNumber,
              number.objCType.pointee != CChar(UInt8(ascii: "c"))
        else { return nil }
        return jsonInteger(number.doubleValue)
    }

    /// A number from `JSONSerialization` (not a string, not a Boolean) as a Double.
    public static func jsonNumber(_ value: Any?) -> Double? {
        guard let value, !(value is String), let number = value as? NSNumber,
              number.objCType.pointee != CChar(UInt8(ascii: "c"))
        else { return nil }
        return number.doubleValue
    }
}
