/// A Connect IQ device (`IQDevice`): what the device selection URL lists. Equal when the UUIDs
/// are, as the SDK compares them.
public final class IQDevice: Hashable, CustomStringConvertible, Sendable {
    // `final`, though the SDK's class is not: subclassing it is not something apps do.

    /// The device's identifier.
    public let uuid: UUID!
    /// The model name Garmin Connect Mobile gave (`fenix 7`).
    public let modelName: String!
    /// The name the user gave the device.
    public let friendlyName: String!

    /// A device (`deviceWithId:modelName:friendlyName:`).
    public init(id uuid: UUID!, modelName: String!, friendlyName: String!) {
        self.uuid = uuid
        self.modelName = modelName
        self.friendlyName = friendlyName
    }

    /// A copy of `device` (`initWithDevice:`).
    public convenience init(device: IQDevice!) {
        self.init(id: device?.uuid, modelName: device?.modelName, friendlyName: device?.friendlyName)
    }

    /// Same UUID.
    public static func == (a: IQDevice, b: IQDevice) -> Bool { a.uuid == b.uuid }
    /// Hashes the UUID.
    public func hash(into hasher: inout Hasher) { hasher.combine(uuid) }
    /// `friendlyName (modelName) UUID`.
    public var description: String {
        "\(friendlyName ?? "?") (\(modelName ?? "?")) \(uuid?.uuidString ?? "no uuid")"
    }

    /// The UUID as MessagingCore's records write it (upper case).
    var recordText: String { uuid?.uuidString ?? "00000000-0000-0000-0000-000000000000" }
}

/// An app on a device (`IQApp`): a Connect IQ app id with the store id and the device it runs on.
public final class IQApp: Hashable, CustomStringConvertible, Sendable {
    /// The app's Connect IQ id (its manifest's `id`).
    public let uuid: UUID!
    /// The app's store id (may be the app id when it has none).
    public let storeUuid: UUID!
    /// The device it runs on.
    public let device: IQDevice!
    /// The name shown in the store, when known (unknown here: the link does not carry it).
    public let displayName: String? = nil

    /// An app (`appWithUUID:storeUuid:device:`); `nil` when a part is missing, as apps written
    /// against the SDK check.
    public init?(uuid: UUID!, store storeUuid: UUID!, device: IQDevice!) {
        guard let uuid, let device, device.uuid != nil else { return nil }
        self.uuid = uuid
        self.storeUuid = storeUuid ?? uuid
        self.device = device
    }

    /// An app whose store id is unknown (`appWithUUID:device:`).
    public convenience init?(uuid: UUID!, device: IQDevice!) {
        self.init(uuid: uuid, store: uuid, device: device)
    }

    /// Same app on the same device.
    public static func == (a: IQApp, b: IQApp) -> Bool { a.uuid == b.uuid && a.device == b.device }
    /// Hashes the app and the device.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(uuid)
        hasher.combine(device)
    }
    /// `app-uuid@device-uuid`.
    public var description: String { "\(uuid.uuidString)@\(device.recordText)" }
}

/// What `getAppStatus(_:completion:)` learns (`IQAppStatus`).
public final class IQAppStatus: CustomStringConvertible, Sendable {
    /// Whether the app is installed on the device.
    public let isInstalled: Bool
    /// Its version, when installed.
    public let version: UInt16

    init(isInstalled: Bool, version: UInt16) {
        self.isInstalled = isInstalled
        self.version = version
    }

    /// `installed, version N` or `not installed`.
    public var description: String { isInstalled ? "installed, version \(version)" : "not installed" }
}
