import MonkeyC
@testable import SessionCore
import TetherTestSupport

let phoneID = SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!
let watchID = SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1")!
let watchBID = SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000b2")!
let strangerID = SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000ff")!

/// Bytes of a hex string; spaces are ignored.
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "hex(): odd digit count in \(text)")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// Lower-case hex, no separators.
func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}


/// A property-list dictionary numbered `n`, padded to `size` bytes of text so it spans frames.
func numbered(_ n: Int, size: Int = 0) -> MonkeyCValue {
    .object(["n": MonkeyCValue(n), "pad": .string(String(repeating: "x", count: size))])
}

/// The number of a ``numbered(_:size:)`` dictionary.
func number(of value: MonkeyCValue) -> Int? {
    guard case .dictionary(let pairs) = value,
          let pair = pairs.first(where: { $0.key == "n" }), case .int32(let n) = pair.value else { return nil }
    return Int(n)
}

/// What an app saw, including what it did, so a crash can roll it back with the session.
enum AppRecord: Equatable {
    case event(SessionEvent)
    case sentUserInfo(UserInfoTransferID, MonkeyCValue)
    case sentFile(FileTransferID, number: Int)
}

/// Where in a side's actions a planned crash strikes.
enum CrashPoint: CaseIterable {
    case afterAnyAction
    case afterWrite
    case beforePersist
    case afterPersist
    case afterDelivery
    case afterFinish
}

/// How the simulated link misbehaves.
struct LinkFaults {
    var loss = 0.0
    var duplication = 0.0
    var latency: Duration = .milliseconds(15)
    /// Extra delay, uniform in 0..<jitter, drawn per frame: frames overtake each other.
    var jitter: Duration = .zero

    static let clean = LinkFaults()
    static let rough = LinkFaults(loss: 0.1, duplication: 0.05, jitter: .milliseconds(40))
}

/// One side of the pair: its core and what its host and app did.
struct Host {
    var core: SessionCore
    /// Every event, never rolled back.
    var allEvents: [SessionEvent] = []
    /// The app's view: rolled back to `committed` at a crash.
    var app: [AppRecord] = []
    var committed: [AppRecord] = []
    var lastSnapshot: SessionSnapshot?
    /// The host's partial and received files, by (peer, id); written at once (durable).
    var files: [String: [UInt8]] = [:]
    /// Files handed to `transferFile`, kept until they finish (given back at restore).
    var outgoingFiles: [FileTransferID: [UInt8]] = [:]
    /// Every frame written, in order.
    var writes: [[UInt8]] = []
    /// Every action, in order (tests that look at the order of actions).
    var actions: [SessionAction] = []

    static func fileKey(_ peer: SessionDeviceID, _ id: FileTransferID) -> String { "\(peer)/\(id.rawValue)" }

    /// Events the app saw (committed or not), in order.
    var appEvents: [SessionEvent] {
        app.compactMap { if case .event(let event) = $0 { event } else { nil } }
    }

    var violations: [SessionViolationKind] {
        allEvents.compactMap { if case .violation(let kind, _) = $0 { kind } else { nil } }
    }
}

/// A frame on its way.
struct InFlight {
    var deliverAt: Duration
    var order: Int
    var to: SessionRole
    var bytes: [UInt8]
}

/// A phone core wired to a watch core through a simulated link; time jumps to the next frame or
/// deadline (quinn-proto's test style). Seeded: the same seed gives the same run.
struct Pair {
    var phone: Host
    var watch: Host
    var now: Duration = .zero
    var inFlight: [InFlight] = []
    var rng: SplitMix64
    var faults: LinkFaults
    var maxPayload: Int
    var configuration: SessionConfiguration
    var linkIsUp = false
    var order = 0
    var coreSeed: UInt64
    /// Crash `role` at the `skip + 1`-th place matching `point` among its next actions.
    var crashPlan: (role: SessionRole, point: CrashPoint, skip: Int)?
    var crashes = 0
    /// Sides that crashed and wait for ``recover(_:)``.
    var crashed: [SessionRole] = []
    /// The watch app answers every message that expects a reply (with `{"re": n}` / the bytes reversed).
    var watchAutoReplies = true

