/// The difference between two trace instants (`t_ns`), exactly.
///
/// `t_ns` is any `Int64`, so `b - a` can need 65 bits: −2⁶³ and 2⁶³ − 1 are 2⁶⁴ − 1 ns apart,
/// and a wrapping subtraction made that "−1 ns", which a tolerance then let pass. The difference
/// is therefore kept as a sign and a `UInt64` magnitude, which hold every difference exactly.
public struct TraceTimeDifference: Sendable, Hashable, CustomStringConvertible {
    /// `true` when `b` is earlier than `a`.
    public let isNegative: Bool
    /// `|b - a|` in nanoseconds.
    public let magnitude: UInt64

    /// `b - a`.
    public init(from a: Int64, to b: Int64) {
        let wrapped = UInt64(bitPattern: b &- a)
        // Modulo 2⁶⁴ the wrapped value is the true difference; its sign comes from the order.
        if b >= a {
            isNegative = false
            magnitude = wrapped
        } else {
            isNegative = true
            magnitude = 0 &- wrapped
        }
    }

    /// The difference as an `Int64`, saturated at `Int64.min`/`Int64.max` when it does not fit.
    public var saturatingNanoseconds: Int64 {
        if isNegative { return magnitude >= UInt64(Int64.max) + 1 ? .min : -Int64(magnitude) }
        return magnitude > UInt64(Int64.max) ? .max : Int64(magnitude)
    }

    /// `+12 ns`, `-3 ns`, `+0 ns`: exact.
    public var description: String { "\(isNegative ? "-" : "+")\(magnitude) ns" }
}
