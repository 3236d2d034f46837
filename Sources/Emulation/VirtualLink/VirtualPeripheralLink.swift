import Dissectors

/// The recorded peripheral on a virtual link, as the GATT client of a central sees it: a sans-I/O
/// state machine on the replay's virtual clock, built from a capture and driven by the central's
/// operations (what CoreBluetooth's `CBCentralManager` and `CBPeripheral` ask of the stack).
///
/// Timing keeps the recording's pace: an exchange the recording holds is answered after its
/// recorded delay but never before its recorded instant, so an app that does what the recorded
/// one did sees every answer, notification and disconnection at its recorded instant, and one
/// that does it later sees them that much later. What the recording never saw is answered as the
/// peripheral would (the database; an ATT error the database justifies) after the link's round
/// trip, and said once (``VirtualLinkEvent/unanswered(_:)``). Nothing waits on anything but the
/// clock: a request is never left without an answer.
public struct VirtualPeripheralLink: Sendable {
    // The state the request engine (VirtualPeripheralLink+ATTRequests.swift) works on is
    // internal, not private, so that file can reach it; nothing else in the module touches it.

    /// A GATT operation the central asked for, queued as ATT allows one request at a time.
    public enum Operation: Sendable, Hashable {
        /// Exchange MTU with this client MTU (CoreBluetooth's stack does it on every connection).
        case exchangeMTU(Int)
        /// Discover primary services (`nil`: all).
        case discoverServices([BluetoothUUID]?)
        /// Discover the included services of the service at this start handle.
        case discoverIncludedServices(service: UInt16)
        /// Discover the characteristics of the service at this start handle (`nil`: all).
        case discoverCharacteristics(service: UInt16, [BluetoothUUID]?)
        /// Discover the descriptors of the characteristic whose value is at this handle.
        case discoverDescriptors(characteristic: UInt16)
        /// Read the attribute at this handle.
        case read(UInt16)
        /// Write to the attribute at this handle, with response or without.
        case write(UInt16, [UInt8], withResponse: Bool)
        /// Switch notifications (or indications) of the value at this handle on or off.
        case setNotify(UInt16, Bool)
    }

    /// Where a discovery procedure is.
    struct Procedure: Sendable {
        var operation: Operation
        /// The next handle to ask from.
        var next: UInt16 = 0x0001
        /// For a discovery by UUID: which of the UUIDs is being looked for.
        var uuidIndex = 0
        var services: [EmulatedDatabase.Service] = []
        var characteristics: [EmulatedDatabase.Characteristic] = []
        var descriptors: [EmulatedDatabase.Descriptor] = []
        /// A long read or write: the offset of the next Read Blob or Prepare Write Request.
        var offset = 0
        /// A long read: the whole value, known from its first part's answer.
        var value: [UInt8]?
        /// A write or subscription: the recorded notifications it starts when accepted, counted
        /// when the request goes out (the recording counts refused ones too).
        var anchor: NotificationAnchor?
        /// Whether ``anchor`` was counted already.
        var anchored = false
    }

    /// The answer a request gets, decided when it is sent.
    enum Answer: Sendable {
        case mtu(Int)
        case services([EmulatedDatabase.Service])
        case characteristics([EmulatedDatabase.Characteristic])
        case descriptors([EmulatedDatabase.Descriptor])
        case value([UInt8])
        case accepted
        case error(UInt8)
    }

    struct InFlight: Sendable {
        var procedure: Procedure
        var answer: Answer
        var frame: Int?
        /// When the request went out: what the notifications it starts count from, as the
        /// recorded ones count from the recorded request.
        var sentAt: Int64
    }

    /// One live connection.
    struct Connection: Sendable {
        /// Which recorded connection it plays.
        var recorded: Int
        var mtu = 23
        var queue: [Procedure] = []
        var inFlight: InFlight?
        /// Value handles with notifications or indications on.
        var notifying: Set<UInt16> = []
        /// The recorded requests of its recorded connection already matched.
        var matched: Set<Int> = []
        /// The first recorded request not matched yet.
        var cursor = 0
        /// The latest recorded request matched: the look-ahead window runs from here, so a
        /// request the recorded central made and the app never makes does not hold matching back.
        var lastMatched = -1
    }