    init(seed: UInt64, faults: LinkFaults = .clean, maxPayload: Int = 20, configuration: SessionConfiguration = .init(),
         watchConfiguration: SessionConfiguration? = nil, activate: Bool = true, connect: Bool = true) {
        rng = SplitMix64(seed: seed)
        coreSeed = seed &* 31 &+ 7
        self.faults = faults
        self.maxPayload = maxPayload
        self.configuration = configuration
        phone = Host(core: SessionCore(role: .phone, identity: phoneID, configuration: configuration, randomSource: SeededSessionRandom(seed: coreSeed)))
        watch = Host(core: SessionCore(role: .watch, identity: watchID, configuration: watchConfiguration ?? configuration,
                                       randomSource: SeededSessionRandom(seed: coreSeed &+ 1)))
        apply(phone.core.setPairedDevice(watchID, now: now), to: .phone)
        apply(watch.core.setPairedDevice(phoneID, now: now), to: .watch)
        if activate {
            apply(try! phone.core.activate(now: now), to: .phone)
            apply(try! watch.core.activate(now: now), to: .watch)
        }
        if connect {
            raiseLink()
            settle()
        }
    }

    subscript(role: SessionRole) -> Host {
        get { role == .phone ? phone : watch }
        set { if role == .phone { phone = newValue } else { watch = newValue } }
    }

    /// Carries out actions of one side, in order (stopping where a planned crash strikes).
    mutating func apply(_ actions: [SessionAction], to role: SessionRole) {
        var host = self[role]
        var crashNow = false
        for action in actions {
            if strikes(before: action, role: role) {
                crashNow = true
                break
            }
            host.actions.append(action)
            switch action {
            case .write(let bytes):
                host.writes.append(bytes)
                send(bytes, from: role)
            case .event(let event):
                host.allEvents.append(event)
                host.app.append(.event(event))
            case .persist(let snapshot):
                host.lastSnapshot = snapshot
                host.committed = host.app
            case let .writeIncomingFile(peer, id, offset, bytes):
                var file = host.files[Host.fileKey(peer, id)] ?? []
                if file.count < offset + bytes.count { file += Array(repeating: 0, count: offset + bytes.count - file.count) }
                file.replaceSubrange(offset..<offset + bytes.count, with: bytes)
                host.files[Host.fileKey(peer, id)] = file
            case let .discardIncomingFile(peer, id):
                host.files[Host.fileKey(peer, id)] = nil
            }
            if strikes(after: action, role: role) {
                crashNow = true
                break
            }
        }
        self[role] = host
        if crashNow { crash(role) }
        if role == .watch, watchAutoReplies, !crashNow { autoReply(to: actions) }
    }

    /// Whether the planned crash strikes just before `action`.
    mutating func strikes(before action: SessionAction, role: SessionRole) -> Bool {
        guard let plan = crashPlan, plan.role == role, plan.point == .beforePersist, case .persist = action else { return false }
        return countDown()
    }

    /// Whether the planned crash strikes just after `action`.
    mutating func strikes(after action: SessionAction, role: SessionRole) -> Bool {
        guard let plan = crashPlan, plan.role == role else { return false }
        let matches: Bool
        switch (plan.point, action) {
        case (.afterAnyAction, _), (.afterWrite, .write), (.afterPersist, .persist),
             (.afterDelivery, .event(.didReceiveUserInfo)), (.afterFinish, .event(.userInfoTransferDidFinish)):
            matches = true
        default:
            matches = false
        }
        return matches && countDown()
    }

    mutating func countDown() -> Bool {
        guard let plan = crashPlan else { return false }
        if plan.skip == 0 { return true }
        crashPlan = (plan.role, plan.point, plan.skip - 1)
        return false
    }

