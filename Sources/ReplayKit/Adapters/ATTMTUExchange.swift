import Dissectors

/// What a BLE link's ATT MTU exchange settled (Core Specification Vol 3 Part F, 3.4.2): the
/// client's offer in its Exchange MTU Request (0x02), the server's in its Exchange MTU Response
/// (0x03). Every phone-side BLE adapter keeps one per link, and hands its core
/// ``maxPayload`` when the link comes up, as the live host's bridge does.
public struct ATTMTUExchange: Sendable, Hashable {
    /// The client's (the phone's) offer; `nil` until its request is seen.
    public var client: UInt16?
    /// The server's (the peripheral's) offer; `nil` until its response is seen.
    public var server: UInt16?

    /// No offer seen yet: the link's MTU is the default, 23.
    public init(client: UInt16? = nil, server: UInt16? = nil) {
        self.client = client
        self.server = server
    }

    /// The ATT MTU every link starts with, and keeps when a side never offers another.
    public static let defaultMTU: UInt16 = 23

    /// The offer `record` makes, when it is an Exchange MTU Request or Response: the client's or
    /// the server's, the other `nil`. A value shorter than its two bytes offers `nil`.
    public static func offer(in record: ATTRecord) -> (client: UInt16?, server: UInt16?)? {
        // Asked of every ATT record an adapter reads: the opcode first, the PDU only for these two.
        guard record.opcode == .exchangeMTURequest || record.opcode == .exchangeMTUResponse else { return nil }
        switch record.pdu {
        case .exchangeMTURequest(let mtu): return (mtu, nil)
        case .exchangeMTUResponse(let mtu): return (nil, mtu)
        case .other(.exchangeMTURequest, _), .other(.exchangeMTUResponse, _): return (nil, nil)
        default: return nil
        }
    }

    /// Takes the offers given (a `nil` keeps what was offered before).
    public mutating func note(client: UInt16?, server: UInt16?) {
        if let client { self.client = client }
        if let server { self.server = server }
    }

    /// The largest value one write or notification carries: the smaller offer (23 for a side that
    /// made none) less the 3-byte ATT header, and never below 20, the default MTU's.
    public var maxPayload: Int {
        max(20, Int(min(client ?? Self.defaultMTU, server ?? Self.defaultMTU)) - 3)
    }
}
