extension Checked {
    /// Unix seconds of an RFC 3339 timestamp (`2026-11-22T10:00:00.5Z`, `…+02:00`), read strictly
    /// and by hand: Foundation's `ISO8601DateFormatter` (ICU underneath) stopped the process with a
    /// SIGFPE on a fraction of a hundred digits (found by the token-pair fuzzer). Years 0000–9999,
    /// any number of fraction digits (nanoseconds kept), `T`/`t`/space, `Z`/`z` or an offset.
    public static func rfc3339(_ text: some StringProtocol) -> Double? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + count)] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
              let second = number(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var nanoseconds = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                if digits < 9 { nanoseconds = nanoseconds * 10 + Int(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 9) { nanoseconds *= 10 }
        }
        var offset = 0
        if expect("Zz") {
            offset = 0
        } else {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") else {
                return nil
            }
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = number(2), expect(":"), let offsetMinutes = number(2),
                  (0...23).contains(offsetHours), (0...59).contains(offsetMinutes)
            else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard index == bytes.count else { return nil }
        // Every field is bounded above, so nothing here can overflow.
        let days = daysFromCivil(year: year, month: month, day: day)
        let whole = days * 86_400 + Int64(hour * 3600 + minute * 60 + second - offset)
        return Double(whole) + Double(nanoseconds) / 1e9
    }

    /// Unix milliseconds as RFC 3339 UTC: `2026-11-24T06:19:00.092Z` with `fraction`, else
    /// `2026-11-24T06:19:00Z` (the fraction truncated, as a clock reads). Written by hand, like the
    /// parser above: Foundation's `ISO8601DateFormatter` loads ICU, whose data pages cost the agent
    /// about 2.4 MB of resident memory for one timestamp per log line (docs/PERFORMANCE.md, "The
    /// agent's memory"), and builds a formatter per call. Nil outside years 0000–9999 (the parser's
    /// range), so any value from a file is safe.
    public static func rfc3339(unixMilliseconds: Int64, fraction: Bool) -> String? {
        // 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
        guard unixMilliseconds >= -62_167_219_200_000, unixMilliseconds <= 253_402_300_799_999 else { return nil }
        let days = unixMilliseconds >= 0 ? unixMilliseconds / 86_400_000 : (unixMilliseconds - 86_399_999) / 86_400_000
        let withinDay = Int(unixMilliseconds - days * 86_400_000)
        let (year, month, day) = civilFromDays(days)
        let seconds = withinDay / 1000
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4); bytes.append(UInt8(ascii: "-"))
        digits(month, 2); bytes.append(UInt8(ascii: "-"))
        digits(day, 2); bytes.append(UInt8(ascii: "T"))
        digits(seconds / 3600, 2); bytes.append(UInt8(ascii: ":"))
        digits(seconds / 60 % 60, 2); bytes.append(UInt8(ascii: ":"))
        digits(seconds % 60, 2)
        if fraction {
            bytes.append(UInt8(ascii: "."))
            digits(withinDay % 1000, 3)
        }
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm, the
    /// inverse of ``daysFromCivil(year:month:day:)``). Callers bound `days` to years 0…9999.
    public static func civilFromDays(_ days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). Callers
    /// bound the year (0…9999), month and day first.
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
