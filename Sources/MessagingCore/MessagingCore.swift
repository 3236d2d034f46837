import DequeModule
import MonkeyC

/// The phone side of the Connect IQ companion link, sans-I/O (docs/connectiq-link.md,
/// docs/messaging-core.md).
///
/// A value-type state machine: give it one input — an app API call, a BLE host event, a received
/// notification, or "time is now T" — carry out every returned ``MessagingAction`` in order, then
/// ask ``nextDeadline`` and call ``handleTimeout(now:)`` when it comes. `now` is the time since
/// any fixed origin and must never decrease. The core owns no socket, thread, timer or clock;
/// encryption keys come from the injected ``EncryptionKeySource``.
///
/// Two kinds of error: the app misusing the API gets a typed ``MessagingAPIError`` with the state
/// unchanged; the watch misbehaving gets a ``MessagingEvent/violation(_:_:detail:)`` event, and
/// the core carries on.
public struct MessagingCore: Sendable {
    /// The limits and timers in force.
    public let configuration: MessagingConfiguration

    var keySource: any EncryptionKeySource
    var bluetoothReady = false
    /// In device-list order.
    var devices: [DeviceRecord]
    var listeners: [IQApp: [ListenerID]] = [:]
    var nextRequest: UInt64 = 1
    var nextSend: UInt64 = 1

    /// Creates a core.
    /// - Parameters:
    ///   - configuration: timers and limits (the iOS SDK's by default).
    ///   - cachedDevices: the device list the app stored (``MessagingAction/saveDeviceList(_:)``) last time.
    ///   - keySource: where transfer keys come from: ``SystemKeySource`` live, ``SeededKeySource`` or
    ///     ``ScriptedKeySource`` in tests and replay.
    ///
    /// Bluetooth starts *not ready* (as CoreBluetooth does until it reports powered on): call
    /// ``bluetoothStateChanged(ready:now:)`` once the radio is up.
    /// Whether `other` will do exactly what this core does from here on, given the same inputs
    /// and time: the same devices, links, channels, listeners, commands in flight and queued,
    /// request and send numbers, and keys to come. The configuration is left out (both cores are
    /// made from one). What a fault sweep asks of a variant and the run without its fault.
    public func hasSameState(as other: MessagingCore) -> Bool {
        bluetoothReady == other.bluetoothReady && nextRequest == other.nextRequest && nextSend == other.nextSend
            && listeners == other.listeners && devices == other.devices && keySource.givesSameKeys(as: other.keySource)
    }

    public init(
        configuration: MessagingConfiguration = .init(),
        cachedDevices: [IQDevice] = [],
        keySource: some EncryptionKeySource
    ) {
        self.configuration = configuration
        self.keySource = keySource
        var seen: Set<DeviceID> = []
        self.devices = cachedDevices.filter { seen.insert($0.uuid).inserted }.map { DeviceRecord(device: $0) }
    }

    // MARK: - Read-only state

    /// The current device list, in the order it was given.
    public var deviceList: [IQDevice] { devices.map(\.device) }

    /// The status a device would report now (`InvalidDevice` when it is not in the list).
    public func status(of device: DeviceID) -> IQDeviceStatus {
        guard let index = deviceIndex(device) else { return .invalidDevice }
        return status(of: devices[index])
    }

    /// Whether anything is in flight or queued: a command, a send, a transfer from the watch.
    /// Tests end by checking it is false.
    public var hasPendingWork: Bool {
        devices.contains { record in
            record.inFlight != nil || !record.queuedCommands.isEmpty || record.channels.contains { $0.hasTransfer || !$0.outbox.isEmpty }
        }
    }

