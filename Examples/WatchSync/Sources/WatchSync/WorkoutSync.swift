#if canImport(ConnectIQ)
import ConnectIQ
#else
import TetherConnectIQ
#endif
#if canImport(WatchConnectivity)
import WatchConnectivity
#else
import TetherWatchConnectivity
#endif

/// A finished workout, as the phone app hands it to its watches.
public struct Workout: Sendable, Hashable {
    /// The app's own id of the workout.
    public var id: Int
    /// The sport (`run`, `ride`…).
    public var sport: String
    /// Energy, in kilocalories.
    public var kcal: Int
    /// Average heart rate, in beats per minute.
    public var averageHeartRate: Int

    /// A workout.
    public init(id: Int, sport: String, kcal: Int, averageHeartRate: Int) {
        self.id = id
        self.sport = sport
        self.kcal = kcal
        self.averageHeartRate = averageHeartRate
    }

    /// The workout as both watch apps read it.
    var payload: [String: Any] { ["id": id, "sport": sport, "kcal": kcal, "hr": averageHeartRate] }
}

/// Sends every finished workout to the Garmin watch app and to the Apple Watch, once each.
///
/// - Garmin: workouts wait in a queue until the watch is connected and the app is installed on
///   it; one is sent at a time. A send that fails is retried up to `maxRetries` times — at once
///   after a timeout, and after the next connection when the device was not available.
/// - Apple Watch: while the counterpart app is reachable a workout goes as a message, and the
///   watch's reply confirms it; when it is not reachable, or the message fails, it goes as a user
///   info transfer, which the system delivers when it can.
public final class WorkoutSync: IQDeviceEventDelegate, IQAppMessageDelegate, WCSessionDelegate {
    /// How a workout reached a watch.
    public enum Delivery: Sendable, Hashable {
        /// The Garmin watch app acknowledged the message.
        case garminMessage
        /// The Apple Watch replied to the message.
        case appleMessage
        /// The Apple Watch got it as a user info transfer.
        case appleUserInfo
    }

    /// Every delivery, in order, with the workout's id.
    public private(set) var deliveries: [(workout: Int, delivery: Delivery)] = []
    /// What happened, one line per step, for logs and tests.
    public private(set) var log: [String] = []

    private let garminAppID: UUID
    private let maxRetries: Int
    private var garminApp: IQApp?
    private var garminReady = false
    private var garminQueue: [Workout] = []
    private var garminInFlight: (workout: Workout, attempt: Int)?
    private var waitingForAppleWatch: [Workout] = []

    /// A sync layer for the Garmin app with this id, retrying a failed send `maxRetries` times.
    public init(garminAppID: UUID, maxRetries: Int = 2) {
        self.garminAppID = garminAppID
        self.maxRetries = maxRetries
    }

    // MARK: starting

    /// Garmin Connect Mobile opened the app with the user's device selection.
    public func handleDeviceSelection(_ url: URL) {
        let devices = ConnectIQ.sharedInstance().parseDeviceSelectionResponse(from: url)?.compactMap { $0 as? IQDevice } ?? []
        guard let device = devices.first, let app = IQApp(uuid: garminAppID, store: garminAppID, device: device) else {
            log.append("garmin: no device selected")
            return
        }
        garminApp = app
        ConnectIQ.sharedInstance().register(forDeviceEvents: device, delegate: self)
        ConnectIQ.sharedInstance().register(forAppMessages: app, delegate: self)
    }

    /// Starts the Apple Watch session.
    public func activateWatchSession() {
        guard WCSession.isSupported() else { return }
        WCSession.default.delegate = self
        WCSession.default.activate()
    }

    // MARK: sending

    /// Sends `workout` to every watch the app knows.
    public func send(_ workout: Workout) {
        if garminApp != nil {
            garminQueue.append(workout)
            sendNextToGarmin()
        }
        sendToAppleWatch(workout)
    }

    private func sendNextToGarmin() {
        guard garminReady, garminInFlight == nil, !garminQueue.isEmpty, let app = garminApp else { return }
        let workout = garminQueue.removeFirst()
        transmitToGarmin(workout, attempt: 1, app: app)
    }

