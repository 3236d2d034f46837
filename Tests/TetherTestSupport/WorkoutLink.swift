import TetherWatchConnectivity

/// A phone app's workout link as apps write it against WatchConnectivity: it activates, and once
/// activated with the watch reachable it sends its context and a message; the message's reply
/// makes it send message data, whose reply makes it transfer a user info. Every next call is made
/// from inside a callback, on the session the callback names.
public final class WorkoutLink: WCSessionDelegate {
    public let session: WCSession
    public var activation: [(WCSessionActivationState, (any Error)?)] = []
    public var reachabilitySeen: [Bool] = []
    public var contextError: (any Error)?
    public var reply: [String: Any]?
    public var replyData: Data?
    public var errors: [any Error] = []
    public var userInfoFinished: [(transfer: WCSessionUserInfoTransfer, error: (any Error)?)] = []
    public var receivedContexts: [[String: Any]] = []
    public var contextMatchedPropertyWhenCalled: Bool?
    private var started = false

    /// `session` is `WCSession.default` in an app; a test hands the session of its own replay.
    public init(session: WCSession = .default) {
        self.session = session
        session.delegate = self
    }

    public func start() {
        session.activate()
    }

    public func session(_ session: WCSession, activationDidCompleteWith activationState: WCSessionActivationState, error: (any Error)?) {
        activation.append((activationState, error))
        startIfReady(session)
    }

    public func sessionDidBecomeInactive(_ session: WCSession) {}

    public func sessionDidDeactivate(_ session: WCSession) {
        session.activate()
    }

    public func sessionReachabilityDidChange(_ session: WCSession) {
        reachabilitySeen.append(session.isReachable)
        startIfReady(session)
    }

    public func session(_ session: WCSession, didReceiveApplicationContext applicationContext: [String: Any]) {
        receivedContexts.append(applicationContext)
        contextMatchedPropertyWhenCalled = session.receivedApplicationContext["seen"] as? String == applicationContext["seen"] as? String
    }

    public func session(_ session: WCSession, didFinish userInfoTransfer: WCSessionUserInfoTransfer, error: (any Error)?) {
        userInfoFinished.append((userInfoTransfer, error))
    }

    private func startIfReady(_ session: WCSession) {
        guard !started, session.activationState == .activated, session.isReachable else { return }
        started = true
        do {
            try session.updateApplicationContext(["mode": "run", "zone": 3])
        } catch {
            contextError = error
        }
        session.sendMessage(["hr": 72, "unit": "bpm"], replyHandler: { [self] reply in
            self.reply = reply
            session.sendMessageData(Data([0xca, 0xfe, 0x01, 0x02]), replyHandler: { [self] data in
                replyData = data
                session.transferUserInfo(["workout": 1, "kcal": 312])
            }, errorHandler: { [self] error in errors.append(error) })
        }, errorHandler: { [self] error in errors.append(error) })
    }
}