    mutating func autoReply(to actions: [SessionAction]) {
        for action in actions {
            guard case .event(let event) = action else { continue }
            switch event {
            case let .didReceiveMessage(id, value, true):
                if let answer = try? watch.core.replyToMessage(id, with: .object(["re": MonkeyCValue(number(of: value) ?? -1)]), now: now) {
                    apply(answer, to: .watch)
                }
            case let .didReceiveMessageData(id, bytes, true):
                if let answer = try? watch.core.replyToMessageData(id, with: bytes.reversed(), now: now) {
                    apply(answer, to: .watch)
                }
            default:
                break
            }
        }
    }

    mutating func send(_ bytes: [UInt8], from role: SessionRole) {
        guard linkIsUp, !rng.chance(faults.loss) else { return }
        let copies = rng.chance(faults.duplication) ? 2 : 1
        for _ in 0..<copies {
            var delay = faults.latency
            if faults.jitter > .zero {
                let nanos = faults.jitter.components.seconds * 1_000_000_000 + faults.jitter.components.attoseconds / 1_000_000_000
                delay += .nanoseconds(Int64(rng.next() % UInt64(max(1, nanos))))
            }
            order += 1
            inFlight.append(InFlight(deliverAt: now + delay, order: order, to: role == .phone ? .watch : .phone, bytes: bytes))
        }
    }

    /// Calls the app API of one side at the current time and carries out the actions.
    @discardableResult
    mutating func call<T>(_ role: SessionRole, _ body: (inout SessionCore, Duration) throws(SessionError) -> (T, [SessionAction])) throws(SessionError) -> T {
        var core = self[role].core
        let (value, actions) = try body(&core, now)
        self[role].core = core
        apply(actions, to: role)
        return value
    }

    /// As ``call(_:_:)`` for APIs that return only actions.
    mutating func act(_ role: SessionRole, _ body: (inout SessionCore, Duration) throws(SessionError) -> [SessionAction]) throws(SessionError) {
        var core = self[role].core
        let actions = try body(&core, now)
        self[role].core = core
        apply(actions, to: role)
    }

    mutating func raiseLink() {
        linkIsUp = true
        apply(watch.core.linkUp(maxPayload: maxPayload, now: now), to: .watch)
        apply(phone.core.linkUp(maxPayload: maxPayload, now: now), to: .phone)
    }

    mutating func dropLink() {
        linkIsUp = false
        inFlight = []
        apply(phone.core.linkDown(now: now), to: .phone)
        apply(watch.core.linkDown(now: now), to: .watch)
    }

    /// The side's process dies: its core is rebuilt from its last persisted snapshot (or anew,
    /// with a new incarnation, when it never persisted); its app forgets what was not committed;
    /// the frames it wrote before dying still reach the other side; then the link drops. The app must activate again and the link must come back up.
    mutating func crash(_ role: SessionRole) {
        crashPlan = nil
        crashes += 1
        crashed.append(role)
        var host = self[role]
        coreSeed &+= 1000
        if let snapshot = host.lastSnapshot {
            host.core = try! SessionCore(restoring: snapshot, configuration: configuration,
                                         randomSource: SeededSessionRandom(seed: coreSeed), outgoingFiles: host.outgoingFiles)
        } else {
            host.core = SessionCore(role: role, identity: role == .phone ? phoneID : watchID, configuration: configuration,
                                    randomSource: SeededSessionRandom(seed: coreSeed))
            let peer = role == .phone ? watchID : phoneID
            let actions = host.core.setPairedDevice(peer, now: now)
            self[role] = host
            apply(actions, to: role)
            host = self[role]
        }
        host.app = host.committed
        self[role] = host
        // Frames the dead side already wrote have left it: they still arrive. Frames to it are lost.
        let other: SessionRole = role == .phone ? .watch : .phone
        let written = inFlight.filter { $0.to == other }.sorted { ($0.deliverAt, $0.order) < ($1.deliverAt, $1.order) }
        linkIsUp = false
        inFlight = []
        for frame in written { apply(self[other].core.receive(frame.bytes, now: now), to: other) }
        apply(self[other].core.linkDown(now: now), to: other)
    }

    /// Restarts a crashed side's app (activate) and brings the link back.
    mutating func recover(_ role: SessionRole) {
        crashed.removeAll { $0 == role }
        apply((try? self[role].core.activate(now: now)) ?? [], to: role)
        raiseLink()
    }

