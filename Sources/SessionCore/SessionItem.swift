import MonkeyC

// What the frames of one item carry, by channel (docs/session-link.md, "Items" and "Control
// items"). Integers little-endian; property lists in the Monkey C serialization (big-endian inside).

/// Flags a side reports about itself in the handshake and in STATUS (byte `status`).
public struct SessionPeerStatus: OptionSet, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The byte on the wire; unknown bits are kept.
    public var rawValue: UInt8
    /// Wraps a wire byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01: the sender is paired with the receiver (the identity it was told at pairing).
    public static let paired = SessionPeerStatus(rawValue: 0x01)
    /// 0x02: the sender's app is installed (a watch without the app still answers the handshake).
    public static let appInstalled = SessionPeerStatus(rawValue: 0x02)
    /// 0x04: the watch app's complication is on the active watch face (watch only).
    public static let complicationEnabled = SessionPeerStatus(rawValue: 0x04)
    /// 0x08: the sender's app can take interactive messages now (watch: activated and in the foreground).
    public static let reachable = SessionPeerStatus(rawValue: 0x08)
    /// 0x10: the sender's session is activated.
    public static let activated = SessionPeerStatus(rawValue: 0x10)

    /// Names of the set bits joined by `|`, `none` when empty.
    public var description: String {
        let names: [(SessionPeerStatus, String)] = [
            (.paired, "paired"), (.appInstalled, "installed"), (.complicationEnabled, "complication"),
            (.reachable, "reachable"), (.activated, "activated"),
        ]
        var parts = names.filter { contains($0.0) }.map(\.1)
        let unknown = rawValue & 0xE0
        if unknown != 0 { parts.append("0x\(SessionDeviceID.hexDigits(unknown))") }
        return parts.isEmpty ? "none" : parts.joined(separator: "|")
    }
}

/// The receiver's state of the durable channels, sent in the handshake: per channel the highest
/// id it has completely received (0: none yet). The sender drops every queued item at or below.
public struct SessionWatermarks: Sendable, Hashable, Codable {
    /// Channel 0x01.
    public var applicationContext: UInt32
    /// Channel 0x05.
    public var userInfo: UInt32
    /// Channel 0x06.
    public var complicationUserInfo: UInt32
    /// Channels 0x07/0x08: the highest file completely received.
    public var file: UInt32

    /// Creates watermarks.
    public init(applicationContext: UInt32 = 0, userInfo: UInt32 = 0, complicationUserInfo: UInt32 = 0, file: UInt32 = 0) {
        self.applicationContext = applicationContext
        self.userInfo = userInfo
        self.complicationUserInfo = complicationUserInfo
        self.file = file
    }
}

/// HELLO (phone → watch, op 0x01) and WELCOME (watch → phone, op 0x02): the same 55-byte layout,
/// optionally followed by options (`type u8 · length u8 · value`); option 0x01 is the window.
public struct SessionHandshake: Sendable, Hashable, CustomStringConvertible {
    /// Protocol version, ``SessionLink/version``.
    public var version: UInt8
    /// The sender's identity.
    public var identity: SessionDeviceID
    /// Random, drawn when the sender's core was created without a snapshot and kept in its snapshots:
    /// a new value means the sender lost its durable state (reinstalled), so the receiver forgets its
    /// own watermarks for it.
    public var incarnation: UInt32
    /// Random, drawn at each activation of the sender's session; 0 while it is not activated.
    public var epoch: UInt32
    /// HELLO: random per link-up (or re-handshake); WELCOME: the HELLO's nonce echoed, binding the answer.
    public var nonce: UInt32
    /// The sender's flags.
    public var status: SessionPeerStatus
    /// What the sender has received from the receiver on the durable channels.
    public var watermarks: SessionWatermarks
    /// The file the sender is part-way through receiving from the receiver (0: none).
    public var fileResumeID: UInt32
    /// How many bytes of that file the sender holds: the receiver resumes there.
    public var fileResumeOffset: UInt32
    /// The window the sender accepts (frames ahead of its acknowledged offset, 1…65535), carried as
    /// option 0x01; `nil`: the sender states none, and the link keeps the window of 8 frames.
    public var window: UInt16?
    /// The sender accepts compact frames (option 0x02, no value; session link page version 3): when
    /// the HELLO and the WELCOME that bound the link both state it, each side may send continuation
    /// frames with the 4-byte compact header (``SessionFrameContext``).
    public var compactFrames: Bool