    private func transmitToGarmin(_ workout: Workout, attempt: Int, app: IQApp) {
        garminInFlight = (workout, attempt)
        log.append("garmin: send workout \(workout.id), attempt \(attempt)")
        ConnectIQ.sharedInstance().sendMessage(workout.payload, to: app, progress: { _, _ in }, completion: { [self] result in
            guard let inFlight = garminInFlight, inFlight.workout == workout else { return }
            garminInFlight = nil
            switch result {
            case .success:
                log.append("garmin: workout \(workout.id) delivered")
                deliveries.append((workout.id, .garminMessage))
            case .failure_Timeout, .failure_MaxRetries, .failure_DeviceIsBusy:
                guard inFlight.attempt <= maxRetries else { return giveUp(workout, result) }
                log.append("garmin: workout \(workout.id) failed with \(NSStringFromSendMessageResult(result)); retrying")
                transmitToGarmin(workout, attempt: inFlight.attempt + 1, app: app)
                return
            case .failure_DeviceNotAvailable:
                guard inFlight.attempt <= maxRetries else { return giveUp(workout, result) }
                log.append("garmin: watch not available; workout \(workout.id) waits for the next connection")
                garminQueue.insert(workout, at: 0)
            case .failure_Unknown, .failure_InternalError, .failure_AppNotFound, .failure_UnsupportedType,
                 .failure_InsufficientMemory, .failure_PromptNotDisplayed, .failure_AppAlreadyRunning:
                giveUp(workout, result)
            }
            sendNextToGarmin()
        })
    }

    private func giveUp(_ workout: Workout, _ result: IQSendMessageResult) {
        log.append("garmin: workout \(workout.id) given up: \(NSStringFromSendMessageResult(result))")
        sendNextToGarmin()
    }

    private func sendToAppleWatch(_ workout: Workout) {
        let session = WCSession.default
        // Before the session knows the watch app is installed, a transfer fails with
        // watchAppNotInstalled (7006): the workout waits for the watch's state instead. (Replaying
        // a recording showed the first version of this class losing workouts exactly so.)
        guard session.activationState == .activated, session.isWatchAppInstalled else {
            waitingForAppleWatch.append(workout)
            return
        }
        guard session.isReachable else {
            queueForAppleWatch(workout, because: "not reachable")
            return
        }
        log.append("apple: message workout \(workout.id)")
        session.sendMessage(workout.payload, replyHandler: { [self] reply in
            log.append("apple: workout \(workout.id) confirmed")
            deliveries.append((workout.id, .appleMessage))
        }, errorHandler: { [self] error in
            queueForAppleWatch(workout, because: "message failed: \(error)")
        })
    }

    private func queueForAppleWatch(_ workout: Workout, because reason: String) {
        log.append("apple: workout \(workout.id) queued as user info (\(reason))")
        WCSession.default.transferUserInfo(workout.payload)
    }

    // MARK: Connect IQ delegates

    public func deviceStatusChanged(_ device: IQDevice!, status: IQDeviceStatus) {
        switch status {
        case .connected:
            guard let app = garminApp else { return }
            ConnectIQ.sharedInstance().getAppStatus(app) { [self] appStatus in
                garminReady = appStatus?.isInstalled == true
                log.append(garminReady ? "garmin: app installed" : "garmin: app not installed")
                sendNextToGarmin()
            }
        case .invalidDevice, .bluetoothNotReady, .notFound, .notConnected:
            garminReady = false
        }
    }

    public func receivedMessage(_ message: Any!, from app: IQApp!) {
        log.append("garmin: the watch app says \(String(describing: message!))")
    }

    // MARK: WatchConnectivity delegates

    public func session(_ session: WCSession, activationDidCompleteWith activationState: WCSessionActivationState, error: (any Error)?) {
        log.append("apple: activation \(activationState == .activated ? "activated" : "not activated")")
        flushAppleWaiting(session)
    }

    public func sessionReachabilityDidChange(_ session: WCSession) {
        flushAppleWaiting(session)
    }

    public func sessionWatchStateDidChange(_ session: WCSession) {
        flushAppleWaiting(session)
    }

    public func sessionDidBecomeInactive(_ session: WCSession) {}

    public func sessionDidDeactivate(_ session: WCSession) {
        // The user switched watches: the new one needs a session too.
        session.activate()
    }

    public func session(_ session: WCSession, didFinish userInfoTransfer: WCSessionUserInfoTransfer, error: (any Error)?) {
        guard let id = userInfoTransfer.userInfo["id"] as? Int else { return }
        if let error {
            log.append("apple: user info for workout \(id) failed: \(error)")
        } else {
            log.append("apple: workout \(id) delivered as user info")
            deliveries.append((id, .appleUserInfo))
        }
    }

    /// Workouts that waited for activation and the watch app go once the session has both: as
    /// messages when the watch is reachable by then, else as user info. A short wait for
    /// reachability is not worth it: the user info transfer is delivered as soon as the watch can
    /// take it.
    private func flushAppleWaiting(_ session: WCSession) {
        guard session.activationState == .activated, session.isWatchAppInstalled, !waitingForAppleWatch.isEmpty else { return }
        let waiting = waitingForAppleWatch
        waitingForAppleWatch = []
        for workout in waiting { sendToAppleWatch(workout) }
    }
}
