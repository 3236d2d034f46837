import Testing
@testable import MessagingCore
import MonkeyC

@Suite struct DeviceListTests {
    @Test func deviceSelectionReplacesTheListInsteadOfMerging() throws {
        var core = MessagingCore(keySource: SeededKeySource(seed: 1))
        _ = try core.handleDeviceSelectionURL(DeviceSelectionURL.make(scheme: "t", devices: [deviceA, deviceB]), now: .zero)
        let actions = try core.handleDeviceSelectionURL(DeviceSelectionURL.make(scheme: "t", devices: [deviceB, deviceC]), now: .zero)
        #expect(actions == [.saveDeviceList([deviceB, deviceC]), .event(.deviceListReplaced([deviceB, deviceC]))])
        #expect(core.deviceList == [deviceB, deviceC])
        #expect(core.status(of: watchA) == .invalidDevice)
    }

    @Test func cachedDevicesAreTheStartingList() {
        let core = MessagingCore(cachedDevices: [deviceA, deviceB], keySource: SeededKeySource(seed: 1))
        #expect(core.deviceList == [deviceA, deviceB])
    }

    @Test func removedRegisteredDeviceReportsInvalidDeviceAndEndsItsWork() throws {
        var rig = Rig(devices: [deviceA, deviceB]) { $0.silences = [.appInfo] }
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        rig.run(actions)
        rig.clearLogs()
        rig.run(try rig.core.handleDeviceSelectionURL(DeviceSelectionURL.make(scheme: "t", devices: [deviceB]), now: .seconds(1)))
        #expect(rig.events == [.deviceListReplaced([deviceB]), .deviceStatus(watchA, .invalidDevice), .appStatus(request, echoOnA, nil)])
        #expect(rig.saved == [[deviceB]])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func deviceListedAgainKeepsItsRegistrationAndLink() throws {
        var rig = Rig(devices: [deviceA])
        let renamed = IQDevice(uuid: watchA, modelName: "fenix 5", friendlyName: "renamed")
        rig.run(try rig.core.handleDeviceSelectionURL(DeviceSelectionURL.make(scheme: "t", devices: [renamed]), now: .zero))
        #expect(rig.core.status(of: watchA) == .connected)
        #expect(rig.core.deviceList == [renamed])
        rig.clearLogs()
        rig.send(1)
        #expect(rig.completions == [.success])
    }

    @Test func malformedURLThrowsAndKeepsTheList() {
        var core = MessagingCore(cachedDevices: [deviceA], keySource: SeededKeySource(seed: 1))
        #expect(throws: MessagingAPIError.invalidDeviceSelectionURL(.wrongHost("elsewhere"))) {
            try core.handleDeviceSelectionURL("t://elsewhere?d0ID=\(watchB)", now: .zero)
        }
        #expect(core.deviceList == [deviceA])
    }
}

@Suite struct DeviceEventTests {
    @Test func registeringReportsTheCurrentStatusAtOnce() throws {
        var core = MessagingCore(cachedDevices: [deviceA], keySource: SeededKeySource(seed: 1))
        #expect(try core.registerForDeviceEvents(watchA, now: .zero) == [.event(.deviceStatus(watchA, .bluetoothNotReady))])
        _ = core.bluetoothStateChanged(ready: true, now: .zero)
        #expect(try core.registerForDeviceEvents(watchA, now: .zero) == [.event(.deviceStatus(watchA, .notConnected))])
    }

    @Test func registeredDeviceHearsEveryStatusChange() throws {
        var core = MessagingCore(cachedDevices: [deviceA], keySource: SeededKeySource(seed: 1))
        _ = try core.registerForDeviceEvents(watchA, now: .zero)
        #expect(core.bluetoothStateChanged(ready: true, now: .zero) == [.event(.deviceStatus(watchA, .notConnected))])
        #expect(core.linkConnected(watchA, maxWriteLength: 20, now: .zero) == [.event(.deviceStatus(watchA, .connected))])
        #expect(core.linkDisconnected(watchA, now: .zero) == [.event(.deviceStatus(watchA, .notConnected))])
        #expect(core.linkNotFound(watchA, now: .zero) == [.event(.deviceStatus(watchA, .notFound))])
        _ = core.linkConnected(watchA, maxWriteLength: 20, now: .zero)
        #expect(core.bluetoothStateChanged(ready: false, now: .zero) == [.event(.deviceStatus(watchA, .bluetoothNotReady))])
    }