    /// Bytes of a handshake item without options, op included.
    public static let length = 55
    /// Option type of the window: `01 02 <window u16>`.
    public static let windowOption: UInt8 = 0x01
    /// Option type of compact frames: `02 00`.
    public static let compactFramesOption: UInt8 = 0x02

    /// Creates a handshake.
    public init(
        version: UInt8 = SessionLink.version,
        identity: SessionDeviceID,
        incarnation: UInt32,
        epoch: UInt32,
        nonce: UInt32,
        status: SessionPeerStatus,
        watermarks: SessionWatermarks = SessionWatermarks(),
        fileResumeID: UInt32 = 0,
        fileResumeOffset: UInt32 = 0,
        window: UInt16? = nil,
        compactFrames: Bool = false
    ) {
        self.version = version
        self.identity = identity
        self.incarnation = incarnation
        self.epoch = epoch
        self.nonce = nonce
        self.status = status
        self.watermarks = watermarks
        self.fileResumeID = fileResumeID
        self.fileResumeOffset = fileResumeOffset
        self.window = window
        self.compactFrames = compactFrames
    }

    /// `v1 <identity> incarnation 0x… epoch 0x… nonce 0x… <status> marks c/u/x/f resume id@offset`.
    public var description: String {
        "v\(version) \(identity) incarnation \(hex32(incarnation)) epoch \(hex32(epoch)) nonce \(hex32(nonce)) \(status) "
            + "marks \(watermarks.applicationContext)/\(watermarks.userInfo)/\(watermarks.complicationUserInfo)/\(watermarks.file) "
            + "resume \(fileResumeID)@\(fileResumeOffset)" + (window.map { " window \($0)" } ?? "")
            + (compactFrames ? " compact-frames" : "")
    }
}

/// A control item (channel 0x00). Never acknowledged; lost ones are covered by timers.
public enum SessionControl: Sendable, Hashable, CustomStringConvertible {
    /// op 0x01, phone → watch.
    case hello(SessionHandshake)
    /// op 0x02, watch → phone.
    case welcome(SessionHandshake)
    /// op 0x03 `channel u8, id u32, received u32`: of item `id` on `channel` the sender of the ACK
    /// holds the first `received` bytes; ``SessionLink/complete`` means the item is complete and delivered.
    case ack(channel: SessionChannel, id: UInt32, received: UInt32)
    /// op 0x04 `channel u8, id u32, code u16`: item `id` on `channel` failed with a WCError code
    /// (refused by the receiver, or a message whose reply cannot come).
    case error(channel: SessionChannel, id: UInt32, code: UInt16)
    /// op 0x05 `channel u8, id u32`: the sender gave item `id` up; the receiver drops what it holds of it.
    case cancel(channel: SessionChannel, id: UInt32)
    /// op 0x06 `sequence u32, status u8`: the sender's flags changed (resent until acknowledged).
    case status(sequence: UInt32, status: SessionPeerStatus)
    /// op 0x07 `sequence u32`: acknowledges a STATUS.
    case statusAck(sequence: UInt32)
    /// An op this version does not define; `bytes` are those after the op.
    case unknown(op: UInt8, bytes: [UInt8])

    /// The op byte.
    public var op: UInt8 {
        switch self {
        case .hello: 0x01
        case .welcome: 0x02
        case .ack: 0x03
        case .error: 0x04
        case .cancel: 0x05
        case .status: 0x06
        case .statusAck: 0x07
        case .unknown(let op, _): op
        }
    }

