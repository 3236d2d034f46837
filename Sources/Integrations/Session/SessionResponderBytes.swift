import ReplayKit
import SessionCore

/// Reading and writing the session link's frame bytes, for the session responder: frame ends,
/// control items reassembled from their frames, little-endian fields.
extension SessionResponder {
    static func isDurable(_ channel: UInt8) -> Bool { [0x01, 0x05, 0x06, 0x07, 0x08].contains(channel) }

    static func end(of frame: SessionFrame) -> UInt32 {
        frame.flags.contains(.last) ? SessionLink.complete : frame.offset &+ UInt32(frame.bytes.count)
    }

    /// The frame in `bytes`, or `nil` when they are not one (the core reports that itself).
    static func decodeFrame(_ bytes: [UInt8]) -> SessionFrame? {
        do throws(SessionFrameError) {
            return try SessionFrame.decode(bytes)
        } catch {
            return nil
        }
    }

    /// The frame in `bytes` read with a direction's `context` (a compact one completed from it;
    /// ``SessionFrameContext/decode(_:)``), or `nil` when they are not one.
    static func decodeFrame(_ bytes: [UInt8], with context: inout SessionFrameContext) -> SessionFrame? {
        do throws(SessionFrameError) {
            return try context.decode(bytes)
        } catch {
            return nil
        }
    }

    /// A single-frame control item, or `nil` when it does not decode (the core reports that itself).
    static func decodeControl(_ frame: SessionFrame) -> SessionControl? {
        guard frame.channel == .control, frame.flags.contains(.first), frame.flags.contains(.last) else { return nil }
        do throws(SessionFrameError) {
            return try SessionControl.decode(frame.bytes)
        } catch {
            return nil
        }
    }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }

    static func put(_ value: UInt32, into bytes: inout [UInt8], at: Int) {
        for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
    }

    /// Reassembles a side's control items from their frames (kept by offset).
    struct ControlAssembler: Sendable {
        private var parts: [UInt32: [UInt32: [UInt8]]] = [:]
        private var totals: [UInt32: UInt32] = [:]

        mutating func add(_ frame: SessionFrame) -> SessionControl? {
            if frame.flags.contains(.first) && frame.flags.contains(.last) { return SessionResponder.decodeControl(frame) }
            if let total = frame.total { totals[frame.id] = total }
            parts[frame.id, default: [:]][frame.offset] = frame.bytes
            guard let total = totals[frame.id], let pieces = parts[frame.id] else { return nil }
            var payload: [UInt8] = []
            while UInt32(payload.count) < total, let next = pieces[UInt32(payload.count)] { payload += next }
            guard UInt32(payload.count) == total else { return nil }
            parts[frame.id] = nil
            totals[frame.id] = nil
            return SessionResponder.decodeControl(SessionFrame(channel: .control, flags: [.first, .last], id: frame.id, totalOrOffset: total, bytes: payload))
        }
    }
}
