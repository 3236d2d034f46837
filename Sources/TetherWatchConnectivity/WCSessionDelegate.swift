import Foundation

/// What a `WCSession` tells the app, with WatchConnectivity's iOS method names.
///
/// Every method is a requirement, the optional ones with a default implementation that does
/// nothing: Linux has no `@objc optional`, and a method declared only in an extension would be
/// dispatched statically, so the app's own implementation would never be called. The three
/// methods iOS requires have no default, so an app that compiles here compiles there.
///
/// Callbacks arrive on the thread that drives the host (the test's thread inside
/// `ReplaySession.run()`), one at a time, in the order of the host's clock.
public protocol WCSessionDelegate: AnyObject {
    /// Activation finished: `activationState` is the session's state now; `error` says why it
    /// is not `.activated`.
    func session(_ session: WCSession, activationDidCompleteWith activationState: WCSessionActivationState, error: (any Error)?)
    /// The phone began switching watches: no new transfers until the session is activated again.
    func sessionDidBecomeInactive(_ session: WCSession)
    /// The switch finished; the app activates the session again to talk to the new watch.
    func sessionDidDeactivate(_ session: WCSession)
    /// `isPaired`, `isWatchAppInstalled` or `isComplicationEnabled` changed.
    func sessionWatchStateDidChange(_ session: WCSession)
    /// `isReachable` changed.
    func sessionReachabilityDidChange(_ session: WCSession)
    /// The watch sent a message that expects no reply.
    func session(_ session: WCSession, didReceiveMessage message: [String: Any])
    /// The watch sent a message that expects a reply: call `replyHandler` once.
    func session(_ session: WCSession, didReceiveMessage message: [String: Any], replyHandler: @escaping ([String: Any]) -> Void)
    /// The watch sent message data that expects no reply.
    func session(_ session: WCSession, didReceiveMessageData messageData: Data)
    /// The watch sent message data that expects a reply: call `replyHandler` once.
    func session(_ session: WCSession, didReceiveMessageData messageData: Data, replyHandler: @escaping (Data) -> Void)
    /// The watch's latest application context arrived (also in `receivedApplicationContext`).
    func session(_ session: WCSession, didReceiveApplicationContext applicationContext: [String: Any])
    /// A user info transfer ended: delivered (`error` nil) or failed.
    func session(_ session: WCSession, didFinish userInfoTransfer: WCSessionUserInfoTransfer, error: (any Error)?)
    /// The watch's user info arrived.
    func session(_ session: WCSession, didReceiveUserInfo userInfo: [String: Any])
    /// A file transfer ended: delivered (`error` nil) or failed.
    func session(_ session: WCSession, didFinish fileTransfer: WCSessionFileTransfer, error: (any Error)?)
    /// The watch's file arrived.
    func session(_ session: WCSession, didReceive file: WCSessionFile)
}

/// The optional methods' defaults: nothing happens, as when an iOS delegate does not implement
/// them. A message that expects a reply and reaches this default gets none, so the watch's
/// `sendMessage` times out as it would on the device.
extension WCSessionDelegate {
    /// Does nothing.
    public func sessionWatchStateDidChange(_ session: WCSession) {}
    /// Does nothing.
    public func sessionReachabilityDidChange(_ session: WCSession) {}
    /// Does nothing.
    public func session(_ session: WCSession, didReceiveMessage message: [String: Any]) {}
    /// Does nothing: the watch gets no reply.
    public func session(_ session: WCSession, didReceiveMessage message: [String: Any], replyHandler: @escaping ([String: Any]) -> Void) {}
    /// Does nothing.
    public func session(_ session: WCSession, didReceiveMessageData messageData: Data) {}
    /// Does nothing: the watch gets no reply.
    public func session(_ session: WCSession, didReceiveMessageData messageData: Data, replyHandler: @escaping (Data) -> Void) {}
    /// Does nothing.
    public func session(_ session: WCSession, didReceiveApplicationContext applicationContext: [String: Any]) {}
    /// Does nothing.
    public func session(_ session: WCSession, didFinish userInfoTransfer: WCSessionUserInfoTransfer, error: (any Error)?) {}
    /// Does nothing.
    public func session(_ session: WCSession, didReceiveUserInfo userInfo: [String: Any]) {}
    /// Does nothing.
    public func session(_ session: WCSession, didFinish fileTransfer: WCSessionFileTransfer, error: (any Error)?) {}
    /// Does nothing.
    public func session(_ session: WCSession, didReceive file: WCSessionFile) {}
}