    /// The item's bytes.
    public func encode() -> [UInt8] {
        var output: [UInt8] = [op]
        switch self {
        case .hello(let handshake), .welcome(let handshake):
            output.append(handshake.version)
            output += handshake.identity.bytes
            appendLittleEndian(handshake.incarnation, to: &output)
            appendLittleEndian(handshake.epoch, to: &output)
            appendLittleEndian(handshake.nonce, to: &output)
            output.append(handshake.status.rawValue)
            appendLittleEndian(handshake.watermarks.applicationContext, to: &output)
            appendLittleEndian(handshake.watermarks.userInfo, to: &output)
            appendLittleEndian(handshake.watermarks.complicationUserInfo, to: &output)
            appendLittleEndian(handshake.watermarks.file, to: &output)
            appendLittleEndian(handshake.fileResumeID, to: &output)
            appendLittleEndian(handshake.fileResumeOffset, to: &output)
            if let window = handshake.window {
                output += [SessionHandshake.windowOption, 2]
                appendLittleEndian(window, to: &output)
            }
            if handshake.compactFrames {
                output += [SessionHandshake.compactFramesOption, 0]
            }
        case let .ack(channel, id, received):
            output.append(channel.rawValue)
            appendLittleEndian(id, to: &output)
            appendLittleEndian(received, to: &output)
        case let .error(channel, id, code):
            output.append(channel.rawValue)
            appendLittleEndian(id, to: &output)
            appendLittleEndian(code, to: &output)
        case let .cancel(channel, id):
            output.append(channel.rawValue)
            appendLittleEndian(id, to: &output)
        case let .status(sequence, status):
            appendLittleEndian(sequence, to: &output)
            output.append(status.rawValue)
        case .statusAck(let sequence):
            appendLittleEndian(sequence, to: &output)
        case .unknown(_, let bytes):
            output += bytes
        }
        return output
    }

    /// The options after a handshake's 55 bytes: each `type u8 · length u8 · value`, unknown types
    /// skipped; returns the window (option 0x01, exactly 2 bytes, not 0) if stated, and whether
    /// compact frames (option 0x02, no value) are stated.
    static func handshakeOptions(_ payload: [UInt8], name: String) throws(SessionFrameError) -> (window: UInt16?, compactFrames: Bool) {
        var window: UInt16?
        var compactFrames = false
        var at = SessionHandshake.length
        while at < payload.count {
            guard at + 2 <= payload.count else {
                throw SessionFrameError(frame: nil, offset: at, problem: .truncated(expected: "an option of \(name) (type, length)", needed: 2, available: payload.count - at))
            }
            let type = payload[at], length = Int(payload[at + 1])
            guard at + 2 + length <= payload.count else {
                throw SessionFrameError(frame: nil, offset: at + 2, problem: .truncated(
                    expected: "the value of \(name)'s option 0x\(String(type, radix: 16))", needed: length, available: payload.count - at - 2))
            }
            if type == SessionHandshake.windowOption {
                guard length == 2 else {
                    throw SessionFrameError(frame: nil, offset: at, problem: .invalidHandshakeOption(type: type, reason: "the window is 2 bytes, not \(length)"))
                }
                guard window == nil else {
                    throw SessionFrameError(frame: nil, offset: at, problem: .invalidHandshakeOption(type: type, reason: "the window is stated twice"))
                }
                let value = readLittleEndianUInt16(payload, at: at + 2)
                guard value > 0 else {
                    throw SessionFrameError(frame: nil, offset: at + 2, problem: .invalidHandshakeOption(type: type, reason: "a window of 0 frames"))
                }
                window = value
            } else if type == SessionHandshake.compactFramesOption {
                guard length == 0 else {
                    throw SessionFrameError(frame: nil, offset: at, problem: .invalidHandshakeOption(type: type, reason: "compact frames take no value, not \(length) bytes"))
                }
                guard !compactFrames else {
                    throw SessionFrameError(frame: nil, offset: at, problem: .invalidHandshakeOption(type: type, reason: "compact frames are stated twice"))
                }
                compactFrames = true
            }
            at += 2 + length
        }
        return (window, compactFrames)
    }

