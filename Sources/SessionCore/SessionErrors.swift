/// The error codes of WatchConnectivity's `WCError.Code`, with their raw values
/// (docs/session-semantics.md, "Errors"). They travel in ERROR frames as `u16`.
public enum SessionErrorCode: Int, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// 7001: an error no other code describes.
    case genericError = 7001
    /// 7002: the operation is not supported here (Tether: on this side of the session).
    case sessionNotSupported = 7002
    /// 7003: the session has no delegate.
    case sessionMissingDelegate = 7003
    /// 7004: the session is not activated.
    case sessionNotActivated = 7004
    /// 7005: no watch (phone side) or phone (watch side) is paired.
    case deviceNotPaired = 7005
    /// 7006: the watch app is not installed on the paired watch.
    case watchAppNotInstalled = 7006
    /// 7007: the counterpart is not reachable.
    case notReachable = 7007
    /// 7008: a parameter is not valid (Tether: also an unknown transfer or message id).
    case invalidParameter = 7008
    /// 7009: the payload is larger than its channel allows.
    case payloadTooLarge = 7009
    /// 7010: the payload holds a value that is not a property-list type.
    case payloadUnsupportedTypes = 7010
    /// 7011: the reply to a message could not be delivered.
    case messageReplyFailed = 7011
    /// 7012: no reply came within the time limit.
    case messageReplyTimedOut = 7012
    /// 7013: the file cannot be read.
    case fileAccessDenied = 7013
    /// 7014: the data could not be delivered.
    case deliveryFailed = 7014
    /// 7015: the receiver has no room for the data.
    case insufficientSpace = 7015
    /// 7016: the session is inactive (the phone is switching watches).
    case sessionInactive = 7016
    /// 7017: the transfer timed out.
    case transferTimedOut = 7017
    /// 7018: the companion (phone) app is not installed.
    case companionAppNotInstalled = 7018
    /// 7019: the watch app has no companion app.
    case watchOnlyApp = 7019

    /// The case name, as in `WCError.Code`: `sessionNotActivated`, `notReachable`, …
    public var name: String {
        switch self {
        case .genericError: "genericError"
        case .sessionNotSupported: "sessionNotSupported"
        case .sessionMissingDelegate: "sessionMissingDelegate"
        case .sessionNotActivated: "sessionNotActivated"
        case .deviceNotPaired: "deviceNotPaired"
        case .watchAppNotInstalled: "watchAppNotInstalled"
        case .notReachable: "notReachable"
        case .invalidParameter: "invalidParameter"
        case .payloadTooLarge: "payloadTooLarge"
        case .payloadUnsupportedTypes: "payloadUnsupportedTypes"
        case .messageReplyFailed: "messageReplyFailed"
        case .messageReplyTimedOut: "messageReplyTimedOut"
        case .fileAccessDenied: "fileAccessDenied"
        case .deliveryFailed: "deliveryFailed"
        case .insufficientSpace: "insufficientSpace"
        case .sessionInactive: "sessionInactive"
        case .transferTimedOut: "transferTimedOut"
        case .companionAppNotInstalled: "companionAppNotInstalled"
        case .watchOnlyApp: "watchOnlyApp"
        }
    }

    /// `7007 notReachable`.
    public var description: String { "\(rawValue) \(name)" }
}

/// A WatchConnectivity-style error: its code and what happened, where, and what to do.
///
/// Thrown (typed) when the app or host misuses the API — the core's state is then unchanged — and
/// carried by failure events (`messageFailed`, `userInfoTransferDidFinish`, …).
public struct SessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The WatchConnectivity code.
    public var code: SessionErrorCode
    /// What happened and what to do about it.
    public var detail: String

    /// Creates an error.
    public init(_ code: SessionErrorCode, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// `7004 sessionNotActivated: <detail>`.
    public var description: String { "\(code): \(detail)" }
}
