#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point in time with microsecond precision, counted from the Unix epoch.
///
/// We do not use Foundation's `Date` for activity values because it is a `Double`: a date that goes
/// through text (RFC 3339 in the local API) and back would not always compare equal. An integer
/// count of microseconds round-trips exactly through both the binary encoding and JSON.
public struct Timestamp: Sendable, Hashable, Comparable {
    public var microsecondsSinceEpoch: Int64

    public init(microsecondsSinceEpoch: Int64) {
        self.microsecondsSinceEpoch = microsecondsSinceEpoch
    }

    public init(secondsSinceEpoch: Int64) {
        self.microsecondsSinceEpoch = secondsSinceEpoch * 1_000_000
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch
    }

    /// The wall clock now.
    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(microsecondsSinceEpoch: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
    }

    public func adding(microseconds: Int64) -> Timestamp {
        let (sum, overflow) = microsecondsSinceEpoch.addingReportingOverflow(microseconds)
        return Timestamp(microsecondsSinceEpoch: overflow ? (microseconds > 0 ? .max : .min) : sum)
    }

    public func adding(seconds: Int64) -> Timestamp {
        let (us, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        return adding(microseconds: overflow ? (seconds > 0 ? .max : .min) : us)
    }

    /// How long from `self` to `now`, for people: "40s", "3m", "2h", "5d" (never negative).
    public func age(at now: Timestamp) -> String {
        let seconds = max(0, microseconds(until: now) / 1_000_000)
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        if seconds < 86_400 { return "\(seconds / 3600)h" }
        return "\(seconds / 86_400)d"
    }

    /// Microseconds from `self` to `other` (positive when `other` is later), saturating.
    public func microseconds(until other: Timestamp) -> Int64 {
        let (d, overflow) = other.microsecondsSinceEpoch.subtractingReportingOverflow(microsecondsSinceEpoch)
        return overflow ? (other > self ? .max : .min) : d
    }

    /// RFC 3339 only describes years 0000–9999; we keep dates where every tool can print them.
    public static let earliest = Timestamp(microsecondsSinceEpoch: -62_135_596_800_000_000)  // 0001-01-01T00:00:00Z
    public static let latest = Timestamp(microsecondsSinceEpoch: 253_402_300_799_999_999)  // 9999-12-31T23:59:59.999999Z

    public var isRepresentable: Bool { self >= Timestamp.earliest && self <= Timestamp.latest }
}

// MARK: - RFC 3339

extension Timestamp {
    /// UTC, with the shortest fraction that is exact (none on a whole second), so that what a user
    /// typed comes back as they typed it.
    /// Precondition: `isRepresentable`.
    public var rfc3339: String {
        let us = microsecondsSinceEpoch
        var seconds = us / 1_000_000
        var fraction = us % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = Timestamp.civil(fromDays: days)
        var out = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        out += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        if fraction != 0 {
            var digits = Substring(pad(fraction, 6))
            while digits.last == "0" { digits.removeLast() }
            out += "." + digits
        }
        return out + "Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`. `t`/`z` and a space separator are accepted
    /// as RFC 3339 allows. Digits after the sixth fractional one must be zero: we do not silently
    /// round what the user wrote.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in 0..<n {
                let c = b[i + k]
                guard c >= 0x30, c <= 0x39 else { return nil }
                v = v * 10 + Int64(c - 0x30)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2) else {
            return nil
        }
        guard i < b.count, b[i] == 0x54 || b[i] == 0x74 || b[i] == 0x20 else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2) else {
            return nil
        }
        var micros: Int64 = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var count = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                let d = Int64(b[i] - 0x30)
                if count < 6 {
                    micros = micros * 10 + d
                } else if d != 0 {
                    return nil
                }
                count += 1
                i += 1
            }
            guard count > 0 else { return nil }
            for _ in count..<max(count, 6) { micros *= 10 }
        }
        var offsetSeconds: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            let sign: Int64 = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2), expect(0x3A), let om = digits(2), oh < 24, om < 60 else { return nil }
            offsetSeconds = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        guard (1...12).contains(month), day >= 1, day <= Timestamp.daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60  // leap seconds are not representable on Linux clocks
        else { return nil }
        let days = Timestamp.days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let result = Timestamp(microsecondsSinceEpoch: seconds * 1_000_000 + micros)
        guard result.isRepresentable else { return nil }
        self = result
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days: exact over the proleptic Gregorian calendar.
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d)
    }
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let s = String(value)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}

extension Timestamp: CustomStringConvertible {
    public var description: String { isRepresentable ? rfc3339 : "\(microsecondsSinceEpoch)µs" }
}