    /// When ``handleTimeout(now:)`` should be called next; `nil` when nothing waits.
    public var nextDeadline: Duration? {
        // Asked before every frame replay feeds: read in place, without gathering deadlines into an
        // array, and through `devices[i]` each time (a computed property of the device record,
        // called as `devices[i].deadline`, copied the whole record and each open connection, per
        // device, per frame).
        var earliest: Duration?
        func consider(_ deadline: Duration?) {
            if let deadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        for deviceIndex in devices.indices {
            consider(devices[deviceIndex].inFlight?.deadline)
            for channelIndex in devices[deviceIndex].channels.indices {
                guard case .open(let open) = devices[deviceIndex].channels[channelIndex].state else { continue }
                consider(open.outbound?.deadline)
                consider(open.inbound?.deadline)
            }
        }
        return earliest
    }

    // MARK: - The app's API

    /// Reads a device selection URL from Garmin Connect Mobile (``DeviceSelectionURL``). The new list
    /// **replaces** the old one: devices no longer listed are forgotten (a registered one reports
    /// `InvalidDevice`, its operations end as if it went away); devices listed again keep their
    /// registration, link and connections.
    ///
    /// Returns ``MessagingAction/saveDeviceList(_:)``, ``MessagingEvent/deviceListReplaced(_:)``, then
    /// the consequences for the removed devices.
    /// - Throws: ``MessagingAPIError/invalidDeviceSelectionURL(_:)``; nothing changes then.
    public mutating func handleDeviceSelectionURL(_ url: String, now: Duration) throws(MessagingAPIError) -> [MessagingAction] {
        let list: [IQDevice]
        do {
            list = try DeviceSelectionURL.parse(url)
        } catch {
            throw .invalidDeviceSelectionURL(error)
        }
        var actions = handleTimeout(now: now)
        actions.append(.saveDeviceList(list))
        actions.append(.event(.deviceListReplaced(list)))
        let kept = Set(list.map(\.uuid))
        var removed: [DeviceRecord] = []
        var replacement: [DeviceRecord] = []
        for device in list {
            if let index = deviceIndex(device.uuid) {
                var record = devices[index]
                record.device = device
                replacement.append(record)
            } else {
                replacement.append(DeviceRecord(device: device))
            }
        }
        for record in devices where !kept.contains(record.device.uuid) { removed.append(record) }
        devices = replacement
        for var record in removed {
            if record.registered { actions.append(.event(.deviceStatus(record.device.uuid, .invalidDevice))) }
            actions += failEverything(&record)
            listeners = listeners.filter { $0.key.device != record.device.uuid }
        }
        return actions
    }

    /// Starts reporting a device's status; reports the current status at once (again, if already registered).
    /// - Throws: ``MessagingAPIError/unknownDevice(_:)``.
    public mutating func registerForDeviceEvents(_ device: DeviceID, now: Duration) throws(MessagingAPIError) -> [MessagingAction] {
        guard let index = deviceIndex(device) else { throw .unknownDevice(device) }
        var actions = handleTimeout(now: now)
        devices[index].registered = true
        actions.append(.event(.deviceStatus(device, status(of: devices[index]))))
        return actions
    }

    /// Stops reporting a device's status; operations already under way still finish and report.
    /// - Throws: ``MessagingAPIError/unknownDevice(_:)``, or ``MessagingAPIError/notRegisteredForDeviceEvents(_:)``
    ///   when it was not registered.
    public mutating func unregisterForDeviceEvents(_ device: DeviceID, now: Duration) throws(MessagingAPIError) -> [MessagingAction] {
        guard let index = deviceIndex(device) else { throw .unknownDevice(device) }
        guard devices[index].registered else { throw .notRegisteredForDeviceEvents(device) }
        let actions = handleTimeout(now: now)
        devices[index].registered = false
        return actions
    }

    /// Stops reporting every device's status.
    public mutating func unregisterForAllDeviceEvents(now: Duration) -> [MessagingAction] {
        let actions = handleTimeout(now: now)
        for index in devices.indices { devices[index].registered = false }
        return actions
    }

    /// Asks whether `app` is installed and in which version (command 5). The answer comes as
    /// ``MessagingEvent/appStatus(_:_:_:)`` — at once with `nil` when the device is not connected,
    /// else when the watch answers, or with `nil` after the command timeout.
    /// - Throws: ``MessagingAPIError/unknownDevice(_:)``, ``MessagingAPIError/notRegisteredForDeviceEvents(_:)``.
    public mutating func getAppStatus(_ app: IQApp, now: Duration) throws(MessagingAPIError) -> (RequestID, [MessagingAction]) {
        let index = try registeredDeviceIndex(app.device)
        var actions = handleTimeout(now: now)
        let request = RequestID(rawValue: nextRequest)
        nextRequest += 1
        guard devices[index].isConnected(bluetoothReady: bluetoothReady) else {
            actions.append(.event(.appStatus(request, app, nil)))
            return (request, actions)
        }
        actions += enqueueCommand(PendingCommand(kind: .appInfo(request), app: app.uuid), deviceAt: index, now: now)
        return (request, actions)
    }

    /// Asks the watch to open `app` (command 6). The answer comes as ``MessagingEvent/openAppResult(_:_:_:)``.
    /// - Throws: ``MessagingAPIError/unknownDevice(_:)``, ``MessagingAPIError/notRegisteredForDeviceEvents(_:)``.
    public mutating func openApp(_ app: IQApp, now: Duration) throws(MessagingAPIError) -> (RequestID, [MessagingAction]) {
        let index = try registeredDeviceIndex(app.device)
        var actions = handleTimeout(now: now)
        let request = RequestID(rawValue: nextRequest)
        nextRequest += 1
        guard devices[index].isConnected(bluetoothReady: bluetoothReady) else {
            actions.append(.event(.openAppResult(request, app, .failureDeviceNotAvailable)))
            return (request, actions)
        }
        actions += enqueueCommand(PendingCommand(kind: .openApp(request), app: app.uuid), deviceAt: index, now: now)
        return (request, actions)
    }

    /// Sends `value` to `app`. Messages to one app go one at a time, in call order; different apps
    /// and devices proceed at once. The first message to an app opens its connection (command 1).
    ///
    /// Progress and the one completion arrive as events. Ends at once, sending nothing, with
    /// `Failure_DeviceNotAvailable` when the device is not connected and with
    /// `Failure_UnsupportedType` when the serialized value exceeds ``MessagingConfiguration/maximumMessageBytes``.
    /// - Throws: ``MessagingAPIError/unknownDevice(_:)``, ``MessagingAPIError/notRegisteredForDeviceEvents(_:)``,
    ///   ``MessagingAPIError/unserializableValue(_:)``.
    public mutating func sendMessage(_ value: MonkeyCValue, to app: IQApp, now: Duration) throws(MessagingAPIError) -> (SendID, [MessagingAction]) {
        let index = try registeredDeviceIndex(app.device)
        let serialized: [UInt8]
        do {
            serialized = try MonkeyCSerialization.encode(value)
        } catch {
            throw .unserializableValue(error)
        }
        var actions = handleTimeout(now: now)
        let send = SendID(rawValue: nextSend)
        nextSend += 1
        guard serialized.count <= configuration.maximumMessageBytes else {
            actions.append(.event(.completion(send, app, .failureUnsupportedType)))
            return (send, actions)
        }
        guard devices[index].isConnected(bluetoothReady: bluetoothReady) else {
            actions.append(.event(.completion(send, app, .failureDeviceNotAvailable)))
            return (send, actions)
        }
        let channel = devices[index].channelIndex(for: app.uuid)
        devices[index].channels[channel].outbox.append(QueuedSend(id: send, serialized: serialized))
        actions += pumpChannel(deviceAt: index, channelAt: channel, now: now)
        return (send, actions)
    }

    /// Delivers `app`'s messages to `listener` from now on. Registering a second, different listener
    /// for one app reports a ``MessagingViolationKind/duplicateListener`` violation (undefined on iOS);
    /// messages then go to the earliest listener still registered.
    /// - Throws: ``MessagingAPIError/unknownDevice(_:)``, ``MessagingAPIError/notRegisteredForDeviceEvents(_:)``.
    public mutating func registerForAppMessages(_ app: IQApp, listener: ListenerID, now: Duration) throws(MessagingAPIError) -> [MessagingAction] {
        _ = try registeredDeviceIndex(app.device)
        var actions = handleTimeout(now: now)
        var current = listeners[app] ?? []
        guard !current.contains(listener) else { return actions }
        current.append(listener)
        listeners[app] = current
        if current.count > 1 {
            actions.append(.event(.violation(app.device, .duplicateListener,
                detail: "\(listener) registered for \(app), which \(current[0]) already listens to; messages go to \(current[0])")))
        }
        return actions
    }

    /// Stops delivering `app`'s messages to `listener`.
    /// - Throws: ``MessagingAPIError/unknownDevice(_:)``, ``MessagingAPIError/notRegisteredForDeviceEvents(_:)``,
    ///   ``MessagingAPIError/listenerNotRegistered(_:_:)``.
    public mutating func unregisterForAppMessages(_ app: IQApp, listener: ListenerID, now: Duration) throws(MessagingAPIError) -> [MessagingAction] {
        _ = try registeredDeviceIndex(app.device)
        guard var current = listeners[app], let position = current.firstIndex(of: listener) else {
            throw .listenerNotRegistered(app, listener)
        }
        let actions = handleTimeout(now: now)
        current.remove(at: position)
        listeners[app] = current.isEmpty ? nil : current
        return actions
    }

    // MARK: - The BLE host's inputs

    /// The radio became ready or stopped being ready. When it stops, every link is down: operations
    /// under way end with `Failure_DeviceNotAvailable` / a nil app status.
    public mutating func bluetoothStateChanged(ready: Bool, now: Duration) -> [MessagingAction] {
        var actions = handleTimeout(now: now)
        guard ready != bluetoothReady else { return actions }
        let before = devices.map { status(of: $0) }
        bluetoothReady = ready
        if !ready {
            for index in devices.indices { devices[index].link = .notConnected }
        }
        for index in devices.indices where devices[index].registered && before[index] != status(of: devices[index]) {
            actions.append(.event(.deviceStatus(devices[index].device.uuid, status(of: devices[index]))))
        }
        if !ready {
            for index in devices.indices { actions += failEverything(&devices[index]) }
        }
        return actions
    }

    /// The host connected to the device's Connect IQ service. `maxWriteLength` is the longest ATT
    /// write (ATT MTU − 3); values below 20 are taken as 20, the BLE minimum. Large data packets are
    /// used only when it is at least 192.
    public mutating func linkConnected(_ device: DeviceID, maxWriteLength: Int, now: Duration) -> [MessagingAction] {
        var actions = handleTimeout(now: now)
        guard let index = deviceIndex(device) else {
            actions.append(.event(.violation(device, .unknownDevice, detail: "link connected to \(device), which is not in the device list")))
            return actions
        }
        let before = status(of: devices[index])
        devices[index].link = .connected(maxWriteLength: max(20, maxWriteLength))
        actions += statusChange(deviceAt: index, from: before)
        return actions
    }

    /// The link to the device dropped: its connections are gone, operations under way end with
    /// `Failure_DeviceNotAvailable` / a nil app status.
    public mutating func linkDisconnected(_ device: DeviceID, now: Duration) -> [MessagingAction] {
        linkLost(device, becoming: .notConnected, now: now)
    }

    /// The host could not find the device: status `NotFound`; anything under way ends as on a disconnect.
    public mutating func linkNotFound(_ device: DeviceID, now: Duration) -> [MessagingAction] {
        linkLost(device, becoming: .notFound, now: now)
    }

    /// A notification (one ATT value) from the device's notify characteristic.
    public mutating func receive(_ notification: [UInt8], from device: DeviceID, now: Duration) -> [MessagingAction] {
        var actions = handleTimeout(now: now)
        let packet = LinkPacket.decode(notification, from: .watch)
        guard let index = deviceIndex(device) else {
            actions.append(.event(.violation(device, .unknownDevice, detail: "notification from \(device), which is not in the device list: \(packet.summary)")))
            return actions
        }
        guard devices[index].isConnected(bluetoothReady: bluetoothReady) else {
            actions.append(.event(.violation(device, .unknownDevice, detail: "notification from \(device), whose link is not up: \(packet.summary)")))
            return actions
        }
        switch packet {
        case .malformed(_, let problem):
            actions.append(.event(.violation(device, .malformedPacket, detail: "\(problem): \(packet.summary)")))
        case .unknown(let bytes):
            let kind: MessagingViolationKind = bytes.first == 0x00 ? .unknownCommand : .unknownControl
            actions.append(.event(.violation(device, kind, detail: packet.summary)))
        case .command(let command):
            actions += handleCommand(command, deviceAt: index, now: now)
        case let .control(connection, control):
            actions += handleControl(control, connection: connection, deviceAt: index, now: now)
        case let .data(sequence, connection, payload):
            actions += handleData(sequence: sequence, connection: connection, payload: payload, deviceAt: index, now: now)
        }
        return actions
    }

    /// Fires every wait whose deadline is at or before `now`, earliest first (ties: device-list order,
    /// then commands before transfers, then the order the apps were first used). A call before the
    /// next deadline does nothing.
    public mutating func handleTimeout(now: Duration) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        while let (deviceIndex, timer) = earliestDueTimer(now: now) {
            actions += fire(timer, deviceAt: deviceIndex, now: now)
        }
        return actions
    }

