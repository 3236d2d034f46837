import MonkeyC

// One frame of the session link: one ATT value, written by the phone to the write characteristic
// (write without response) or notified by the watch on the notify characteristic
// (docs/session-link.md, "Frames"). Every integer is little-endian.
//
//   offset  size  field
//   0       1     channel
//   1       1     flags
//   2       4     id        (u32) the item's id on its channel
//   6       4     total     (u32) when flags has FIRST: the item's length; the bytes start at 0
//                 offset    (u32) otherwise: where in the item the bytes start
//   10      n     bytes     a piece of the item

/// Constants of the session link (docs/session-link.md).
public enum SessionLink {
    /// The protocol version carried in the handshake.
    public static let version: UInt8 = 1
    /// Bytes of the frame header before the item bytes.
    public static let headerLength = 10
    /// Bytes of a compact frame's header (page version 3, "Compact frames"): channel and id tag,
    /// flags, offset mod 2¹⁶.
    public static let compactHeaderLength = 4
    /// Bit 7 of byte 0: the frame is compact (no channel of the link has it).
    public static let compactMarker: UInt8 = 0x80
    /// The smallest ATT payload (ATT MTU − 3) the link works with: BLE's minimum MTU of 23 gives 20.
    /// A smaller `maxPayload` at link-up is taken as 20.
    public static let minimumFrameLength = 20
    /// The largest ATT attribute value (Core Specification Vol 3 Part F 3.2.9); a larger `maxPayload`
    /// is taken as 512.
    public static let maximumFrameLength = 512
    /// Frames a sender may have beyond the receiver's acknowledged offset on one channel lane when
    /// the handshake that bound the link did not negotiate a window (a peer that states none, as
    /// every peer of link version 1 before the window option): what both sides use then.
    public static let windowFrames = 8
    /// The largest window a side may state in its handshake (the option is a u16; Tether caps it so
    /// that a receiver's buffer of frames ahead of a gap stays bounded: 4096 frames of 502 bytes).
    public static let maximumWindowFrames = 4096
    /// The `received` value of an ACK meaning "the item is complete and delivered".
    public static let complete: UInt32 = .max
    /// Longest control item (channel 0x00) a receiver reassembles.
    public static let maximumControlLength = 256
}

/// The GATT layout of the session link: one primary service, a write characteristic (phone →
/// watch, write without response) and a notify characteristic (watch → phone). The UUIDs read
/// `TE`, a 16-bit number, then `SESSIONLINK` and 01 in ASCII.
public enum SessionLinkGATT {
    /// The primary service.
    public static let service = "54450001-5345-5353-494f-4e4c494e4b01"
    /// Phone → watch frames, written without response.
    public static let writeCharacteristic = "54450002-5345-5353-494f-4e4c494e4b01"
    /// Watch → phone frames, notified (the phone enables notifications through the CCCD).
    public static let notifyCharacteristic = "54450003-5345-5353-494f-4e4c494e4b01"
}

/// Byte 0 of a frame: which kind of item the frame carries. An open set: unknown values are kept
/// (the core reports them as a violation).
public struct SessionChannel: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a wire byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x00: link control (handshake, ACK, ERROR, CANCEL, STATUS); never acknowledged.
    public static let control = SessionChannel(rawValue: 0x00)
    /// 0x01: an application context (Monkey C dictionary); latest wins.
    public static let applicationContext = SessionChannel(rawValue: 0x01)
    /// 0x02: an interactive message (Monkey C dictionary).
    public static let message = SessionChannel(rawValue: 0x02)
    /// 0x03: an interactive data message (raw bytes).
    public static let messageData = SessionChannel(rawValue: 0x03)
    /// 0x04: the reply to a message: `inReplyTo u32`, then the reply (dictionary or bytes, as the message).
    public static let messageReply = SessionChannel(rawValue: 0x04)
    /// 0x05: a user info transfer (Monkey C dictionary); FIFO, guaranteed, exactly once.
    public static let userInfo = SessionChannel(rawValue: 0x05)
    /// 0x06: a complication user info transfer within the daily budget; high priority.
    public static let complicationUserInfo = SessionChannel(rawValue: 0x06)
    /// 0x07: a file transfer's metadata: `size u32`, then an optional Monkey C dictionary.
    public static let fileMetadata = SessionChannel(rawValue: 0x07)
    /// 0x08: a file's bytes; offsets are file offsets.
    public static let fileChunk = SessionChannel(rawValue: 0x08)

    /// Whether this version of the link defines the channel.
    public var isKnown: Bool { rawValue <= 0x08 }

    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `control`, `context`, `message`, `message-data`, `reply`, `user-info`, `complication`,
    /// `file-metadata`, `file-chunk`, else `channel 0xNN`.
    public var description: String {
        switch rawValue {
        case 0x00: "control"
        case 0x01: "context"
        case 0x02: "message"
        case 0x03: "message-data"
        case 0x04: "reply"
        case 0x05: "user-info"
        case 0x06: "complication"
        case 0x07: "file-metadata"
        case 0x08: "file-chunk"
        default: "channel 0x\(SessionDeviceID.hexDigits(rawValue))"
        }
    }
}

