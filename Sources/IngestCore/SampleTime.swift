/// The `t` member of a Motion plugin message: seconds since the Unix epoch as a decimal string.
///
/// Parsed exactly into integer nanoseconds: the sample prints a Swift `Double`
/// (`1674790238.1234567`), and going through `Double` would round the last digits. Up to nine
/// fraction digits are kept, further digits are truncated (still required to be digits).
/// Signs, exponents and whitespace are refused: a wall-clock time after 1970 never needs them.
enum SampleTime {
    /// Why a `t` string is not a time, with the offset inside the string.
    struct Failure: Error, Sendable, Hashable {
        var offset: Int
        var expected: String
    }

    static func parseNanoseconds(_ text: UnsafeRawBufferPointer) -> Result<Int64, Failure> {
        let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
        var i = 0
        var seconds: Int64 = 0
        while i < text.count, text[i] >= zero, text[i] <= nine {
            let digit = Int64(text[i] &- zero)
            let (times10, o1) = seconds.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(digit)
            // Past Int64.max nanoseconds (year 2262) the time cannot be represented.
            guard !o1, !o2, sum <= Int64.max / 1_000_000_000 else {
                return .failure(Failure(offset: i, expected: "at most \(Int64.max / 1_000_000_000) seconds"))
            }
            seconds = sum
            i += 1
        }
        guard i > 0 else {
            return .failure(Failure(offset: 0, expected: "a digit: seconds since the Unix epoch, e.g. \"1674790238.1234567\""))
        }
        var fraction: Int64 = 0
        var fractionDigits = 0
        if i < text.count {
            guard text[i] == UInt8(ascii: ".") else {
                return .failure(Failure(offset: i, expected: "a digit or '.' (no sign, exponent or spaces)"))
            }
            i += 1
            let fractionStart = i
            while i < text.count {
                guard text[i] >= zero, text[i] <= nine else {
                    return .failure(Failure(offset: i, expected: "a fraction digit (no exponent or spaces)"))
                }
                if fractionDigits < 9 {
                    fraction = fraction * 10 + Int64(text[i] &- zero)
                    fractionDigits += 1
                }
                i += 1
            }
            guard i > fractionStart else {
                return .failure(Failure(offset: i, expected: "at least one digit after '.'"))
            }
        }
        while fractionDigits < 9 {
            fraction *= 10
            fractionDigits += 1
        }
        let (total, overflow) = (seconds * 1_000_000_000).addingReportingOverflow(fraction)
        guard !overflow else {
            return .failure(Failure(offset: 0, expected: "a time before year 2262 (Int64 nanoseconds)"))
        }
        return .success(total)
    }
}