    // MARK: - Shared helpers

    func deviceIndex(_ device: DeviceID) -> Int? {
        devices.firstIndex { $0.device.uuid == device }
    }

    func registeredDeviceIndex(_ device: DeviceID) throws(MessagingAPIError) -> Int {
        guard let index = deviceIndex(device) else { throw .unknownDevice(device) }
        guard devices[index].registered else { throw .notRegisteredForDeviceEvents(device) }
        return index
    }

    func status(of record: DeviceRecord) -> IQDeviceStatus {
        guard bluetoothReady else { return .bluetoothNotReady }
        switch record.link {
        case .connected: return .connected
        case .notFound: return .notFound
        case .notConnected: return .notConnected
        }
    }

    func statusChange(deviceAt index: Int, from before: IQDeviceStatus) -> [MessagingAction] {
        let after = status(of: devices[index])
        guard devices[index].registered, after != before else { return [] }
        return [.event(.deviceStatus(devices[index].device.uuid, after))]
    }

    private mutating func linkLost(_ device: DeviceID, becoming link: DeviceRecord.Link, now: Duration) -> [MessagingAction] {
        var actions = handleTimeout(now: now)
        guard let index = deviceIndex(device) else {
            actions.append(.event(.violation(device, .unknownDevice, detail: "link event for \(device), which is not in the device list")))
            return actions
        }
        let before = status(of: devices[index])
        devices[index].link = link
        actions += statusChange(deviceAt: index, from: before)
        actions += failEverything(&devices[index])
        return actions
    }