/// Byte 1 of a frame. Unknown bits are kept (the core refuses frames with reserved bits set).
public struct SessionFrameFlags: OptionSet, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a wire byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01: the frame starts its item; the u32 at byte 6 is the item's total length.
    public static let first = SessionFrameFlags(rawValue: 0x01)
    /// 0x02: the frame's bytes end its item (offset + count == total).
    public static let last = SessionFrameFlags(rawValue: 0x02)
    /// 0x04: the sender asks for an ACK now (the frame fills its window or ends its item).
    public static let needsAck = SessionFrameFlags(rawValue: 0x04)
    /// 0x08: every byte of the frame was sent before (a retransmission after a timeout or a resume).
    public static let retransmission = SessionFrameFlags(rawValue: 0x08)
    /// 0x10: message channels only: the sender waits for a reply.
    public static let expectsReply = SessionFrameFlags(rawValue: 0x10)
    /// 0x20: user info channels only: the item is the current complication user info.
    public static let currentComplication = SessionFrameFlags(rawValue: 0x20)
    /// 0xC0: reserved, sent as 0.
    public static let reserved = SessionFrameFlags(rawValue: 0xC0)

    /// Names of the set bits joined by `|` (`first|last|needs-ack`), `none` when empty.
    public var description: String {
        let names: [(SessionFrameFlags, String)] = [
            (.first, "first"), (.last, "last"), (.needsAck, "needs-ack"), (.retransmission, "retransmission"),
            (.expectsReply, "expects-reply"), (.currentComplication, "current-complication"),
        ]
        var parts = names.filter { contains($0.0) }.map(\.1)
        if !intersection(.reserved).isEmpty { parts.append("reserved 0x\(SessionDeviceID.hexDigits(rawValue & 0xC0))") }
        return parts.isEmpty ? "none" : parts.joined(separator: "|")
    }
}

/// One frame of the session link.
///
/// Decoding is total: ``decode(_:)`` gives a frame or a ``SessionFrameError`` naming the byte offset
/// and what was expected. It checks what one frame can show on its own — the header is complete; a
/// FIRST frame carries no more than its total and has LAST exactly when it carries all of it; a
/// continuation carries at least one byte and does not run past 2³² − 1 — and nothing about
/// channels or the item (that is ``SessionItem`` and the core's business).
public struct SessionFrame: Sendable, Hashable, CustomStringConvertible {
    /// Byte 0.
    public var channel: SessionChannel
    /// Byte 1.
    public var flags: SessionFrameFlags
    /// Bytes 2–5: the item's id on its channel.
    public var id: UInt32
    /// Bytes 6–9: the item's total length when ``flags`` has ``SessionFrameFlags/first``, else the
    /// offset of ``bytes`` in the item.
    public var totalOrOffset: UInt32
    /// The piece of the item.
    public var bytes: [UInt8]

    /// Creates a frame from its fields as they go on the wire.
    public init(channel: SessionChannel, flags: SessionFrameFlags, id: UInt32, totalOrOffset: UInt32, bytes: [UInt8]) {
        self.channel = channel
        self.flags = flags
        self.id = id
        self.totalOrOffset = totalOrOffset
        self.bytes = bytes
    }

    /// Where ``bytes`` start in the item: 0 for a FIRST frame.
    public var offset: UInt32 { flags.contains(.first) ? 0 : totalOrOffset }

    /// The item's total length, carried only by a FIRST frame.
    public var total: UInt32? { flags.contains(.first) ? totalOrOffset : nil }

