import MonkeyC

/// A watch, named by the UUID Garmin Connect Mobile gives it in the device selection.
public typealias DeviceID = IQUUID

/// A watch the user shared with the companion app (iOS `IQDevice`).
public struct IQDevice: Sendable, Hashable, CustomStringConvertible {
    /// The device's UUID, as GCM reports it; the core's ``DeviceID``.
    public var uuid: DeviceID
    /// The model, e.g. `fenix 5`.
    public var modelName: String
    /// The name the user gave the watch, e.g. `garsim01`.
    public var friendlyName: String

    /// Creates a device record.
    public init(uuid: DeviceID, modelName: String, friendlyName: String) {
        self.uuid = uuid
        self.modelName = modelName
        self.friendlyName = friendlyName
    }

    /// `friendlyName (modelName) uuid`.
    public var description: String { "\(friendlyName) (\(modelName)) \(uuid)" }
}

/// One app on one watch (iOS `IQApp`): the same app on two watches is two values.
public struct IQApp: Sendable, Hashable, CustomStringConvertible {
    /// The app's UUID from its manifest.
    public var uuid: IQUUID
    /// The watch it is on.
    public var device: DeviceID

    /// Creates an app value (iOS `appWithUUID:device:`).
    public init(uuid: IQUUID, device: DeviceID) {
        self.uuid = uuid
        self.device = device
    }

    /// `app-uuid@device-uuid`.
    public var description: String { "\(uuid)@\(device)" }
}

/// A device's connection status (iOS `IQDeviceStatus`); the raw value is the iOS name.
public enum IQDeviceStatus: String, Sendable, Hashable, CaseIterable {
    /// The device is not in the current device list.
    case invalidDevice = "InvalidDevice"
    /// Bluetooth is off or not yet ready.
    case bluetoothNotReady = "BluetoothNotReady"
    /// The device could not be found.
    case notFound = "NotFound"
    /// Known, but not connected.
    case notConnected = "NotConnected"
    /// Connected: device and app operations go over the air.
    case connected = "Connected"
}

/// What `getAppStatus` learns (iOS `IQAppStatus`).
public struct IQAppStatus: Sendable, Hashable {
    /// Whether the app is on the watch.
    public var isInstalled: Bool
    /// The installed version; 0 when the app is not installed (the wire says `0xFFFF` then).
    public var version: UInt16

    /// Creates a status.
    public init(isInstalled: Bool, version: UInt16) {
        self.isInstalled = isInstalled
        self.version = version
    }
}

/// The result of a send or an open-app request (iOS `IQSendMessageResult`, raw values 0–11).
public enum IQSendMessageResult: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// 0.
    case success = 0
    /// 1.
    case failureUnknown = 1
    /// 2.
    case failureInternalError = 2
    /// 3.
    case failureDeviceNotAvailable = 3
    /// 4.
    case failureAppNotFound = 4
    /// 5.
    case failureDeviceIsBusy = 5
    /// 6.
    case failureUnsupportedType = 6
    /// 7.
    case failureInsufficientMemory = 7
    /// 8.
    case failureTimeout = 8
    /// 9.
    case failureMaxRetries = 9
    /// 10.
    case failurePromptNotDisplayed = 10
    /// 11.
    case failureAppAlreadyRunning = 11

    /// The iOS name: `Success`, `Failure_Unknown`, … `Failure_AppAlreadyRunning`.
    public var name: String {
        switch self {
        case .success: "Success"
        case .failureUnknown: "Failure_Unknown"
        case .failureInternalError: "Failure_InternalError"
        case .failureDeviceNotAvailable: "Failure_DeviceNotAvailable"
        case .failureAppNotFound: "Failure_AppNotFound"
        case .failureDeviceIsBusy: "Failure_DeviceIsBusy"
        case .failureUnsupportedType: "Failure_UnsupportedType"
        case .failureInsufficientMemory: "Failure_InsufficientMemory"
        case .failureTimeout: "Failure_Timeout"
        case .failureMaxRetries: "Failure_MaxRetries"
        case .failurePromptNotDisplayed: "Failure_PromptNotDisplayed"
        case .failureAppAlreadyRunning: "Failure_AppAlreadyRunning"
        }
    }

    /// The iOS name (``name``).
    public var description: String { name }
}

/// Names one `getAppStatus` or `openApp` call; the core numbers them from 1.
public struct RequestID: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number.
    public var rawValue: UInt64
    /// Wraps a number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// A literal number.
    public init(integerLiteral value: UInt64) { self.rawValue = value }
    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `request N`.
    public var description: String { "request \(rawValue)" }
}