    /// Ends every command, send and transfer of a device that went away, in a fixed order:
    /// commands (in queue order), then each app's active send and queued sends.
    func failEverything(_ record: inout DeviceRecord) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        let device = record.device.uuid
        let commands = record.commands
        record.inFlight = nil
        record.queuedCommands = []
        for command in commands {
            let app = IQApp(uuid: command.app, device: device)
            switch command.kind {
            case .appInfo(let request): actions.append(.event(.appStatus(request, app, nil)))
            case .openApp(let request): actions.append(.event(.openAppResult(request, app, .failureDeviceNotAvailable)))
            case .connect: break // its send fails with the channel below
            }
        }
        for channel in record.channels {
            let app = IQApp(uuid: channel.app, device: device)
            if case .open(let open) = channel.state, let active = open.outbound {
                actions.append(.event(.completion(active.id, app, .failureDeviceNotAvailable)))
            }
            for queued in channel.outbox { actions.append(.event(.completion(queued.id, app, .failureDeviceNotAvailable))) }
        }
        record.channels = []
        return actions
    }
}

// MARK: - Internal state

/// What the core knows about one device of the list.
struct DeviceRecord: Sendable, Equatable {
    enum Link: Sendable, Equatable {
        case notConnected
        case notFound
        case connected(maxWriteLength: Int)
    }