    @Test func unregisteredDeviceHearsNothing() throws {
        var core = MessagingCore(cachedDevices: [deviceA, deviceB], keySource: SeededKeySource(seed: 1))
        _ = try core.registerForDeviceEvents(watchA, now: .zero)
        _ = try core.registerForDeviceEvents(watchB, now: .zero)
        _ = try core.unregisterForDeviceEvents(watchA, now: .zero)
        #expect(core.bluetoothStateChanged(ready: true, now: .zero) == [.event(.deviceStatus(watchB, .notConnected))])
        _ = core.unregisterForAllDeviceEvents(now: .zero)
        #expect(core.linkConnected(watchB, maxWriteLength: 20, now: .zero) == [])
    }

    @Test func registeringAnUnknownDeviceThrows() {
        var core = MessagingCore(cachedDevices: [deviceA], keySource: SeededKeySource(seed: 1))
        #expect(throws: MessagingAPIError.unknownDevice(watchB)) { try core.registerForDeviceEvents(watchB, now: .zero) }
        #expect(throws: MessagingAPIError.notRegisteredForDeviceEvents(watchA)) { try core.unregisterForDeviceEvents(watchA, now: .zero) }
    }

    @Test func linkEventForAnUnknownDeviceIsAViolation() {
        var core = MessagingCore(cachedDevices: [deviceA], keySource: SeededKeySource(seed: 1))
        let actions = core.linkConnected(watchB, maxWriteLength: 20, now: .zero)
        #expect(actions.count == 1)
        guard case .event(.violation(watchB, .unknownDevice, _)) = actions.first else {
            Issue.record("expected an unknown-device violation, got \(actions)")
            return
        }
    }
}

@Suite struct APIMisuseTests {
    /// A core that knows device A, Bluetooth ready and link up, but not registered for its events.
    func unregisteredCore() -> MessagingCore {
        var core = MessagingCore(cachedDevices: [deviceA], keySource: SeededKeySource(seed: 1))
        _ = core.bluetoothStateChanged(ready: true, now: .zero)
        _ = core.linkConnected(watchA, maxWriteLength: 20, now: .zero)
        return core
    }

    @Test func appOperationsBeforeRegisteringThrowAndChangeNothing() throws {
        var core = unregisteredCore()
        let error = MessagingAPIError.notRegisteredForDeviceEvents(watchA)
        #expect(throws: error) { try core.getAppStatus(echoOnA, now: .zero) }
        #expect(throws: error) { try core.openApp(echoOnA, now: .zero) }
        #expect(throws: error) { try core.sendMessage(1, to: echoOnA, now: .zero) }
        #expect(throws: error) { try core.registerForAppMessages(echoOnA, listener: 1, now: .zero) }
        #expect(throws: error) { try core.unregisterForAppMessages(echoOnA, listener: 1, now: .zero) }
        #expect(!core.hasPendingWork)
        #expect(core.nextDeadline == nil)
        // The ids were not used up either.
        _ = try? core.registerForDeviceEvents(watchA, now: .zero)
        #expect(try core.getAppStatus(echoOnA, now: .zero).0 == 1)
    }

    @Test func appOperationsOnAnUnknownDeviceThrow() {
        var core = unregisteredCore()
        let app = IQApp(uuid: echoApp, device: watchB)
        #expect(throws: MessagingAPIError.unknownDevice(watchB)) { try core.sendMessage(1, to: app, now: .zero) }
        #expect(throws: MessagingAPIError.unknownDevice(watchB)) { try core.getAppStatus(app, now: .zero) }
    }

    @Test func unserializableValueThrowsAndSendsNothing() throws {
        var rig = Rig()
        let tooLong = MonkeyCValue.string(String(repeating: "x", count: 70_000))
        #expect(throws: MessagingAPIError.unserializableValue(.stringTooLong(utf8Count: 70_000))) {
            try rig.core.sendMessage(tooLong, to: echoOnA, now: .zero)
        }
        #expect(!rig.core.hasPendingWork)
        #expect(rig.send(1) == 1)
    }

    @Test func unregisteringAListenerThatIsNotRegisteredThrows() {
        var rig = Rig()
        #expect(throws: MessagingAPIError.listenerNotRegistered(echoOnA, 9)) {
            try rig.core.unregisterForAppMessages(echoOnA, listener: 9, now: .zero)
        }
    }
}