    /// The link's state; each case carries what it needs.
    enum Phase: Sendable {
        case idle
        case connecting(attempt: Int)
        case connected(Connection)
        case disconnecting(Connection)
    }

    /// Something that falls due at an instant.
    enum Due: Sendable {
        case completeConnection(attempt: Int)
        case response
        case peerDisconnect(RecordedDisconnection)
        case centralDisconnected
        case linkLoss(index: Int)
        case notification(RecordedNotification)
        case rssi(Int?)
        case event(VirtualLinkEvent)
        case attTimeout
    }

    private struct Timed: Sendable {
        var at: Int64
        var order: Int
        var epoch: Int
        var due: Due
    }

    /// Notifications that follow an anchor the central met, played in order.
    private struct Stream: Sendable {
        var anchor: NotificationAnchor
        var index = 0
        var appAnchorNs: Int64
        var epoch: Int
    }

    /// The database served.
    public let database: EmulatedDatabase
    /// The recorded exchanges.
    public let exchanges: RecordedExchanges
    /// The recorded peripheral.
    public let peripheral: RecordedPeripheral
    let faults: any VirtualLinkFaults
    var emulator: Emulator
    var phase = Phase.idle
    /// Bumped whenever a connection ends or begins: what was scheduled for an earlier one is void.
    private var epoch = 0
    private var timed: [Timed] = []
    private var order = 0
    private var streams: [Stream] = []
    /// Connections that came up so far: the next one plays the recorded connection of that ordinal.
    private var connectionsMade = 0
    /// The recorded connections with the peripheral (a phone's capture may hold others, with other devices).
    private let connections: [RecordedConnection]
    private var unavailableUntil: Int64?
    /// Scanning: the next advertisement to look at, the filter, duplicates, what was seen.
    private var scan: ScanState?

    /// A scan in progress.
    private struct ScanState: Sendable {
        /// The next recorded advertisement to look at.
        var next: Int
        /// Only advertisers listing one of these services (`nil`: all).
        var services: [BluetoothUUID]?
        /// Every report, not once per advertiser.
        var duplicates: Bool
        /// Advertisers (and their scan responses) reported once already.
        var seen: Set<String> = []
        /// The services each advertiser listed so far in this scan (a scan response adds to them).
        var advertised: [String: [BluetoothUUID]] = [:]
        /// Each advertiser's latest advertising (not scan response) report in this scan.
        var latest: [String: RecordedAdvertisement] = [:]
    }
    private var appSubscriptions: [UInt16: Int] = [:]
    private var saidOnce: Set<String> = []
    /// Counts for the summary.
    public internal(set) var counts = Counts()

    /// How the run went, for the summary.
    public struct Counts: Sendable, Hashable {
        /// Requests that matched a recorded one.
        public var matched = 0
        /// Requests that matched none.
        public var diverged = 0
        /// Notifications and indications delivered.
        public var notified = 0
        /// Notifications not delivered because the central had them switched off.
        public var notSubscribed = 0
        /// Notifications and responses a fault removed.
        public var lostToFaults = 0
        /// Requests answered without a recorded answer.
        public var unanswered = 0
    }

    /// The peripheral's address as the capture shows it.
    public var address: String { peripheral.address ?? Self.unknownAddress }

    /// The address used when the capture never showed the peripheral's (it began inside the
    /// connection, or was taken on the peripheral's side).
    public static let unknownAddress = "00:00:00:00:00:00"

    /// A link over `plan`'s peripheral (its database and answers), with `faults`.
    public init(plan: EmulationPlan, faults: any VirtualLinkFaults = NoVirtualLinkFaults()) {
        self.peripheral = plan.peripheral
        self.database = plan.database
        self.exchanges = RecordedExchanges(plan.peripheral, database: plan.database, script: plan.script)
        self.faults = faults
        self.emulator = Emulator(script: plan.script, database: plan.database, policy: .ignore)
        let address = plan.peripheral.address
        self.connections = plan.peripheral.connections.filter { $0.address == nil || address == nil || $0.address == address }
        for (index, loss) in faults.linkLosses.enumerated() {
            schedule(at: loss.atNs, .linkLoss(index: index), epoch: -1)
        }
    }

    // MARK: the central's operations