    /// The frame's bytes on the wire.
    public func encode() -> [UInt8] {
        var output: [UInt8] = [channel.rawValue, flags.rawValue]
        output.reserveCapacity(SessionLink.headerLength + bytes.count)
        appendLittleEndian(id, to: &output)
        appendLittleEndian(totalOrOffset, to: &output)
        output += bytes
        return output
    }

    /// Reads one frame.
    /// - Throws: ``SessionFrameError`` with the offset of the problem in `bytes`.
    public static func decode(_ bytes: [UInt8]) throws(SessionFrameError) -> SessionFrame {
        guard bytes.count >= SessionLink.headerLength else {
            throw SessionFrameError(frame: 0, offset: bytes.count, problem: .truncated(
                expected: "the 10-byte frame header (channel, flags, id, total or offset)",
                needed: SessionLink.headerLength, available: bytes.count))
        }
        let flags = SessionFrameFlags(rawValue: bytes[1])
        let id = readLittleEndianUInt32(bytes, at: 2)
        let field = readLittleEndianUInt32(bytes, at: 6)
        let payload = Array(bytes[SessionLink.headerLength...])
        if flags.contains(.first) {
            guard UInt64(payload.count) <= UInt64(field) else {
                throw SessionFrameError(frame: 0, offset: SessionLink.headerLength + Int(field),
                                        problem: .firstFrameBeyondTotal(total: field, carried: payload.count))
            }
            let complete = UInt64(payload.count) == UInt64(field)
            guard complete == flags.contains(.last) else {
                throw SessionFrameError(frame: 0, offset: 1, problem: .lastFlagMismatch(
                    end: UInt64(payload.count), total: UInt64(field), lastSet: flags.contains(.last)))
            }
        } else {
            guard !payload.isEmpty else {
                throw SessionFrameError(frame: 0, offset: SessionLink.headerLength, problem: .continuationWithoutBytes)
            }
            guard UInt64(field) + UInt64(payload.count) <= UInt64(UInt32.max) else {
                throw SessionFrameError(frame: 0, offset: 6, problem: .offsetOverflow(offset: field, count: payload.count))
            }
        }
        return SessionFrame(channel: SessionChannel(rawValue: bytes[0]), flags: flags, id: id, totalOrOffset: field, bytes: payload)
    }

    /// One line for traces: `user-info #3 first|needs-ack total 40, 10 bytes`.
    public var description: String {
        let position = flags.contains(.first) ? "total \(totalOrOffset)" : "offset \(totalOrOffset)"
        return "\(channel) #\(id) \(flags) \(position), \(bytes.count) bytes"
    }

    /// The frames of a whole item sent from its start, each at most `maxFrameLength` bytes long:
    /// FIRST on the first, LAST on the final one, `extraFlags` (e.g. ``SessionFrameFlags/expectsReply``)
    /// on all. A zero-length item is one FIRST|LAST frame without bytes. `maxFrameLength` is clamped
    /// to ``SessionLink/minimumFrameLength``...``SessionLink/maximumFrameLength``.
    ///
    /// The core sends items through a window (``SessionLink/windowFrames``) and marks some frames
    /// ``SessionFrameFlags/needsAck``; this helper is the plain split used by documents and tests.
    public static func fragment(
        channel: SessionChannel,
        id: UInt32,
        payload: [UInt8],
        maxFrameLength: Int,
        extraFlags: SessionFrameFlags = []
    ) -> [SessionFrame] {
        let room = clampFrameLength(maxFrameLength) - SessionLink.headerLength
        var frames: [SessionFrame] = []
        var offset = 0
        repeat {
            let end = min(payload.count, offset + room)
            var flags = extraFlags
            if offset == 0 { flags.insert(.first) }
            if end == payload.count { flags.insert(.last) }
            frames.append(SessionFrame(
                channel: channel, flags: flags, id: id,
                totalOrOffset: offset == 0 ? UInt32(payload.count) : UInt32(offset),
                bytes: Array(payload[offset..<end])))
            offset = end
        } while offset < payload.count
        return frames
    }

    /// `maxPayload` clamped to the range the link works with.
    public static func clampFrameLength(_ length: Int) -> Int {
        min(max(length, SessionLink.minimumFrameLength), SessionLink.maximumFrameLength)
    }
}

