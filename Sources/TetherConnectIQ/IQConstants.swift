/// The result of a send or an open-app request (`IQSendMessageResult` in `IQConstants.h`), with
/// the case names Swift gives the Objective-C enum.
public enum IQSendMessageResult: Int, Sendable, Hashable, CaseIterable {
    /// The message was sent successfully.
    case success = 0
    /// It failed for an unknown reason.
    case failure_Unknown = 1
    /// An error within the SDK or on the device.
    case failure_InternalError = 2
    /// The device is not available right now.
    case failure_DeviceNotAvailable = 3
    /// The app is not installed on the device.
    case failure_AppNotFound = 4
    /// The device is busy.
    case failure_DeviceIsBusy = 5
    /// The message held a type Monkey C cannot carry.
    case failure_UnsupportedType = 6
    /// The device has not enough memory for it.
    case failure_InsufficientMemory = 7
    /// The connection timed out while sending.
    case failure_Timeout = 8
    /// Retried, and could not complete.
    case failure_MaxRetries = 9
    /// The device chose not to show the open-app prompt.
    case failure_PromptNotDisplayed = 10
    /// The app to open was already running.
    case failure_AppAlreadyRunning = 11

    /// The result for MessagingCore's trace name (`Success`, `Failure_Timeout`…).
    init?(traceName: String) {
        guard let found = Self.allCases.first(where: { NSStringFromSendMessageResult($0) == traceName }) else { return nil }
        self = found
    }
}

/// The result's name as the SDK prints it: `Success`, `Failure_Timeout`, …
public func NSStringFromSendMessageResult(_ value: IQSendMessageResult) -> String {
    switch value {
    case .success: "Success"
    case .failure_Unknown: "Failure_Unknown"
    case .failure_InternalError: "Failure_InternalError"
    case .failure_DeviceNotAvailable: "Failure_DeviceNotAvailable"
    case .failure_AppNotFound: "Failure_AppNotFound"
    case .failure_DeviceIsBusy: "Failure_DeviceIsBusy"
    case .failure_UnsupportedType: "Failure_UnsupportedType"
    case .failure_InsufficientMemory: "Failure_InsufficientMemory"
    case .failure_Timeout: "Failure_Timeout"
    case .failure_MaxRetries: "Failure_MaxRetries"
    case .failure_PromptNotDisplayed: "Failure_PromptNotDisplayed"
    case .failure_AppAlreadyRunning: "Failure_AppAlreadyRunning"
    }
}

/// A device's connection status (`IQDeviceStatus` in `IQDevice.h`).
public enum IQDeviceStatus: Int, Sendable, Hashable, CaseIterable {
    /// Not in the device list, or not registered for its events.
    case invalidDevice = 0
    /// Bluetooth is off or not ready.
    case bluetoothNotReady = 1
    /// The device could not be found.
    case notFound = 2
    /// Known, not connected.
    case notConnected = 3
    /// Connected and ready.
    case connected = 4

    /// The status for MessagingCore's trace name (`Connected`, `NotConnected`…).
    init?(traceName: String) {
        switch traceName {
        case "InvalidDevice": self = .invalidDevice
        case "BluetoothNotReady": self = .bluetoothNotReady
        case "NotFound": self = .notFound
        case "NotConnected": self = .notConnected
        case "Connected": self = .connected
        default: return nil
        }
    }

    /// The trace's name of the status.
    var traceName: String {
        switch self {
        case .invalidDevice: "InvalidDevice"
        case .bluetoothNotReady: "BluetoothNotReady"
        case .notFound: "NotFound"
        case .notConnected: "NotConnected"
        case .connected: "Connected"
        }
    }
}

/// The SDK's version number (`IQSDKVersion`): the version of the iOS SDK whose interface this
/// module has (1.x; the link protocol is the same across them).
public let IQSDKVersion: Int32 = 10_000

/// Garmin Connect Mobile's bundle identifier (`IQGCMBundle`).
public let IQGCMBundle = "com.garmin.connect.mobile"
