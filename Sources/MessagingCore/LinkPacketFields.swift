// The one-byte fields of Connect IQ link packets (docs/connectiq-link.md): the status and code
// bytes of commands and acks, and a transfer's flags, each keeping an unknown byte as it came.
// The packets themselves are LinkPacket.swift.

/// Status of a connect response (command 1).
public struct ConnectStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a wire byte; unknown values are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0: the connection is open.
    public static let success = ConnectStatus(rawValue: 0)
    /// 1: no app with that UUID on the watch.
    public static let appNotFound = ConnectStatus(rawValue: 1)
    /// 2: the watch has no free connection id.
    public static let noFreeConnection = ConnectStatus(rawValue: 2)
    /// 3: a connection to that app is already open.
    public static let alreadyOpen = ConnectStatus(rawValue: 3)
    /// `success`, `app-not-found`, `no-free-connection`, `already-open`, else `status N`.
    public var description: String {
        switch rawValue {
        case 0: "success"
        case 1: "app-not-found"
        case 2: "no-free-connection"
        case 3: "already-open"
        default: "status \(rawValue)"
        }
    }
}

/// Status of a disconnect response (command 2) and of the phone's answers to a watch opening
/// (command 3) or closing (command 4) a connection.
public struct ConnectionStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a wire byte; unknown values are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0: done.
    public static let success = ConnectionStatus(rawValue: 0)
    /// 1: the connection id is not valid.
    public static let invalidConnection = ConnectionStatus(rawValue: 1)
    /// `success`, `invalid-connection`, else `status N`.
    public var description: String {
        switch rawValue {
        case 0: "success"
        case 1: "invalid-connection"
        default: "status \(rawValue)"
        }
    }
}

/// Outcome code of an open-app response (command 6).
public struct OpenAppCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a wire byte; unknown values are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0: the watch shows the prompt to open the app.
    public static let promptShown = OpenAppCode(rawValue: 0)
    /// 1: the watch did not show the prompt.
    public static let promptNotShown = OpenAppCode(rawValue: 1)
    /// 2: the app is not installed.
    public static let appNotInstalled = OpenAppCode(rawValue: 2)
    /// 3: the app is already running.
    public static let appAlreadyRunning = OpenAppCode(rawValue: 3)
    /// `prompt shown`, `prompt not shown`, `app not installed`, `app already running`, else `code N`.
    public var description: String {
        switch rawValue {
        case 0: "prompt shown"
        case 1: "prompt not shown"
        case 2: "app not installed"
        case 3: "app already running"
        default: "code \(rawValue)"
        }
    }
}

/// What an ack acknowledges (byte 2 of `F·c 02 type status seq`).
public struct AckType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a wire byte; unknown values are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0: a `first` packet.
    public static let first = AckType(rawValue: 0)
    /// 1: a window of data packets (sent after each seq-14 packet).
    public static let data = AckType(rawValue: 1)
    /// 2: a `last` packet.
    public static let last = AckType(rawValue: 2)
    /// 3: an ack request.
    public static let ackRequest = AckType(rawValue: 3)
    /// 4: a capabilities packet.
    public static let capabilities = AckType(rawValue: 4)
    /// 5: an encryption key packet.
    public static let encryptionKey = AckType(rawValue: 5)
    /// `first`, `data`, `last`, `ack-request`, `capabilities`, `key`, else `type N`.
    public var description: String {
        switch rawValue {
        case 0: "first"
        case 1: "data"
        case 2: "last"
        case 3: "ack-request"
        case 4: "capabilities"
        case 5: "key"
        default: "type \(rawValue)"
        }
    }
}

/// Status carried by an ack.
public struct AckStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a wire byte; unknown values are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0: accepted.
    public static let success = AckStatus(rawValue: 0)
    /// 1: send it again.
    public static let resend = AckStatus(rawValue: 1)
    /// 2: the CRC of the transfer did not match.
    public static let crcFailure = AckStatus(rawValue: 2)
    /// 3: the transfer was not started.
    public static let transferNotStarted = AckStatus(rawValue: 3)
    /// 4: the connection id is not valid.
    public static let invalidConnection = AckStatus(rawValue: 4)
    /// 5: the receiver has no memory for the transfer.
    public static let outOfMemory = AckStatus(rawValue: 5)
    /// 6: an encrypted transfer arrived without a key.
    public static let noEncryptionKey = AckStatus(rawValue: 6)
    /// `success`, `resend`, `crc-failure`, `not-started`, `invalid-connection`, `out-of-memory`, `no-key`, else `status N`.
    public var description: String {
        switch rawValue {
        case 0: "success"
        case 1: "resend"
        case 2: "crc-failure"
        case 3: "not-started"
        case 4: "invalid-connection"
        case 5: "out-of-memory"
        case 6: "no-key"
        default: "status \(rawValue)"
        }
    }
}

/// Flags of a `first` packet.
public struct TransferFlags: OptionSet, Sendable, Hashable {
    /// The byte on the wire; unknown bits are kept.
    public var rawValue: UInt8
    /// Wraps a wire byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `0x02`: the data is XXTEA-encrypted with the key of the preceding key packet.
    public static let encrypted = TransferFlags(rawValue: 0x02)
    /// `0x04`: a transient transfer.
    public static let transient = TransferFlags(rawValue: 0x04)
}
