@testable import MessagingCore
import MonkeyC

let watchA = IQUUID("A6230408-B526-A5D6-8929-7791342EB4AF")!
let watchB = IQUUID("3B1A5C2E-0000-4000-8000-00000000000B")!
let watchC = IQUUID("3B1A5C2E-0000-4000-8000-00000000000C")!
let echoApp = IQUUID.loopbackTestApp
let otherApp = IQUUID("11111111-2222-3333-4444-555555555555")!

let deviceA = IQDevice(uuid: watchA, modelName: "fenix 5", friendlyName: "garsim01")
let deviceB = IQDevice(uuid: watchB, modelName: "vivoactive 3", friendlyName: "wrist b")
let deviceC = IQDevice(uuid: watchC, modelName: "fr955", friendlyName: "wrist c")

let echoOnA = IQApp(uuid: echoApp, device: watchA)
let otherOnA = IQApp(uuid: otherApp, device: watchA)
let echoOnB = IQApp(uuid: echoApp, device: watchB)

/// Bytes of a hex string; spaces are ignored.
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "hex(): odd digit count in \(text)")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// The core wired to fake watches with zero latency: every write is handed to its watch at once and
/// the watch's answers are fed back, in order, at the same instant. Logs everything.
struct Rig {
    var core: MessagingCore
    var watches: [DeviceID: FakeWatch]
    var now: Duration = .zero
    /// Every event, in order.
    var events: [MessagingEvent] = []
    /// Every phone write, in order.
    var writes: [(device: DeviceID, bytes: [UInt8])] = []
    /// Every notification fed to the core, in order.
    var notifications: [(device: DeviceID, bytes: [UInt8])] = []
    /// Every device list the core asked to save.
    var saved: [[IQDevice]] = []
    /// When set, watch answers wait in `held` until ``releaseHeld()``, so several transfers interleave.
    var holding = false
    var held: [(DeviceID, [UInt8])] = []

    /// A core with `devices` in its list, registered, Bluetooth ready and every link up; logs cleared.
    init(
        devices: [IQDevice] = [deviceA],
        configuration: MessagingConfiguration = .init(),
        keySource: some EncryptionKeySource = SeededKeySource(seed: 7),
        maxWriteLength: Int = 20,
        watch configure: (inout FakeWatch) -> Void = { _ in }
    ) {
        core = MessagingCore(configuration: configuration, cachedDevices: devices, keySource: keySource)
        watches = [:]
        for device in devices {
            var watch = FakeWatch(device: device.uuid)
            configure(&watch)
            watches[device.uuid] = watch
        }
        _ = core.bluetoothStateChanged(ready: true, now: now)
        for device in devices {
            _ = try! core.registerForDeviceEvents(device.uuid, now: now)
            _ = core.linkConnected(device.uuid, maxWriteLength: maxWriteLength, now: now)
        }
    }

    /// Carries out actions; watch answers are fed back until everything settles.
    mutating func run(_ actions: [MessagingAction]) {
        var queue: [(DeviceID, [UInt8])] = []
        func take(_ actions: [MessagingAction]) {
            for action in actions {
                switch action {
                case let .write(device, bytes):
                    writes.append((device, bytes))
                    if var watch = watches[device] {
                        queue += watch.handle(bytes).map { (device, $0) }
                        watches[device] = watch
                    }
                case .event(let event):
                    events.append(event)
                case .saveDeviceList(let list):
                    saved.append(list)
                }
            }
        }
        take(actions)
        if holding {
            held += queue
            return
        }
        while !queue.isEmpty {
            let (device, bytes) = queue.removeFirst()
            notifications.append((device, bytes))
            take(core.receive(bytes, from: device, now: now))
        }
    }

    /// Delivers held answers one at a time, oldest first (their consequences are held in turn), until none is left.
    mutating func releaseHeld() {
        while !held.isEmpty {
            let (device, bytes) = held.removeFirst()
            notifications.append((device, bytes))
            run(core.receive(bytes, from: device, now: now))
        }
    }

    /// Feeds notifications from a watch (as if it sent them), in order.
    mutating func deliver(_ packets: [[UInt8]], from device: DeviceID = watchA) {
        for bytes in packets {
            notifications.append((device, bytes))
            run(core.receive(bytes, from: device, now: now))
        }
    }

    /// Moves time to `time` and fires what is due.
    mutating func advance(to time: Duration) {
        now = time
        run(core.handleTimeout(now: time))
    }

    /// Sends and runs; returns the send id.
    @discardableResult
    mutating func send(_ value: MonkeyCValue, to app: IQApp = echoOnA) -> SendID {
        let (id, actions) = try! core.sendMessage(value, to: app, now: now)
        run(actions)
        return id
    }

    /// Forgets what was logged so far.
    mutating func clearLogs() {
        events = []
        writes = []
        notifications = []
        saved = []
    }

    /// The phone's writes to one device, decoded.
    func packets(to device: DeviceID = watchA) -> [LinkPacket] {
        writes.filter { $0.device == device }.map { LinkPacket.decode($0.bytes, from: .phone) }
    }

    /// The results of every completion event, in order.
    var completions: [IQSendMessageResult] {
        events.compactMap { if case let .completion(_, _, result) = $0 { result } else { nil } }
    }

    /// Every violation kind, in order.
    var violations: [MessagingViolationKind] {
        events.compactMap { if case let .violation(_, kind, _) = $0 { kind } else { nil } }
    }

    /// Every progress event's `(sent, total)`, in order.
    var progress: [[Int]] {
        events.compactMap { if case let .progress(_, _, sent, total) = $0 { [sent, total] } else { nil } }
    }
}