    /// Starts scanning at `now`: the recorded advertising reports from now on (of advertisers
    /// listing one of `services`, when given), once per advertiser unless `allowDuplicates`.
    public mutating func startScan(services: [BluetoothUUID]?, allowDuplicates: Bool, now: Int64) -> [VirtualLinkEvent] {
        let next = peripheral.advertisements.firstIndex { $0.timeNs >= now } ?? peripheral.advertisements.count
        scan = ScanState(next: next, services: services, duplicates: allowDuplicates)
        var events: [VirtualLinkEvent] = []
        let address = self.address
        if !peripheral.advertisements.contains(where: { $0.address == address }), let made = synthesizedAdvertisement(at: now),
           services.map({ wanted in Self.services(in: made.data).contains(where: wanted.contains) }) ?? true {
            if once("synthesized-advertisement") {
                events.append(.unanswered("the capture holds no advertising report of \(address): "
                    + "one discovery is made from what it knows (its address, Device Name and the services of its database), with no RSSI"))
            }
            scan?.seen.insert(made.address)
            schedule(at: now, .event(.advertisement(made, synthesized: true)), epoch: -1)
        }
        return events
    }

    /// Stops scanning.
    public mutating func stopScan() { scan = nil }

    /// Whether a scan is on.
    public var isScanning: Bool { scan != nil }

    /// Connects at `now`: the next recorded connection comes up after its recorded establishment
    /// time, never before its recorded instant (and not while a fault keeps the link down).
    public mutating func connect(now: Int64) -> [VirtualLinkEvent] {
        switch phase {
        case .connected, .connecting: return [.misuse("connect: the peripheral is already connected or connecting")]
        case .idle, .disconnecting: break
        }
        let attempt = connectionsMade
        phase = .connecting(attempt: attempt)
        epoch += 1
        guard let recorded = recordedConnection(attempt) else {
            return [.unanswered("connect: the capture holds no connection with the peripheral; it never connects")]
        }
        var at = after(now, recorded.establishmentNs ?? exchanges.roundTripNs)
        if attempt < connections.count { at = max(at, recorded.timeNs) }
        if let until = unavailableUntil {
            guard until != .max else { return [] }
            at = max(at, after(until, recorded.establishmentNs ?? exchanges.roundTripNs))
        }
        schedule(at: at, .completeConnection(attempt: attempt))
        return []
    }

    /// Ends the connection (or the attempt) at `now`, as the central asks.
    public mutating func cancelConnection(now: Int64) -> [VirtualLinkEvent] {
        switch phase {
        case .idle, .disconnecting:
            return []
        case .connecting:
            phase = .idle
            epoch += 1
            // CoreBluetooth reports a cancelled attempt as a disconnection without error.
            return [.disconnected(reason: 0x16, byCentral: true, frame: nil)]
        case .connected(let connection):
            phase = .disconnecting(connection)
            epoch += 1
            streams.removeAll()
            schedule(at: after(now, exchanges.roundTripNs), .centralDisconnected)
            return []
        }
    }