    /// Reads a control item. Offsets in errors are into `payload`.
    /// - Throws: ``SessionFrameError`` (`frame` nil) when a known op has the wrong length.
    public static func decode(_ payload: [UInt8]) throws(SessionFrameError) -> SessionControl {
        guard let op = payload.first else {
            throw SessionFrameError(frame: nil, offset: 0, problem: .truncated(expected: "a control op", needed: 1, available: 0))
        }
        func exact(_ length: Int, _ name: String) throws(SessionFrameError) {
            if payload.count < length {
                throw SessionFrameError(frame: nil, offset: payload.count, problem: .truncated(
                    expected: "the rest of \(name)", needed: length - payload.count, available: 0))
            }
            if payload.count > length {
                throw SessionFrameError(frame: nil, offset: length, problem: .trailingBytes(count: payload.count - length))
            }
        }
        switch op {
        case 0x01, 0x02:
            let name = op == 0x01 ? "HELLO" : "WELCOME"
            if payload.count < SessionHandshake.length {
                throw SessionFrameError(frame: nil, offset: payload.count, problem: .truncated(
                    expected: "the rest of \(name) (55 bytes before its options)", needed: SessionHandshake.length - payload.count, available: 0))
            }
            let options = try handshakeOptions(payload, name: name)
            // Exactly 16 bytes by construction.
            let identity = SessionDeviceID(bytes: Array(payload[2..<18]))!
            let handshake = SessionHandshake(
                version: payload[1],
                identity: identity,
                incarnation: readLittleEndianUInt32(payload, at: 18),
                epoch: readLittleEndianUInt32(payload, at: 22),
                nonce: readLittleEndianUInt32(payload, at: 26),
                status: SessionPeerStatus(rawValue: payload[30]),
                watermarks: SessionWatermarks(
                    applicationContext: readLittleEndianUInt32(payload, at: 31),
                    userInfo: readLittleEndianUInt32(payload, at: 35),
                    complicationUserInfo: readLittleEndianUInt32(payload, at: 39),
                    file: readLittleEndianUInt32(payload, at: 43)),
                fileResumeID: readLittleEndianUInt32(payload, at: 47),
                fileResumeOffset: readLittleEndianUInt32(payload, at: 51),
                window: options.window,
                compactFrames: options.compactFrames)
            return op == 0x01 ? .hello(handshake) : .welcome(handshake)
        case 0x03:
            try exact(10, "ACK (10 bytes)")
            return .ack(channel: SessionChannel(rawValue: payload[1]), id: readLittleEndianUInt32(payload, at: 2),
                        received: readLittleEndianUInt32(payload, at: 6))
        case 0x04:
            try exact(8, "ERROR (8 bytes)")
            return .error(channel: SessionChannel(rawValue: payload[1]), id: readLittleEndianUInt32(payload, at: 2),
                          code: readLittleEndianUInt16(payload, at: 6))
        case 0x05:
            try exact(6, "CANCEL (6 bytes)")
            return .cancel(channel: SessionChannel(rawValue: payload[1]), id: readLittleEndianUInt32(payload, at: 2))
        case 0x06:
            try exact(6, "STATUS (6 bytes)")
            return .status(sequence: readLittleEndianUInt32(payload, at: 1), status: SessionPeerStatus(rawValue: payload[5]))
        case 0x07:
            try exact(5, "STATUS-ACK (5 bytes)")
            return .statusAck(sequence: readLittleEndianUInt32(payload, at: 1))
        default:
            return .unknown(op: op, bytes: Array(payload.dropFirst()))
        }
    }