/// Why bytes are not a frame, a sequence of frames making one item, or an item's payload: where
/// the problem is and what was expected there.
public struct SessionFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public enum Problem: Sendable, Hashable {
        /// Fewer than `needed` bytes were left for `expected`.
        case truncated(expected: String, needed: Int, available: Int)
        /// A FIRST frame carries more bytes than the total it announces.
        case firstFrameBeyondTotal(total: UInt32, carried: Int)
        /// LAST is set although the bytes do not reach the item's total, or clear although they do.
        case lastFlagMismatch(end: UInt64, total: UInt64, lastSet: Bool)
        /// A continuation frame (no FIRST) without bytes.
        case continuationWithoutBytes
        /// A continuation whose offset plus its bytes passes 2³² − 1.
        case offsetOverflow(offset: UInt32, count: Int)
        /// A sequence of frames that does not begin with a FIRST frame.
        case missingFirstFrame
        /// A frame whose channel or id differs from the item's first frame.
        case frameOfAnotherItem(channel: SessionChannel, id: UInt32)
        /// A frame whose offset is not where the previous frame ended.
        case unexpectedOffset(expected: UInt64, found: UInt32)
        /// Frames after the one with LAST.
        case framesAfterLast(count: Int)
        /// The sequence ended before the item's total was reached.
        case incompleteItem(received: Int, total: UInt32)
        /// Bytes left over after the last field of a control item or a fixed-size payload.
        case trailingBytes(count: Int)
        /// A compact frame whose byte 0 names a channel outside 0x01–0x08 (the raw low four bits).
        case compactChannel(UInt8)
        /// A compact frame with FIRST: an item always starts with a full frame.
        case compactFirstFrame
        /// A compact frame of a channel on which no frame came before in this binding: its id is unknown.
        case compactWithoutContext(channel: SessionChannel)
        /// A compact frame whose id tag (id mod 8) is not that of the channel's last frame.
        case compactIDMismatch(channel: SessionChannel, id: UInt32, tag: UInt8)
        /// A compact frame whose offset, taken as the nearest to the end of the channel's last frame,
        /// falls below 0.
        case compactOffsetBelowZero(end: UInt32, lowBits: UInt16)
        /// A handshake option whose length or value breaks its definition (`type`, what is wrong).
        case invalidHandshakeOption(type: UInt8, reason: String)
        /// The Monkey C value inside the payload does not decode.
        case monkeyC(MonkeyCDecodingError)
        /// The payload decodes but is not a property-list dictionary (what is wrong, where).
        case notAPropertyList(String)
    }

    /// Which frame of a sequence the offset is in (0 for a single frame); `nil` when the offset is
    /// into a reassembled item's payload.
    public var frame: Int?
    /// Byte offset of the problem.
    public var offset: Int
    /// What was wrong there.
    public var problem: Problem

    /// Creates an error.
    public init(frame: Int?, offset: Int, problem: Problem) {
        self.frame = frame
        self.offset = offset
        self.problem = problem
    }

    /// Where, what was expected, and what it means.
    public var description: String {
        let place = frame.map { "frame \($0), byte \(offset)" } ?? "item payload, byte \(offset)"
        let what: String
        switch problem {
        case let .truncated(expected, needed, available):
            what = "expected \(expected) (\(needed) bytes) but only \(available) remain; the frame or item was cut short"
        case let .firstFrameBeyondTotal(total, carried):
            what = "a FIRST frame carries \(carried) bytes but announces an item of \(total); the total is wrong"
        case let .lastFlagMismatch(end, total, lastSet):
            what = lastSet
                ? "LAST is set but the bytes end at \(end) of \(total); the item was cut short"
                : "the bytes reach the item's total \(total) but LAST is not set"
        case .continuationWithoutBytes:
            what = "a continuation frame (no FIRST) without bytes; every continuation carries at least one byte"
        case let .offsetOverflow(offset, count):
            what = "offset \(offset) plus \(count) bytes passes 2^32 - 1"
        case .missingFirstFrame:
            what = "expected a FIRST frame to start the item"
        case let .frameOfAnotherItem(channel, id):
            what = "a frame of \(channel) #\(id) inside another item; frames of one item must not interleave here"
        case let .unexpectedOffset(expected, found):
            what = "expected bytes at offset \(expected), found offset \(found); a frame is missing or cut short"
        case .framesAfterLast(let count):
            what = "\(count) frames after the frame with LAST"
        case let .incompleteItem(received, total):
            what = "the frames end after \(received) of \(total) bytes; the item is incomplete"
        case .trailingBytes(let count):
            what = "\(count) bytes after the last field"
        case .compactChannel(let value):
            what = "a compact frame of channel 0x\(String(value, radix: 16)); compact frames carry channels 0x01-0x08 only"
        case .compactFirstFrame:
            what = "a compact frame with FIRST; an item starts with a full 10-byte frame"
        case .compactWithoutContext(let channel):
            what = "a compact frame of \(channel), but no frame of \(channel) came before it in this binding; its id is unknown"
        case let .compactIDMismatch(channel, id, tag):
            what = "a compact frame of \(channel) with id tag \(tag), but the channel's last frame was #\(id) (tag \(id & 7)); a frame is missing"
        case let .compactOffsetBelowZero(end, lowBits):
            what = "a compact frame with offset bits 0x\(String(lowBits, radix: 16)) after a frame ending at \(end) gives an offset below 0"
        case let .invalidHandshakeOption(type, reason):
            what = "handshake option 0x\(String(type, radix: 16)): \(reason)"
        case .monkeyC(let inner):
            what = "the Monkey C value does not decode: \(inner)"
        case .notAPropertyList(let reason):
            what = "not a property-list dictionary: \(reason)"
        }
        return "session link \(place): \(what)"
    }
}

