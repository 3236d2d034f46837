import TetherConnectIQ

/// A companion app's sync layer as apps write it against the Connect IQ SDK (the tests of the
/// facade, replayed and live, run it): on connection it asks for the
/// app's status, sends a workout when the app is installed, retries a failed send once, and opens
/// the app when the watch echoes. Every next call is made from inside a callback.
public final class WorkoutSender: IQDeviceEventDelegate, IQAppMessageDelegate {
    public let appID = UUID(uuidString: "0180E520-5F7E-11E4-9803-0800200C9A66")!
    public var app: IQApp?
    public var statuses: [IQDeviceStatus] = []
    public var installed: Bool?
    public var results: [IQSendMessageResult] = []
    public var progress: [(UInt32, UInt32)] = []
    public var received: [Any] = []
    public var openResult: IQSendMessageResult?
    public var retries = 0
    public let retryLimit: Int

    public init(retryLimit: Int = 1) { self.retryLimit = retryLimit }

    public func start(url: URL) {
        let devices = ConnectIQ.sharedInstance().parseDeviceSelectionResponse(from: url) as? [IQDevice] ?? []
        guard let device = devices.first, let app = IQApp(uuid: appID, store: appID, device: device) else { return }
        self.app = app
        ConnectIQ.sharedInstance()?.register(forDeviceEvents: device, delegate: self)
        ConnectIQ.sharedInstance()?.register(forAppMessages: app, delegate: self)
    }

    public func deviceStatusChanged(_ device: IQDevice!, status: IQDeviceStatus) {
        statuses.append(status)
        switch status {
        case .connected:
            ConnectIQ.sharedInstance().getAppStatus(app) { [self] status in
                installed = status?.isInstalled
                if status?.isInstalled == true { send() }
            }
        case .invalidDevice, .bluetoothNotReady, .notFound, .notConnected:
            break
        }
    }

    public func send() {
        ConnectIQ.sharedInstance().sendMessage(["hello pi", 3.14159] as [Any], to: app, progress: { [self] sent, total in
            progress.append((sent, total))
        }, completion: { [self] result in
            results.append(result)
            if result != .success, retries < retryLimit {
                retries += 1
                send()
            }
        })
    }

    public func receivedMessage(_ message: Any, from app: IQApp) {
        received.append(message)
        guard received.count == 1 else { return }
        ConnectIQ.sharedInstance().openAppRequest(app) { [self] result in openResult = result }
    }
}

