import Emulation
import ReplayKit

/// `tether replay --fault` on the virtual link: the per-frame faults of the run decide the fate of
/// each recorded notification and response the link would deliver, as they do for the frames the
/// engine feeds the other cores; `disconnect:at=` is a link loss.
struct CentralLinkFaults: VirtualLinkFaults {
    let faults: PeerFrameFaults

    func deliveries(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> [Int64] {
        faults.deliveries(ofFrame: number, kind: Self.kind(of: opcode), capturedAt: .nanoseconds(capturedAtNs)).map(\.replayNanoseconds)
    }

    func attError(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> UInt8? {
        let kind = Self.kind(of: opcode)
        for fault in faults.faults {
            // An error in place of any response: a read's as well as a write's.
            if case .attError(let selector, let code) = fault, selector.matches(number: number, at: .nanoseconds(capturedAtNs), kind: kind) { return code }
        }
        return nil
    }

    var linkLosses: [(atNs: Int64, reconnectAfterNs: Int64?)] {
        faults.faults.compactMap { fault in
            guard case .disconnect(let at, let again) = fault else { return nil }
            return (at.replayNanoseconds, again?.replayNanoseconds)
        }
    }

    /// The fault syntax's kind of a peripheral's ATT PDU.
    static func kind(of opcode: UInt8) -> PeerFrameKind {
        switch opcode {
        case 0x1B: .notification
        case 0x1D: .indication
        case 0x13: .writeResponse
        case 0x01: .errorResponse
        case 0x03: .mtu
        default: .readResponse
        }
    }
}