    var device: IQDevice
    var registered = false
    var link: Link = .notConnected
    /// The command written to the watch and waiting for its answer, with its command timer. One at a
    /// time per device: the watch answers commands without naming which request they answer.
    var inFlight: InFlightCommand?
    /// Commands waiting for the one in flight to end, oldest first.
    var queuedCommands: Deque<PendingCommand> = []
    /// One per app used on this device, in order of first use.
    var channels: [AppChannel] = []

    init(device: IQDevice) {
        self.device = device
    }

    func isConnected(bluetoothReady: Bool) -> Bool {
        guard bluetoothReady, case .connected = link else { return false }
        return true
    }

    var maxWriteLength: Int {
        if case .connected(let length) = link { return length }
        return 20
    }

    /// Every command of the device in the order they are written (and failed): the one in flight,
    /// then the queue.
    var commands: [PendingCommand] {
        (inFlight.map { [$0.command] } ?? []) + queuedCommands
    }

    /// Whether a connect command for `app` is queued or in flight. Asked of the queue, which holds
    /// the command, rather than kept as a flag on the channel that could disagree with it.
    func isConnecting(_ app: IQUUID) -> Bool {
        let connect = PendingCommand(kind: .connect, app: app)
        return inFlight?.command == connect || queuedCommands.contains(connect)
    }

    /// The channel for an app, created on first use.
    mutating func channelIndex(for app: IQUUID) -> Int {
        if let index = channels.firstIndex(where: { $0.app == app }) { return index }
        channels.append(AppChannel(app: app))
        return channels.count - 1
    }

    /// The channel holding connection `connection`.
    func channelIndex(connection: UInt8) -> Int? {
        channels.firstIndex { $0.connection == connection }
    }

    /// The channel holding connection `connection`, with the connection: what a packet on that
    /// connection acts on.
    func openChannel(connection: UInt8) -> (index: Int, open: OpenConnection)? {
        for (index, channel) in channels.enumerated() {
            if case .open(let open) = channel.state, open.id == connection { return (index, open) }
        }
        return nil
    }
}

/// A command to the watch awaiting its answer.
struct PendingCommand: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case connect
        case appInfo(RequestID)
        case openApp(RequestID)
    }

    var kind: Kind
    var app: IQUUID

    var packet: LinkPacket {
        switch kind {
        case .connect: .command(.connectRequest(app: app, flags: 1))
        case .appInfo: .command(.appInfoRequest(app: app))
        case .openApp: .command(.openAppRequest(app: app))
        }
    }

    var timeoutKind: MessagingTimeoutKind {
        switch kind {
        case .connect: .connect
        case .appInfo: .appInfo
        case .openApp: .openApp
        }
    }
}

/// The command written to the watch, and when its command timer runs out
/// (``MessagingCore/armCommandTimer(now:)``).
struct InFlightCommand: Sendable, Equatable {
    var command: PendingCommand
    var deadline: Duration
}
