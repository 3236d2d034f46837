import Foundation
import SessionCore

/// The error WatchConnectivity hands to error handlers, `didFinish` callbacks and `throws`:
/// `WCError` with its `Code`, in the domain `WCErrorDomain`.
///
/// It is a struct with a nested `Code`, as the framework's error looks from Swift, so that
/// `catch let error as WCError where error.code == .notReachable`, `catch WCError.notReachable`
/// and `(error as NSError).code == 7007` all read as they do on iOS. Two errors are equal when
/// their codes are: the detail is for people, not for comparisons.
public struct WCError: Error, Hashable, Sendable, CustomStringConvertible {
    /// WatchConnectivity's error codes, with the framework's raw values and case names
    /// (`notReachable` = 7007): SessionCore's own, which carries them on the link and in traces.
    public typealias Code = SessionErrorCode

    /// Which error this is.
    public var code: Code
    /// What happened, when the core or the facade said more than the code (not part of equality).
    public var detail: String?

    /// An error of `code`.
    public init(_ code: Code) {
        self.code = code
        self.detail = nil
    }

    /// An error of `code` that says what happened.
    public init(_ code: Code, detail: String?) {
        self.code = code
        self.detail = detail
    }

    /// Equal when the codes are, as two framework errors of one code compare in practice.
    public static func == (lhs: WCError, rhs: WCError) -> Bool { lhs.code == rhs.code }

    /// Hashes the code only, to agree with ``==(_:_:)``.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `WCError 7007 notReachable: detail`.
    public var description: String {
        "WCError \(code.rawValue) \(code.name)" + (detail.map { ": \($0)" } ?? "")
    }

    /// 7001 (as `WCError.genericError` reads on iOS: a code to match against).
    public static var genericError: Code { .genericError }
    /// 7002.
    public static var sessionNotSupported: Code { .sessionNotSupported }
    /// 7003.
    public static var sessionMissingDelegate: Code { .sessionMissingDelegate }
    /// 7004.
    public static var sessionNotActivated: Code { .sessionNotActivated }
    /// 7005.
    public static var deviceNotPaired: Code { .deviceNotPaired }
    /// 7006.
    public static var watchAppNotInstalled: Code { .watchAppNotInstalled }
    /// 7007.
    public static var notReachable: Code { .notReachable }
    /// 7008.
    public static var invalidParameter: Code { .invalidParameter }
    /// 7009.
    public static var payloadTooLarge: Code { .payloadTooLarge }
    /// 7010.
    public static var payloadUnsupportedTypes: Code { .payloadUnsupportedTypes }
    /// 7011.
    public static var messageReplyFailed: Code { .messageReplyFailed }
    /// 7012.
    public static var messageReplyTimedOut: Code { .messageReplyTimedOut }
    /// 7013.
    public static var fileAccessDenied: Code { .fileAccessDenied }
    /// 7014.
    public static var deliveryFailed: Code { .deliveryFailed }
    /// 7015.
    public static var insufficientSpace: Code { .insufficientSpace }
    /// 7016.
    public static var sessionInactive: Code { .sessionInactive }
    /// 7017.
    public static var transferTimedOut: Code { .transferTimedOut }
    /// 7018.
    public static var companionAppNotInstalled: Code { .companionAppNotInstalled }
    /// 7019.
    public static var watchOnlyApp: Code { .watchOnlyApp }
}

extension SessionErrorCode {
    /// Lets `catch WCError.notReachable { … }` match, as the framework's bridged error does.
    public static func ~= (code: SessionErrorCode, error: any Error) -> Bool {
        (error as? WCError)?.code == code
    }
}

extension WCError: CustomNSError {
    /// `WCErrorDomain`, so `(error as NSError).domain` reads as on iOS.
    public static var errorDomain: String { "WCErrorDomain" }
    /// The code's number: `(error as NSError).code`.
    public var errorCode: Int { code.rawValue }
    /// The description as `NSLocalizedDescriptionKey`, so `localizedDescription` says what happened.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description] }
}

extension WCError {
    /// The error an event's `code` field names, `nil` for a `null` or absent code; an unknown
    /// number becomes `genericError` with the number in its detail, so nothing is lost silently.
    init?(eventCode: Int64?, name: String?, detail: String? = nil) {
        guard let eventCode else { return nil }
        if let code = Code(rawValue: Int(eventCode)) {
            self.init(code, detail: detail)
        } else {
            self.init(.genericError, detail: "the core reported error \(eventCode) \(name ?? "")" + (detail.map { ": \($0)" } ?? ""))
        }
    }
}
