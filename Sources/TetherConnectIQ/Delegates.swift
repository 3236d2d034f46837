// Linux Swift has no `@objc optional` requirements. Every optional method of the SDK's protocols is
// declared here as a requirement *and* given an empty default in an extension: a method that
// existed only in the extension would be dispatched statically, so the app's own implementation
// would never be called through the protocol. The flip side, which docs/app-in-the-loop.md spells
// out: a misspelt method compiles and silently gets the default. The trace shows every callback
// delivered (`app` `callback` events), so a callback the app never reacted to can be seen there.
//
// The SDK's headers carry no nullability, so Swift sees `IQDevice!` and `Any!`; apps implement
// either that spelling or the non-optional one (both compile against the real SDK). Both are
// requirements and both are called, each with its default, so whichever the app wrote runs once.

/// Handles a device's connection status events (`IQDeviceEventDelegate`).
public protocol IQDeviceEventDelegate: AnyObject {
    /// The device's connection status changed.
    func deviceStatusChanged(_ device: IQDevice!, status: IQDeviceStatus)
    /// The same callback, as apps that declare non-optional parameters write it.
    func deviceStatusChanged(_ device: IQDevice, status: IQDeviceStatus)
}

extension IQDeviceEventDelegate {
    /// Default: nothing.
    public func deviceStatusChanged(_ device: IQDevice!, status: IQDeviceStatus) {}
    /// Default: nothing.
    public func deviceStatusChanged(_ device: IQDevice, status: IQDeviceStatus) {}
}

/// Handles messages from an app on a device (`IQAppMessageDelegate`).
public protocol IQAppMessageDelegate: AnyObject {
    /// A message arrived from `app`. `message` is a `String`, a number (`Int`, `Double`), `Bool`,
    /// `[Any]`, `[String: Any]` (`[AnyHashable: Any]` when a key is not a string), `Data` for a
    /// byte array, or `NSNull`.
    func receivedMessage(_ message: Any!, from app: IQApp!)
    /// The same callback, as apps that declare non-optional parameters write it.
    func receivedMessage(_ message: Any, from app: IQApp)
}

extension IQAppMessageDelegate {
    /// Default: nothing.
    public func receivedMessage(_ message: Any!, from app: IQApp!) {}
    /// Default: nothing.
    public func receivedMessage(_ message: Any, from app: IQApp) {}
}

/// Handles events that need the user (`IQUIOverrideDelegate`).
public protocol IQUIOverrideDelegate: AnyObject {
    /// Garmin Connect Mobile is needed and not installed. Never called in the loop: the recording
    /// stands for an installed Garmin Connect Mobile.
    func needsToInstallConnectMobile()
}

extension IQUIOverrideDelegate {
    /// Default: nothing.
    public func needsToInstallConnectMobile() {}
}