    /// Queues `operation`; it goes out when the requests before it have been answered.
    public mutating func perform(_ operation: Operation, now: Int64) -> [VirtualLinkEvent] {
        guard case .connected(var connection) = phase else {
            return [.misuse("\(operation) while not connected: ignored")]
        }
        if case .write(let handle, let value, withResponse: false) = operation {
            // A Write Command is sent at once, answered by nothing.
            let pdu = [0x52, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
            var events = [match(pdu, in: &connection)]
            let outcome = emulator.write(handle: handle, value: value)
            phase = .connected(connection)
            if let anchor = writeAnchor(outcome) { start(anchor, now: now) }
            if database.characteristic(valueHandle: handle) == nil { events += (unansweredOnce("write without response to handle 0x\(hex4(handle)), which the database does not hold")) }
            return events
        }
        connection.queue.append(Procedure(operation: operation))
        phase = .connected(connection)
        return sendNext(now: now)
    }

    /// Reads the RSSI: the last one recorded before now.
    public mutating func readRSSI(now: Int64) -> [VirtualLinkEvent] {
        guard case .connected = phase else { return [.misuse("readRSSI while not connected: ignored")] }
        let rssi = peripheral.advertisements.last { $0.address == address && $0.timeNs <= now && $0.rssi != nil }?.rssi
        schedule(at: after(now, exchanges.roundTripNs), .rssi(rssi))
        return rssi == nil ? unansweredOnce("readRSSI: the capture holds no RSSI of the peripheral before this instant") : []
    }

    /// The ATT_MTU now (23 when not connected).
    public var mtu: Int {
        if case .connected(let c) = phase { return c.mtu }
        return 23
    }

    // MARK: time

    /// When something falls due next; `nil` when nothing will.
    public var nextDeadlineNs: Int64? {
        var next = timed.first?.at
        if let streamNext = streams.compactMap({ dueTime(of: $0) }).min() { next = min(next ?? streamNext, streamNext) }
        if let scan, scan.next < peripheral.advertisements.count {
            let t = peripheral.advertisements[scan.next].timeNs
            next = min(next ?? t, t)
        }
        return next
    }

    /// Everything due at or before `now`, in order.
    public mutating func advance(to now: Int64) -> [VirtualLinkEvent] {
        var events: [VirtualLinkEvent] = []
        while let next = nextDeadlineNs, next <= now {
            events += fire(at: next)
        }
        return events
    }

    private mutating func fire(at now: Int64) -> [VirtualLinkEvent] {
        // Advertisements first (they are the oldest kind of input), then the timed list, then streams.
        if let next = scan?.next, next < peripheral.advertisements.count, peripheral.advertisements[next].timeNs <= now {
            // Mutated in place: a scan over a busy capture meets thousands of advertisers.
            let report = peripheral.advertisements[next]
            scan!.next += 1
            let listed = Self.services(in: report.data)
            if !listed.isEmpty { scan!.advertised[report.address, default: []] += listed }
            let wanted = scan!.services.map { wanted in scan!.advertised[report.address]?.contains(where: wanted.contains) ?? false } ?? true
            var delivered = report
            if report.isScanResponse, let advertising = scan!.latest[report.address] {
                // As iOS hands a scan response over: merged with the advertising it answered,
                // whose PDU says whether the advertiser is connectable.
                delivered.data = advertising.data + report.data
                delivered.isConnectable = advertising.isConnectable
            } else if !report.isScanResponse {
                scan!.latest[report.address] = report
            }
            let key = report.address + (report.isScanResponse ? "/scan-response" : "")
            guard wanted, scan!.duplicates || scan!.seen.insert(key).inserted else { return [] }
            return [.advertisement(delivered, synthesized: false)]
        }
        if let first = timed.first, first.at <= now {
            timed.removeFirst()
            guard first.epoch == -1 || first.epoch == epoch else { return [] }
            return handle(first.due, now: first.at)
        }
        if let index = streams.indices.min(by: { (dueTime(of: streams[$0]) ?? .max) < (dueTime(of: streams[$1]) ?? .max) }),
           let at = dueTime(of: streams[index]), at <= now {
            let stream = streams[index]
            let item = exchanges.notifications[stream.anchor]![stream.index]
            streams[index].index += 1
            if streams[index].index >= exchanges.notifications[stream.anchor]!.count { streams.remove(at: index) }
            let delays = faults.deliveries(ofFrame: item.frame, opcode: item.isIndication ? 0x1D : 0x1B, capturedAtNs: item.timeNs)
            if delays.isEmpty { counts.lostToFaults += 1 }
            var events: [VirtualLinkEvent] = []
            for delay in delays {
                if delay == 0 { events += deliver(item) } else { schedule(at: after(at, delay), .notification(item)) }
            }
            return events
        }
        return []
    }

    private mutating func handle(_ due: Due, now: Int64) -> [VirtualLinkEvent] {
        switch due {
        case .event(let event):
            if case .advertisement = event, scan == nil { return [] }
            return [event]
        case .completeConnection(let attempt):
            guard case .connecting(attempt) = phase, let recorded = recordedConnection(attempt) else { return [] }
            connectionsMade += 1
            var connection = Connection(recorded: recorded.ordinal)
            phase = .connected(connection)
            var events: [VirtualLinkEvent] = [.connected(recorded: recorded.ordinal, frame: recorded.frame)]
            if let disconnection = recorded.disconnection, !disconnection.byCentral {
                let at = max(after(now, elapsedNs(from: recorded.timeNs, to: disconnection.timeNs)), disconnection.timeNs)
                schedule(at: at, .peerDisconnect(disconnection))
            }
            let anchor = NotificationAnchor.connection(recorded.ordinal)
            if exchanges.notifications[anchor] != nil { streams.append(Stream(anchor: anchor, appAnchorNs: now, epoch: epoch)) }
            if let mtu = exchanges.clientMTU[recorded.ordinal] {
                // The stack's own exchange, as the recorded central's made it.
                connection.queue.append(Procedure(operation: .exchangeMTU(mtu)))
                phase = .connected(connection)
                events += sendNext(now: now)
            }
            return events
        case .response:
            return completeInFlight(now: now)
        case .attTimeout:
            guard case .connected = phase else { return [] }
            return endConnection(reason: 0x08, byCentral: false, frame: nil, now: now,
                                 note: "the peripheral's answer was lost and ATT's 30 s transaction timeout ended the link")
        case .peerDisconnect(let recorded):
            guard case .connected = phase else { return [] }
            return endConnection(reason: recorded.reason, byCentral: false, frame: recorded.frame, now: now, note: nil)
        case .centralDisconnected:
            guard case .disconnecting = phase else { return [] }
            phase = .idle
            epoch += 1
            return [.disconnected(reason: 0x16, byCentral: true, frame: nil)]
        case .linkLoss(let index):
            let loss = faults.linkLosses[index]
            unavailableUntil = loss.reconnectAfterNs.map { after(now, $0) } ?? .max
            switch phase {
            case .connected, .disconnecting:
                return endConnection(reason: 0x08, byCentral: false, frame: nil, now: now, note: nil)
            case .connecting(let attempt):
                // The attempt waits for the peripheral to be back (for ever, when it never is).
                epoch += 1
                if let until = unavailableUntil, until != .max, let recorded = recordedConnection(attempt) {
                    schedule(at: after(until, recorded.establishmentNs ?? exchanges.roundTripNs), .completeConnection(attempt: attempt))
                }
                return []
            case .idle:
                return []
            }
        case .notification(let item):
            return deliver(item)
        case .rssi(let value):
            return [.rssi(value)]
        }
    }

    private mutating func endConnection(reason: UInt8, byCentral: Bool, frame: Int?, now: Int64, note: String?) -> [VirtualLinkEvent] {
        phase = .idle
        epoch += 1
        streams.removeAll()
        var events: [VirtualLinkEvent] = []
        if let note { events.append(.unanswered(note)) }
        events.append(.disconnected(reason: reason, byCentral: byCentral, frame: frame))
        return events
    }

    private mutating func deliver(_ item: RecordedNotification) -> [VirtualLinkEvent] {
        guard case .connected(let connection) = phase else { return [] }
        guard connection.notifying.contains(item.handle) else {
            counts.notSubscribed += 1
            if once("not-subscribed-\(item.handle)") {
                return [.unanswered("the peripheral notified handle 0x\(hex4(item.handle)) (frame \(item.frame)) while the app had its notifications off: not delivered (said once)")]
            }
            return []
        }
        counts.notified += 1
        return [.notified(item)]
    }

    // MARK: notification streams

    /// The app's next subscription of the value at `valueHandle`: the k-th plays the recorded k-th.
    mutating func subscriptionAnchor(valueHandle: UInt16) -> NotificationAnchor? {
        guard let cccd = database.characteristic(valueHandle: valueHandle)?.descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration })?.handle else { return nil }
        let occurrence = appSubscriptions[cccd, default: 0]
        appSubscriptions[cccd] = occurrence + 1
        return .subscription(cccd: cccd, occurrence: occurrence)
    }

    /// The recorded notifications a write starts: those of the recorded write the ``Emulator``
    /// matched it with (the k-th write of those bytes to that handle plays the recorded k-th, else
    /// the n-th write to the handle), so writes are matched in one place, refused ones counted.
    func writeAnchor(_ outcome: EmulatorOutcome) -> NotificationAnchor? {
        outcome.recordedFrame.flatMap { exchanges.writeIndexByFrame[$0] }.map { .write($0) }
    }

    mutating func start(_ anchor: NotificationAnchor, now: Int64) {
        guard exchanges.notifications[anchor] != nil else { return }
        streams.append(Stream(anchor: anchor, appAnchorNs: now, epoch: epoch))
    }

    /// A stream's next notification: its recorded delay after the anchor, never before its recorded instant.
    private func dueTime(of stream: Stream) -> Int64? {
        guard stream.epoch == epoch, let items = exchanges.notifications[stream.anchor], stream.index < items.count,
              let anchorTime = exchanges.anchorTimes[stream.anchor] else { return nil }
        let item = items[stream.index]
        return max(after(stream.appAnchorNs, elapsedNs(from: anchorTime, to: item.timeNs)), item.timeNs)
    }

    // MARK: helpers

    /// ATT's transaction timeout (Core v6.0 Vol 3 Part F §3.3.3): a request unanswered this long ends the bearer.
    static let attTransactionTimeoutNs: Int64 = 30_000_000_000

    /// `delay` after `instant`, saturating: a capture's times are input, and any 64-bit values may be there.
    func after(_ instant: Int64, _ delay: Int64) -> Int64 {
        let (sum, overflow) = instant.addingReportingOverflow(max(0, delay))
        return overflow ? .max : sum
    }

    private func recordedConnection(_ attempt: Int) -> RecordedConnection? {
        guard !connections.isEmpty else { return nil }
        return connections[min(attempt, connections.count - 1)]
    }

    mutating func schedule(at: Int64, _ due: Due, epoch: Int? = nil) {
        let item = Timed(at: at, order: order, epoch: epoch ?? self.epoch, due: due)
        order += 1
        // Sorted by instant, then by order of scheduling: binary search for the insertion point.
        var low = 0
        var high = timed.count
        while low < high {
            let mid = (low + high) / 2
            if (timed[mid].at, timed[mid].order) <= (item.at, item.order) { low = mid + 1 } else { high = mid }
        }
        timed.insert(item, at: low)
    }

    private mutating func once(_ key: String) -> Bool { saidOnce.insert(key).inserted }

    mutating func unansweredOnce(_ text: String) -> [VirtualLinkEvent] {
        once(text) ? [.unanswered(text)] : []
    }

    /// A discovery made from what the capture knows, for a capture without the peripheral's advertising.
    private func synthesizedAdvertisement(at now: Int64) -> RecordedAdvertisement? {
        let address = self.address
        var data: [UInt8] = [0x02, 0x01, 0x06]
        let name = deviceName ?? peripheral.name
        if let name, !name.isEmpty {
            let bytes = Array(name.utf8.prefix(29))
            data += [UInt8(bytes.count + 1), 0x09] + bytes
        }
        let services = database.services.filter { $0.isPrimary && $0.uuid != BluetoothUUID(0x1800) && $0.uuid != BluetoothUUID(0x1801) }.map(\.uuid)
        let short = services.filter { $0.attributeSize == 2 }.flatMap(\.littleEndianAttributeBytes)
        let long = services.filter { $0.attributeSize == 16 }.flatMap(\.littleEndianAttributeBytes)
        if !short.isEmpty, short.count < 250 { data += [UInt8(short.count + 1), 0x03] + short }
        if !long.isEmpty, long.count < 250 { data += [UInt8(long.count + 1), 0x07] + long }
        return RecordedAdvertisement(frame: 0, timeNs: now, address: address, data: data, rssi: nil, isConnectable: true, isScanResponse: false)
    }

    /// The recorded Device Name (0x2A00), when the capture read it.
    private var deviceName: String? {
        for service in database.services {
            for c in service.characteristics where c.uuid == BluetoothUUID(0x2A00) {
                if let value = emulator.script.reads[c.valueHandle]?.first?.value { return String(decoding: value, as: UTF8.self) }
            }
        }
        return nil
    }

    /// Service UUIDs listed in AD structures.
    static func services(in data: [UInt8]) -> [BluetoothUUID] { AdvertisingData(data).services }

    static func isDiscovery(_ operation: Operation) -> Bool {
        switch operation {
        case .discoverServices, .discoverIncludedServices, .discoverCharacteristics, .discoverDescriptors, .exchangeMTU: true
        default: false
        }
    }

    static func describe(_ operation: Operation) -> String {
        switch operation {
        case .read(let h): "read of handle 0x\(hex4(h))"
        case .write(let h, let v, _): "write of \(v.count) bytes to handle 0x\(hex4(h))"
        case .setNotify(let h, let on): "notifications \(on ? "on" : "off") for handle 0x\(hex4(h))"
        default: "\(operation)"
        }
    }
}