    /// One line for traces: `ACK user-info #3 received 40`, `ACK reply #1 complete`, `HELLO v1 …`.
    public var description: String {
        switch self {
        case .hello(let handshake): "HELLO \(handshake)"
        case .welcome(let handshake): "WELCOME \(handshake)"
        case let .ack(channel, id, received):
            "ACK \(channel) #\(id) " + (received == SessionLink.complete ? "complete" : "received \(received)")
        case let .error(channel, id, code):
            "ERROR \(channel) #\(id) " + (SessionErrorCode(rawValue: Int(code)).map(\.description) ?? "code \(code)")
        case let .cancel(channel, id): "CANCEL \(channel) #\(id)"
        case let .status(sequence, status): "STATUS #\(sequence) \(status)"
        case .statusAck(let sequence): "STATUS-ACK #\(sequence)"
        case let .unknown(op, bytes): "control op 0x\(SessionDeviceID.hexDigits(op)), \(bytes.count) bytes"
        }
    }
}

/// One whole item, decoded by channel.
public enum SessionItem: Sendable, Hashable {
    /// Channel 0x00.
    case control(SessionControl)
    /// Channel 0x01: a property-list dictionary.
    case applicationContext(MonkeyCValue)
    /// Channel 0x02: a property-list dictionary.
    case message(MonkeyCValue)
    /// Channel 0x03: bytes.
    case messageData([UInt8])
    /// Channel 0x04: `inReplyTo u32` then the reply, a dictionary or bytes as the message was
    /// (only the requester knows which, so the body is kept as bytes here).
    case messageReply(inReplyTo: UInt32, body: [UInt8])
    /// Channel 0x05: a property-list dictionary.
    case userInfo(MonkeyCValue)
    /// Channel 0x06: a property-list dictionary.
    case complicationUserInfo(MonkeyCValue)
    /// Channel 0x07: `size u32`, then a property-list dictionary or nothing.
    case fileMetadata(size: UInt32, metadata: MonkeyCValue?)
    /// Channel 0x08: file bytes (all of them, when a whole file is decoded from offset 0).
    case fileChunk([UInt8])
    /// A channel this version does not define.
    case unknown(channel: SessionChannel, payload: [UInt8])

    /// The channel the item travels on.
    public var channel: SessionChannel {
        switch self {
        case .control: .control
        case .applicationContext: .applicationContext
        case .message: .message
        case .messageData: .messageData
        case .messageReply: .messageReply
        case .userInfo: .userInfo
        case .complicationUserInfo: .complicationUserInfo
        case .fileMetadata: .fileMetadata
        case .fileChunk: .fileChunk
        case .unknown(let channel, _): channel
        }
    }

    /// The item's payload bytes (what the frames carry).
    /// - Throws: ``MonkeyCEncodingError`` when a dictionary cannot be serialized.
    public func encodePayload() throws(MonkeyCEncodingError) -> [UInt8] {
        switch self {
        case .control(let control): return control.encode()
        case .applicationContext(let value), .message(let value), .userInfo(let value), .complicationUserInfo(let value):
            return try MonkeyCSerialization.encode(value)
        case .messageData(let bytes), .fileChunk(let bytes): return bytes
        case let .messageReply(inReplyTo, body):
            var output: [UInt8] = []
            appendLittleEndian(inReplyTo, to: &output)
            return output + body
        case let .fileMetadata(size, metadata):
            var output: [UInt8] = []
            appendLittleEndian(size, to: &output)
            if let metadata { output += try MonkeyCSerialization.encode(metadata) }
            return output
        case .unknown(_, let payload): return payload
        }
    }