    /// Queues a user info on `role`; the app notes it (before the actions, so a crash before the
    /// persist takes the note back with the transfer). Returns nil when the API refused.
    @discardableResult
    mutating func transferUserInfo(_ value: MonkeyCValue, from role: SessionRole, complication: Bool = false) -> UserInfoTransferID? {
        var core = self[role].core
        let result = complication ? try? core.transferCurrentComplicationUserInfo(value, now: now)
                                  : try? core.transferUserInfo(value, now: now)
        guard let result else { return nil }
        let (id, actions) = result
        self[role].core = core
        self[role].app.append(.sentUserInfo(id, value))
        apply(actions, to: role)
        return id
    }

    /// Queues a file numbered `number` (in its metadata) on `role`; noted like ``transferUserInfo(_:from:complication:)``.
    /// The host keeps the bytes for a restore.
    @discardableResult
    mutating func transferFile(_ bytes: [UInt8], number: Int, from role: SessionRole) -> FileTransferID? {
        var core = self[role].core
        guard let result = try? core.transferFile(bytes, metadata: .object(["n": MonkeyCValue(number)]), now: now) else { return nil }
        let (id, actions) = result
        self[role].core = core
        self[role].outgoingFiles[id] = bytes
        self[role].app.append(.sentFile(id, number: number))
        apply(actions, to: role)
        return id
    }

    /// Numbers of the files the app of `role` sent (and kept across crashes), in order.
    func sentFiles(_ role: SessionRole) -> [Int] {
        self[role].app.compactMap { if case let .sentFile(_, n) = $0 { n } else { nil } }
    }

    /// The files the app of `role` received, in order.
    func receivedFiles(_ role: SessionRole) -> [SessionFile] {
        self[role].appEvents.compactMap { if case .didReceiveFile(let file) = $0 { file } else { nil } }
    }

    /// Numbers of the user infos the app of `role` received, in order.
    func receivedUserInfo(_ role: SessionRole) -> [Int] {
        self[role].appEvents.compactMap { if case let .didReceiveUserInfo(_, value, _) = $0 { number(of: value) } else { nil } }
    }

    /// Numbers of the user infos the app of `role` sent (and kept across crashes), in order.
    func sentUserInfo(_ role: SessionRole) -> [Int] {
        self[role].app.compactMap { if case let .sentUserInfo(_, value) = $0 { number(of: value) } else { nil } }
    }

    /// Ids of the user info transfers `role`'s app heard finish without error, in order.
    func finishedUserInfo(_ role: SessionRole) -> [UserInfoTransferID] {
        self[role].appEvents.compactMap { if case let .userInfoTransferDidFinish(id, nil) = $0 { id } else { nil } }
    }

    var nextTime: Duration? {
        [inFlight.map(\.deliverAt).min(), phone.core.nextDeadline, watch.core.nextDeadline].compactMap { $0 }.min()
    }

    /// Jumps to the next frame or deadline and handles everything due then. False when nothing is left.
    @discardableResult
    mutating func step() -> Bool {
        guard let time = nextTime else { return false }
        now = max(now, time)
        while let index = inFlight.indices.filter({ inFlight[$0].deliverAt <= now }).min(by: { (inFlight[$0].deliverAt, inFlight[$0].order) < (inFlight[$1].deliverAt, inFlight[$1].order) }) {
            let frame = inFlight.remove(at: index)
            apply(self[frame.to].core.receive(frame.bytes, now: now), to: frame.to)
        }
        apply(phone.core.handleTimeout(now: now), to: .phone)
        apply(watch.core.handleTimeout(now: now), to: .watch)
        return true
    }

    /// Steps until nothing is left or `limit` of virtual time has passed.
    mutating func settle(limit: Duration = .seconds(600)) {
        let end = now + limit
        while let time = nextTime, time <= end { step() }
    }

    /// Steps until `time` (handling everything due up to it), then sets the clock to it.
    mutating func run(until time: Duration) {
        while let next = nextTime, next <= time { step() }
        now = max(now, time)
    }
}