/// Names one `sendMessage` call; the core numbers them from 1.
public struct SendID: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number.
    public var rawValue: UInt64
    /// Wraps a number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// A literal number.
    public init(integerLiteral value: UInt64) { self.rawValue = value }
    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `send N`.
    public var description: String { "send \(rawValue)" }
}

/// Names a message listener (an iOS `IQAppMessageDelegate`); chosen by the caller.
public struct ListenerID: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number.
    public var rawValue: UInt64
    /// Wraps a number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// A literal number.
    public init(integerLiteral value: UInt64) { self.rawValue = value }
    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `listener N`.
    public var description: String { "listener \(rawValue)" }
}

/// Which wait ran out.
public enum MessagingTimeoutKind: String, Sendable, Hashable, CaseIterable {
    /// No connect answer (command 1) within the command timeout.
    case connect = "connect"
    /// No app info answer (command 5) within the command timeout.
    case appInfo = "app-info"
    /// No open app answer (command 6) within the command timeout.
    case openApp = "open-app"
    /// No ack of the encryption key packet within the step timeout.
    case keyAck = "key-ack"
    /// No ack of `first` within the step timeout.
    case firstAck = "first-ack"
    /// No ack after a window's seq-14 packet within the step timeout.
    case windowAck = "window-ack"
    /// No ack of `last` within the step timeout.
    case lastAck = "last-ack"
    /// A transfer from the watch stalled: nothing for the step timeout between its packets.
    case inboundTransfer = "inbound-transfer"
}

/// What the watch (or, for ``duplicateListener``, the app) did wrong.
public enum MessagingViolationKind: String, Sendable, Hashable, CaseIterable {
    /// Bytes that are no packet: empty, a known packet of the wrong size, an impossible field.
    case malformedPacket = "malformed-packet"
    /// A command id that is not 1–6, or a request-only command sent by the watch.
    case unknownCommand = "unknown-command"
    /// A transfer-control id that is not 0–6.
    case unknownControl = "unknown-control"
    /// A control or data packet on a connection id no app holds, or an invalid id in a command.
    case unknownConnection = "unknown-connection"
    /// A data packet whose seq is not the next one of the window.
    case sequenceOutsideWindow = "sequence-outside-window"
    /// An ack or `last` whose seq is not the one the transfer reached (the packet is still accepted).
    case sequenceMismatch = "sequence-mismatch"
    /// A `last` whose CRC does not match the bytes received.
    case badCRC = "bad-crc"
    /// More data than `first` announced, or fewer when `last` came.
    case lengthMismatch = "length-mismatch"
    /// An ack nothing waits for, or of a type the current step does not wait for.
    case unexpectedAck = "unexpected-ack"
    /// A command answer nothing waits for.
    case unexpectedResponse = "unexpected-response"
    /// Data or `last` without a `first`, or a `first` in the middle of a transfer.
    case unexpectedTransferPacket = "unexpected-transfer-packet"
    /// An encrypted `first` without a preceding key packet.
    case missingEncryptionKey = "missing-encryption-key"
    /// A `first` announcing more bytes than the phone accepts.
    case messageTooLarge = "message-too-large"
    /// A status or code byte outside the known values.
    case invalidStatus = "invalid-status"
    /// A complete transfer whose bytes do not decrypt or decode as a Monkey C value.
    case undecodableMessage = "undecodable-message"
    /// A notification from a device that is not in the device list, or whose link is not up.
    case unknownDevice = "unknown-device"
    /// A second listener registered for one app (undefined behaviour on iOS).
    case duplicateListener = "duplicate-listener"
}

/// Something the app (or a trace) hears from the core.
public enum MessagingEvent: Sendable, Hashable {
    /// A device selection replaced the device list (in the URL's order).
    case deviceListReplaced([IQDevice])
    /// A registered device's status, at registration and on every change.
    case deviceStatus(DeviceID, IQDeviceStatus)
    /// The answer to `getAppStatus`; `nil` when the device is not connected, went away, or the request timed out.
    case appStatus(RequestID, IQApp, IQAppStatus?)
    /// Send progress: acknowledged bytes of `total` (the bytes on the wire: ciphertext when encrypted).
    case progress(SendID, IQApp, sent: Int, total: Int)
    /// A send finished; exactly once per ``SendID``.
    case completion(SendID, IQApp, IQSendMessageResult)
    /// A message from the app, delivered to its listener.
    case messageReceived(IQApp, ListenerID, MonkeyCValue)
    /// A message from an app no listener is registered for (dropped after this event).
    case messageUnclaimed(IQApp, MonkeyCValue)
    /// The answer to `openApp`: `success` (prompt shown), `failurePromptNotDisplayed`,
    /// `failureAppNotFound` (not installed), `failureAppAlreadyRunning`; `failureTimeout` or
    /// `failureDeviceNotAvailable` when no answer came; `failureUnknown` for an unknown code.
    case openAppResult(RequestID, IQApp, IQSendMessageResult)
    /// A connection to an app opened: by the phone's connect (`byWatch` false) or the watch's command 3.
    case connectionOpened(IQApp, connection: UInt8, largePackets: Bool, byWatch: Bool)
    /// The watch closed a connection (command 4).
    case connectionClosed(IQApp, connection: UInt8)
    /// A wait ran out at `deadline`; the consequence (a nil status, a failure result) follows as its own event.
    case timeout(MessagingTimeoutKind, DeviceID, IQApp?, deadline: Duration)
    /// The watch misbehaved (or two listeners claimed one app); the core ignored what it could not use.
    case violation(DeviceID, MessagingViolationKind, detail: String)
}