    /// Decodes a whole item's payload by its channel. Offsets in errors are into `payload`.
    /// - Throws: ``SessionFrameError`` (`frame` nil): a control item of the wrong length, a
    ///   dictionary that does not decode or is not a property list, a reply or metadata shorter than 4 bytes.
    public static func decode(channel: SessionChannel, payload: [UInt8]) throws(SessionFrameError) -> SessionItem {
        switch channel {
        case .control: return .control(try SessionControl.decode(payload))
        case .applicationContext: return .applicationContext(try SessionPropertyList.decodeDictionary(payload, at: 0))
        case .message: return .message(try SessionPropertyList.decodeDictionary(payload, at: 0))
        case .messageData: return .messageData(payload)
        case .messageReply:
            guard payload.count >= 4 else {
                throw SessionFrameError(frame: nil, offset: payload.count, problem: .truncated(
                    expected: "inReplyTo (u32) of a reply", needed: 4, available: payload.count))
            }
            return .messageReply(inReplyTo: readLittleEndianUInt32(payload, at: 0), body: Array(payload[4...]))
        case .userInfo: return .userInfo(try SessionPropertyList.decodeDictionary(payload, at: 0))
        case .complicationUserInfo: return .complicationUserInfo(try SessionPropertyList.decodeDictionary(payload, at: 0))
        case .fileMetadata:
            guard payload.count >= 4 else {
                throw SessionFrameError(frame: nil, offset: payload.count, problem: .truncated(
                    expected: "the file size (u32) of file metadata", needed: 4, available: payload.count))
            }
            let size = readLittleEndianUInt32(payload, at: 0)
            var metadata: MonkeyCValue?
            if payload.count > 4 {
                metadata = try SessionPropertyList.decodeDictionary(Array(payload[4...]), at: 4)
            }
            return .fileMetadata(size: size, metadata: metadata)
        case .fileChunk: return .fileChunk(payload)
        default: return .unknown(channel: channel, payload: payload)
        }
    }
}

/// The item one sequence of frames carries: the first frame's channel, flags and id, and the
/// bytes put back together.
public struct SessionReassembledItem: Sendable, Hashable {
    /// The channel of every frame.
    public var channel: SessionChannel
    /// The FIRST frame's flags.
    public var flags: SessionFrameFlags
    /// The id of every frame.
    public var id: UInt32
    /// The item's bytes.
    public var payload: [UInt8]

    /// Puts the frames of one item back together: raw frames, in order, FIRST to LAST, each
    /// starting where the previous one ended. This is the strict form a document or a capture
    /// of a clean link shows; the core itself copes with loss, duplicates and reordering.
    /// - Throws: ``SessionFrameError`` naming the frame and offset.
    public static func reassemble(_ frames: [[UInt8]]) throws(SessionFrameError) -> SessionReassembledItem {
        guard !frames.isEmpty else {
            throw SessionFrameError(frame: 0, offset: 0, problem: .missingFirstFrame)
        }
        var decoded: [SessionFrame] = []
        for (index, bytes) in frames.enumerated() {
            do {
                decoded.append(try SessionFrame.decode(bytes))
            } catch {
                throw SessionFrameError(frame: index, offset: error.offset, problem: error.problem)
            }
        }
        let head = decoded[0]
        guard let total = head.total else {
            throw SessionFrameError(frame: 0, offset: 1, problem: .missingFirstFrame)
        }
        var payload = head.bytes
        var lastIndex = head.flags.contains(.last) ? 0 : nil as Int?
        var index = 1
        while lastIndex == nil, index < decoded.count {
            let frame = decoded[index]
            guard frame.channel == head.channel, frame.id == head.id else {
                throw SessionFrameError(frame: index, offset: 0, problem: .frameOfAnotherItem(channel: frame.channel, id: frame.id))
            }
            guard !frame.flags.contains(.first), UInt64(frame.offset) == UInt64(payload.count) else {
                throw SessionFrameError(frame: index, offset: 6, problem: .unexpectedOffset(
                    expected: UInt64(payload.count), found: frame.flags.contains(.first) ? 0 : frame.offset))
            }
            payload += frame.bytes
            let end = UInt64(payload.count)
            guard end <= UInt64(total) else {
                throw SessionFrameError(frame: index, offset: SessionLink.headerLength + frame.bytes.count,
                                        problem: .lastFlagMismatch(end: end, total: UInt64(total), lastSet: frame.flags.contains(.last)))
            }
            guard (end == UInt64(total)) == frame.flags.contains(.last) else {
                throw SessionFrameError(frame: index, offset: 1, problem: .lastFlagMismatch(
                    end: end, total: UInt64(total), lastSet: frame.flags.contains(.last)))
            }
            if frame.flags.contains(.last) { lastIndex = index }
            index += 1
        }
        guard let lastIndex else {
            throw SessionFrameError(frame: decoded.count - 1, offset: frames[decoded.count - 1].count,
                                    problem: .incompleteItem(received: payload.count, total: total))
        }
        guard lastIndex == decoded.count - 1 else {
            throw SessionFrameError(frame: lastIndex + 1, offset: 0, problem: .framesAfterLast(count: decoded.count - 1 - lastIndex))
        }
        return SessionReassembledItem(channel: head.channel, flags: head.flags, id: head.id, payload: payload)
    }