// MARK: - Compact frames

/// What a compact frame leaves out, for one direction of one binding (docs/session-link.md, page
/// version 3, "Compact frames"): for each data channel, the id and the end (offset + bytes) of the
/// last data frame that went that way on it.
///
/// A compact frame is a continuation frame with a 4-byte header:
///
///     offset  size  field
///     0       1     0x80 | (id mod 8) << 4 | channel (0x01–0x08)
///     1       1     flags (never FIRST)
///     2       2     offset mod 2¹⁶ (u16)
///     4       n     bytes (n ≥ 1)
///
/// Its id is the channel's last id; its offset is the one, among those with these low 16 bits,
/// nearest to the channel's last end (at most 32,768 below it, less than 32,768 above it). The
/// sender and the receiver of one direction each keep one context, start it empty when the link is
/// bound, and record every data frame in order; ATT's order makes both see the same frames. A
/// sender sends a frame compact only when ``compactAllowed(channel:id:offset:)`` says so, and
/// otherwise the full frame, which (re)establishes the channel's context.
public struct SessionFrameContext: Sendable, Hashable {
    /// Id and end of the last data frame of a channel.
    struct Entry: Sendable, Hashable {
        var id: UInt32
        var end: UInt32
    }

    /// Indexed by channel (0x01–0x08; index 0 unused).
    var entries: [Entry?] = Array(repeating: nil, count: 9)

    /// An empty context: every channel's first frame after it goes out whole.
    public init() {}

    /// Whether a continuation frame of item `id` on `channel` at `offset` may go out compact: the
    /// channel's last frame had this id and `offset` lies within −32,768…+32,767 of its end.
    public func compactAllowed(channel: SessionChannel, id: UInt32, offset: Int) -> Bool {
        guard (0x01...0x08).contains(channel.rawValue), let entry = entries[Int(channel.rawValue)], entry.id == id else {
            return false
        }
        let delta = offset - Int(entry.end)
        return delta >= -32_768 && delta < 32_768
    }

    /// Records a data frame that went this way (sent, or decoded on receipt): its channel's id and
    /// end become the context. Control frames and unknown channels are not recorded.
    public mutating func record(_ frame: SessionFrame) {
        guard (0x01...0x08).contains(frame.channel.rawValue) else { return }
        let end = UInt64(frame.offset) + UInt64(frame.bytes.count)
        entries[Int(frame.channel.rawValue)] = Entry(id: frame.id, end: UInt32(clamping: end))
    }

    /// The frame's bytes on the wire, compact when allowed (a continuation whose position the context
    /// allows), else whole; records the frame.
    public mutating func encode(_ frame: SessionFrame) -> [UInt8] {
        defer { record(frame) }
        guard !frame.flags.contains(.first),
              compactAllowed(channel: frame.channel, id: frame.id, offset: Int(frame.totalOrOffset)) else {
            return frame.encode()
        }
        var output: [UInt8] = [
            SessionLink.compactMarker | UInt8(truncatingIfNeeded: frame.id & 7) << 4 | frame.channel.rawValue,
            frame.flags.rawValue,
        ]
        output.reserveCapacity(SessionLink.compactHeaderLength + frame.bytes.count)
        appendLittleEndian(UInt16(truncatingIfNeeded: frame.totalOrOffset), to: &output)
        output += frame.bytes
        return output
    }