/// What the host must do after a call.
public enum MessagingAction: Sendable, Hashable {
    /// Write these bytes (one packet) to the device's write characteristic, without response.
    case write(DeviceID, [UInt8])
    /// Tell the app (or the trace).
    case event(MessagingEvent)
    /// Persist this device list, replacing the stored one.
    case saveDeviceList([IQDevice])
}

/// How the app misused the API. The core's state is unchanged when one is thrown.
public enum MessagingAPIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The device is not in the current device list.
    case unknownDevice(DeviceID)
    /// A device or app operation before `registerForDeviceEvents` for that device.
    case notRegisteredForDeviceEvents(DeviceID)
    /// `unregisterForAppMessages` for a listener that is not registered for the app.
    case listenerNotRegistered(IQApp, ListenerID)
    /// The value cannot be serialized.
    case unserializableValue(MonkeyCEncodingError)
    /// The device selection URL cannot be read.
    case invalidDeviceSelectionURL(DeviceSelectionURLError)

    /// What was wrong and what to do.
    public var description: String {
        switch self {
        case .unknownDevice(let device):
            "device \(device) is not in the device list; run the device selection in Garmin Connect Mobile and pass its URL first"
        case .notRegisteredForDeviceEvents(let device):
            "register for device \(device)'s events before any device or app operation on it"
        case let .listenerNotRegistered(app, listener):
            "\(listener) is not registered for messages from \(app)"
        case .unserializableValue(let error):
            "the message cannot be serialized: \(error)"
        case .invalidDeviceSelectionURL(let error):
            "the device selection URL cannot be read: \(error)"
        }
    }
}

/// Limits and timers of a ``MessagingCore``. The defaults are the iOS SDK's (docs/connectiq-link.md).
public struct MessagingConfiguration: Sendable, Hashable {
    /// Wait for each ack of a transfer, and between packets of a transfer from the watch.
    public var stepTimeout: Duration
    /// Wait for the answer to connect, app info and open app.
    public var commandTimeout: Duration
    /// Data packets sent before waiting for an ack of type 1. The link's receivers acknowledge after
    /// every seq-14 packet, so 15 is the only value that interoperates; 1–15 are accepted (the sender
    /// then waits after the packet whose index is a multiple of `windowSize` minus one).
    public var windowSize: Int
    /// How many times `first` is sent again after a `transfer not started` ack before the send ends with `Failure_MaxRetries`.
    public var firstRetries: Int
    /// Payload bytes per data packet.
    public var smallPayload: Int
    /// Payload bytes per data packet when the connect answer set the large-packet flag and the write length allows it.
    public var largePayload: Int
    /// Encrypt every outgoing transfer (key packet, then `first` with flag `0x02`), as the iOS SDK does.
    public var encryptOutgoing: Bool
    /// Largest serialized message sent (larger ones end with `Failure_UnsupportedType`, nothing sent)
    /// and accepted from the watch (a larger `first` is answered with `out of memory`), as Android's 16,384-byte limit.
    public var maximumMessageBytes: Int

    /// Creates a configuration; every value defaults to the iOS SDK's.
    public init(
        stepTimeout: Duration = .seconds(5),
        commandTimeout: Duration = .seconds(3),
        windowSize: Int = 15,
        firstRetries: Int = 2,
        smallPayload: Int = 19,
        largePayload: Int = 191,
        encryptOutgoing: Bool = true,
        maximumMessageBytes: Int = 16_384
    ) {
        self.stepTimeout = stepTimeout
        self.commandTimeout = commandTimeout
        self.windowSize = windowSize
        self.firstRetries = firstRetries
        self.smallPayload = smallPayload
        self.largePayload = largePayload
        self.encryptOutgoing = encryptOutgoing
        self.maximumMessageBytes = maximumMessageBytes
    }
}