    /// Reassembles the frames (``reassemble(_:)``) and decodes the item by its channel
    /// (``SessionItem/decode(channel:payload:)``).
    /// - Throws: ``SessionFrameError``; a payload problem has `frame` nil and an offset into the payload.
    public static func decodeItem(_ frames: [[UInt8]]) throws(SessionFrameError) -> (header: SessionReassembledItem, item: SessionItem) {
        let header = try reassemble(frames)
        return (header, try SessionItem.decode(channel: header.channel, payload: header.payload))
    }
}

/// Which values travel as property lists: a dictionary with string keys at the top; inside, any
/// Monkey C value except `null` and `char` (neither has a property-list type), and every nested
/// dictionary again with string keys.
public enum SessionPropertyList {
    /// Why `value` is not a property-list dictionary, or `nil` when it is.
    public static func problem(in value: MonkeyCValue) -> String? {
        guard case .dictionary = value else { return "the top value is \(typeName(value)), not a dictionary" }
        return problem(in: value, path: "")
    }

    /// Decodes a Monkey C dictionary that is a property list; `base` is added to error offsets.
    /// - Throws: ``SessionFrameError`` with problem ``SessionFrameError/Problem/monkeyC(_:)`` or
    ///   ``SessionFrameError/Problem/notAPropertyList(_:)``.
    public static func decodeDictionary(_ bytes: [UInt8], at base: Int) throws(SessionFrameError) -> MonkeyCValue {
        let value: MonkeyCValue
        do {
            value = try MonkeyCSerialization.decode(bytes)
        } catch {
            throw SessionFrameError(frame: nil, offset: base + error.offset, problem: .monkeyC(error))
        }
        if let reason = problem(in: value) {
            throw SessionFrameError(frame: nil, offset: base, problem: .notAPropertyList(reason))
        }
        return value
    }

    private static func problem(in value: MonkeyCValue, path: String) -> String? {
        switch value {
        case .null: return "null at \(path.isEmpty ? "the top" : path) has no property-list type"
        case .char: return "a char at \(path.isEmpty ? "the top" : path) has no property-list type"
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let reason = problem(in: item, path: "\(path)[\(index)]") { return reason }
            }
            return nil
        case .dictionary(let pairs):
            for pair in pairs {
                guard case .string(let key) = pair.key else {
                    return "a key of \(typeName(pair.key)) at \(path.isEmpty ? "the top" : path); keys must be strings"
                }
                if let reason = problem(in: pair.value, path: "\(path)[\"\(key)\"]") { return reason }
            }
            return nil
        default:
            return nil
        }
    }

    private static func typeName(_ value: MonkeyCValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a bool"
        case .int32, .int64: "an integer"
        case .float32, .double: "a float"
        case .char: "a char"
        case .string: "a string"
        case .byteArray: "a byte array"
        case .array: "an array"
        case .dictionary: "a dictionary"
        }
    }
}

func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