    /// Reads one frame of a link that negotiated compact frames: a compact frame (byte 0 has bit 7)
    /// is completed from the context, any other is read as ``SessionFrame/decode(_:)`` reads it. A
    /// frame that decodes is recorded; one that does not leaves the context unchanged.
    /// - Throws: ``SessionFrameError`` with the offset of the problem in `bytes`.
    public mutating func decode(_ bytes: [UInt8]) throws(SessionFrameError) -> SessionFrame {
        let frame: SessionFrame
        if let first = bytes.first, first & SessionLink.compactMarker != 0 {
            frame = try decodeCompact(bytes)
        } else {
            frame = try SessionFrame.decode(bytes)
        }
        record(frame)
        return frame
    }

    /// The fields a compact frame carries, without a context: channel, id tag, flags, offset bits, bytes.
    /// - Throws: ``SessionFrameError`` when the bytes are no compact frame on their own.
    public static func compactFields(_ bytes: [UInt8]) throws(SessionFrameError)
        -> (channel: SessionChannel, idTag: UInt8, flags: SessionFrameFlags, offsetBits: UInt16, bytes: ArraySlice<UInt8>) {
        guard bytes.count >= SessionLink.compactHeaderLength else {
            throw SessionFrameError(frame: 0, offset: bytes.count, problem: .truncated(
                expected: "the 4-byte compact frame header (channel and id tag, flags, offset bits)",
                needed: SessionLink.compactHeaderLength, available: bytes.count))
        }
        let channel = bytes[0] & 0x0F
        guard (0x01...0x08).contains(channel) else {
            throw SessionFrameError(frame: 0, offset: 0, problem: .compactChannel(channel))
        }
        let flags = SessionFrameFlags(rawValue: bytes[1])
        guard !flags.contains(.first) else {
            throw SessionFrameError(frame: 0, offset: 1, problem: .compactFirstFrame)
        }
        guard bytes.count > SessionLink.compactHeaderLength else {
            throw SessionFrameError(frame: 0, offset: SessionLink.compactHeaderLength, problem: .continuationWithoutBytes)
        }
        return (SessionChannel(rawValue: channel), (bytes[0] >> 4) & 7, flags, readLittleEndianUInt16(bytes, at: 2),
                bytes[SessionLink.compactHeaderLength...])
    }

    func decodeCompact(_ bytes: [UInt8]) throws(SessionFrameError) -> SessionFrame {
        let fields = try Self.compactFields(bytes)
        guard let entry = entries[Int(fields.channel.rawValue)] else {
            throw SessionFrameError(frame: 0, offset: 0, problem: .compactWithoutContext(channel: fields.channel))
        }
        guard UInt8(truncatingIfNeeded: entry.id & 7) == fields.idTag else {
            throw SessionFrameError(frame: 0, offset: 0, problem: .compactIDMismatch(channel: fields.channel, id: entry.id, tag: fields.idTag))
        }
        let delta = Int(Int16(bitPattern: fields.offsetBits &- UInt16(truncatingIfNeeded: entry.end)))
        let offset = Int64(entry.end) + Int64(delta)
        guard offset >= 0 else {
            throw SessionFrameError(frame: 0, offset: 2, problem: .compactOffsetBelowZero(end: entry.end, lowBits: fields.offsetBits))
        }
        guard offset + Int64(fields.bytes.count) <= Int64(UInt32.max) else {
            throw SessionFrameError(frame: 0, offset: 2, problem: .offsetOverflow(offset: UInt32(clamping: offset), count: fields.bytes.count))
        }
        return SessionFrame(channel: fields.channel, flags: fields.flags, id: entry.id, totalOrOffset: UInt32(offset), bytes: Array(fields.bytes))
    }
}

// MARK: - Little-endian helpers

func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to output: inout [UInt8]) {
    var little = value.littleEndian
    withUnsafeBytes(of: &little) { output.append(contentsOf: $0) }
}

/// Reads a u32 at `offset`; the caller has checked that four bytes are there.
func readLittleEndianUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
}

/// Reads a u16 at `offset`; the caller has checked that two bytes are there.
func readLittleEndianUInt16(_ bytes: [UInt8], at offset: Int) -> UInt16 {
    UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
}
