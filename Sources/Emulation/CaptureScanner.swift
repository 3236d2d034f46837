import CaptureKit
import Dissectors

/// Reads a capture set's Bluetooth HCI into a ``RecordedPeripheral``: the ATT PDUs with who sent
/// them, the union of every connection's GATT discovery, the manifest's `gatt_handles`, and the
/// peripheral's address, name and advertised services.
///
/// Which side is the GATT client is told by the PDUs only a client sends (writes, reads, discovery
/// requests; Core v6.0 Vol 3 Part F §3.4.8): the capture may have been taken on the phone (the usual
/// btsnoop) or on the peripheral.
public enum CaptureScanner {
    /// The link types whose frames are Bluetooth HCI.
    public static let bluetoothLinkTypes: Set<LinkType> = [.bluetoothHCIH4, .bluetoothHCIH4WithPHDR, .bluetoothLinuxMonitor]

    /// Scans frames already read (tests, and captures held in memory).
    public static func scan(frames: [CaptureFrame], linkType: LinkType, name: String = "<memory>") throws(EmulationError) -> RecordedPeripheral {
        var scan = Scan()
        scan.captureStartNs = frames.first?.timestampNs
        for frame in frames { scan.add(frame, linkType: linkType) }
        guard !scan.records.isEmpty else { throw .noGATTTraffic(file: name, frames: frames.count) }
        return scan.finish()
    }

    /// The state of one pass over the frames.
    struct Scan {
        var dissector = FrameDissector()
        var bluetoothFrames = 0
        var records: [(frame: Int, timeNs: Int64, connection: Int, record: ATTRecord)] = []
        /// What each discovery response added to the connection's database, with the direction it
        /// travelled: which side is the server is only known at the end, and the central's answers
        /// to a peripheral discovering the phone must not end up in the peripheral's database.
        var discoveryAdditions: [(direction: HCIDirection, database: GATTDatabase, frame: Int)] = []
        var connections: [UInt16: Int] = [:]
        var connectionCount = 0
        /// When each connection came up (its LE Connection Complete; its first frame when the
        /// capture began inside it), by ordinal.
        var connectionStart: [Int: Int64] = [:]
        /// The direction of the central's PDUs, from the first LE Connection Complete's role.
        var centralDirection: HCIDirection?
        var peerAddress: String?
        var advertisers: [String: Advertising] = [:]
        var advertiserOrder: [String] = []
        var securityRequests: [RecordedSecurityRequest] = []
        var pairings: [RecordedPairing] = []
        /// The pairing in progress on each connection (index into ``pairings``).
        var openPairing: [Int: Int] = [:]
        var notes: [String] = []
        /// The capture's first frame's timestamp, of any interface: what replay's virtual time counts from.
        var captureStartNs: Int64?
        /// Every advertising report and scan response, capture times.
        var advertisements: [RecordedAdvertisement] = []
        /// Every connection, by ordinal, capture times.
        var recordedConnections: [Int: RecordedConnection] = [:]
        /// When the host last asked for a connection that has not come up yet.
        var pendingCreateNs: Int64?
        /// Connection handles the local host sent HCI Disconnect for.
        var locallyDisconnected: Set<UInt16> = []
        /// Whether the local host was the central, from the first connection's role.
        var localIsCentral: Bool?

        init() { dissector.producesSummaries = false }

        /// The ordinal of the connection on `handle`, opening one when the capture began inside it.
        mutating func ordinal(of handle: UInt16, at timeNs: Int64) -> Int {
            if let known = connections[handle] { return known }
            let connection = connectionCount
            connections[handle] = connection
            connectionStart[connection] = timeNs
            recordedConnections[connection] = RecordedConnection(ordinal: connection, frame: nil, timeNs: timeNs)
            connectionCount += 1
            return connection
        }

        mutating func add(_ frame: CaptureFrame, linkType: LinkType) {
            bluetoothFrames += 1
            // Each open connection's database before this frame (copy-on-write: no copy is made
            // unless the frame changes it), so a discovery response's additions can be told apart.
            var databases: [UInt16: GATTDatabase] = [:]
            for handle in connections.keys { databases[handle] = dissector.gattDatabase(connectionHandle: handle) ?? GATTDatabase() }
            let dissected = dissector.dissect(frame, linkType: linkType)
            switch HostCommand.parse(frame.data, linkType: linkType) {
            case .createConnection?: pendingCreateNs = frame.timestampNs
            case .disconnect(let handle)?: locallyDisconnected.insert(handle)
            case nil: break
            }
            if case .connected(let handle, let address, let role)? = dissected.linkChange {
                connections[handle] = connectionCount
                connectionStart[connectionCount] = frame.timestampNs
                recordedConnections[connectionCount] = RecordedConnection(ordinal: connectionCount, frame: frame.number, timeNs: frame.timestampNs,
                                                                          address: address, requestedAtNs: role == 0 ? pendingCreateNs : nil)
                pendingCreateNs = nil
                if localIsCentral == nil, role <= 1 { localIsCentral = role == 0 }
                connectionCount += 1
                if role == 0, peerAddress == nil { peerAddress = address }
                // Role 0: the local host is central, so the central's PDUs are the ones it sent.
                if centralDirection == nil, role <= 1 { centralDirection = role == 0 ? .sent : .received }
            }
            if let report = AdvertisingReports.parse(frame.data, linkType: linkType) {
                for entry in report {
                    advertisements.append(RecordedAdvertisement(frame: frame.number, timeNs: frame.timestampNs, address: entry.address, data: entry.raw,
                                                                rssi: entry.rssi, isConnectable: entry.isConnectable, isScanResponse: entry.isScanResponse))
                    if advertisers[entry.address] == nil { advertiserOrder.append(entry.address) }
                    advertisers[entry.address, default: Advertising()].merge(entry.data)
                }
            }
            for record in dissected.att {
                let connection = ordinal(of: record.connectionHandle, at: frame.timestampNs)
                records.append((frame.number, frame.timestampNs, connection, record))
                if [.findInformationResponse, .findByTypeValueResponse, .readByTypeResponse, .readByGroupTypeResponse].contains(record.opcode),
                   let database = dissector.gattDatabase(connectionHandle: record.connectionHandle) {
                    let earlier = databases[record.connectionHandle] ?? GATTDatabase()
                    discoveryAdditions.append((record.direction, database.adding(since: earlier), frame.number))
                    databases[record.connectionHandle] = database
                }
            }
            for record in dissected.smp {
                addSecurityManager(record, frame: frame)
            }
            if case .disconnected(let handle, let reason)? = dissected.linkChange {
                if let ordinal = connections[handle] {
                    // The central ended it when its own host asked (the local host is the central
                    // and sent Disconnect, or is the peripheral and did not), or said it ended it.
                    let local = locallyDisconnected.contains(handle) || reason == 0x16
                    // A lost link (supervision timeout, LL response timeout, failed to be
                    // established) is no one's choice, whichever side recorded it.
                    let linkLost = [0x08, 0x22, 0x3E].contains(reason)
                    let byCentral = linkLost ? false : (localIsCentral == false ? !local : local)
                    recordedConnections[ordinal]?.disconnection = RecordedDisconnection(frame: frame.number, timeNs: frame.timestampNs, reason: reason, byCentral: byCentral)
                }
                locallyDisconnected.remove(handle)
                connections[handle] = nil
            }
        }

        /// Follows pairing on the Security Manager channel: who asked, and which pairing was made.
        mutating func addSecurityManager(_ record: SMPRecord, frame: CaptureFrame) {
            let connection = ordinal(of: record.connectionHandle, at: frame.timestampNs)
            let name = "frame \(frame.number): SMP command 0x\(String(record.code, radix: 16))"
            switch record.code {
            case 0x0B:  // Security Request: AuthReq (§3.6.7)
                guard let authReq = record.parameters.first else {
                    notes.append("\(name) (Security Request) has no AuthReq; ignored")
                    return
                }
                let delay = elapsedNs(from: connectionStart[connection] ?? frame.timestampNs, to: frame.timestampNs)
                securityRequests.append(RecordedSecurityRequest(connection: connection, frame: frame.number, delayNs: delay, authReq: authReq))
            case 0x01:  // Pairing Request
                guard let features = SMPPairingFeatures(parameters: record.parameters) else {
                    notes.append("\(name) (Pairing Request) has \(record.parameters.count) parameter bytes, expected \(SMPPairingFeatures.parameterLength); ignored")
                    return
                }
                pairings.append(RecordedPairing(connection: connection, frame: frame.number, request: features))
                openPairing[connection] = pairings.count - 1
            case 0x02:  // Pairing Response
                guard let features = SMPPairingFeatures(parameters: record.parameters) else {
                    notes.append("\(name) (Pairing Response) has \(record.parameters.count) parameter bytes, expected \(SMPPairingFeatures.parameterLength); ignored")
                    return
                }
                guard let open = openPairing[connection] else {
                    notes.append("\(name): a Pairing Response without the Pairing Request before it; ignored")
                    return
                }
                pairings[open].response = features
            case 0x05:  // Pairing Failed: Reason (§3.5.5)
                if let open = openPairing.removeValue(forKey: connection) { pairings[open].failedReason = record.parameters.first ?? 0 }
            default:
                break
            }
        }

        /// Which direction the GATT client of interest sent in, when no connection event tells the
        /// central's side (a capture that began inside the connection). Two-way captures have
        /// requests both ways — the phone uses the peripheral's database while the peripheral
        /// discovers, and may read, the phone's — so the first request proves nothing: each side
        /// scores its reads and writes of values, and the notifications and indications the other
        /// side sends it (a peripheral notifies its central).
        static func votedClientDirection(_ records: [ATTRecord]) -> HCIDirection? {
            var score: [HCIDirection: Int] = [:]
            var requests: [HCIDirection: Int] = [:]
            for record in records where record.direction != .unknown {
                if ATTRole.dataAccess.contains(record.opcode.rawValue) { score[record.direction, default: 0] += 2 }
                if record.opcode == .handleValueNotification || record.opcode == .handleValueIndication { score[record.direction == .sent ? .received : .sent, default: 0] += 2 }
                if ATTRole.clientOnly.contains(record.opcode.rawValue) { requests[record.direction, default: 0] += 1 }
            }
            for (direction, count) in requests { score[direction, default: 0] += count > 0 ? 1 : 0 }
            let sent = score[.sent] ?? 0
            let received = score[.received] ?? 0
            if sent == 0 && received == 0 { return nil }
            return sent >= received ? .sent : .received
        }

        func finish() -> RecordedPeripheral {
            // The client's direction: the one the central's reads and writes travelled in; else
            // the central's, as the link's role says; else the one any client-only PDU travelled in
            // (a peripheral discovering the phone sends client-only PDUs the other way).
            let clientDirection = centralDirection ?? Self.votedClientDirection(records.map(\.record))
            let pdus = records.map { entry -> RecordedPDU in
                let r = entry.record
                let fromClient: Bool
                if let clientDirection, r.direction != .unknown {
                    fromClient = r.direction == clientDirection
                } else {
                    fromClient = !ATTRole.serverOnly.contains(r.opcode.rawValue)
                }
                return RecordedPDU(frame: entry.frame, timeNs: entry.timeNs, connection: entry.connection, fromClient: fromClient,
                                   opcode: r.opcode.rawValue, handle: r.handle, value: r.value)
            }
            // The peripheral's database: what its own discovery responses told.
            var discovered = GATTDatabase()
            var discoveryFrames: [UInt16: Int] = [:]
            var centralAnswers = 0
            for addition in discoveryAdditions {
                if let clientDirection, addition.direction == clientDirection {
                    centralAnswers += 1
                } else {
                    discovered.merge(addition.database)
                    for handle in addition.database.describedHandles where discoveryFrames[handle] == nil { discoveryFrames[handle] = addition.frame }
                }
            }
            var notes = self.notes
            let chosen = peerAddress.flatMap { advertisers[$0] != nil ? $0 : nil } ?? (advertiserOrder.count == 1 ? advertiserOrder[0] : nil)
            let advertising = chosen.flatMap { advertisers[$0] }
            if advertising == nil {
                notes.append("no advertising report of the peripheral in the capture: name and services come from the manifest or the options")
            }
            if centralAnswers > 0 {
                notes.append("\(centralAnswers) discovery responses came from the central (the peripheral discovered the phone's database): kept out of the emulated database")
            }
            var peripheral = RecordedPeripheral(pdus: pdus, discovered: discovered, address: peerAddress ?? chosen,
                                                name: advertising?.name, advertisedServices: advertising?.services ?? [], notes: notes)
            // The host sent the client's requests: the capture was taken on the central.
            peripheral.recordedAtCentral = clientDirection == .sent
            peripheral.discoveryFrames = discoveryFrames
            peripheral.securityRequests = securityRequests
            peripheral.pairings = pairings
            peripheral.centralDiscoveries = Self.centralDiscoveries(pdus, connectionStart: connectionStart)
            // Link events on the replay's clock: since the capture's first frame.
            let start = captureStartNs ?? records.first?.timeNs ?? 0
            peripheral.captureStartNs = start
            peripheral.advertisements = advertisements.map { var a = $0; a.timeNs = elapsedNs(from: start, to: a.timeNs); return a }
            peripheral.connections = recordedConnections.keys.sorted().compactMap { recordedConnections[$0] }.map { recorded in
                var c = recorded
                c.timeNs = elapsedNs(from: start, to: c.timeNs)
                c.requestedAtNs = c.requestedAtNs.map { elapsedNs(from: start, to: $0) }
                if let ended = c.disconnection?.timeNs { c.disconnection?.timeNs = elapsedNs(from: start, to: ended) }
                return c
            }
            return peripheral
        }

        /// The peripheral's discovery requests to the central, by connection.
        static func centralDiscoveries(_ pdus: [RecordedPDU], connectionStart: [Int: Int64]) -> [RecordedCentralDiscovery] {
            var found: [Int: RecordedCentralDiscovery] = [:]
            var order: [Int] = []
            for pdu in pdus where !pdu.fromClient && RecordedCentralDiscovery.discoveryOpcodes.contains(pdu.opcode) {
                if found[pdu.connection] == nil {
                    let delay = elapsedNs(from: connectionStart[pdu.connection] ?? pdu.timeNs, to: pdu.timeNs)
                    found[pdu.connection] = RecordedCentralDiscovery(connection: pdu.connection, frame: pdu.frame, delayNs: delay, requests: [:])
                    order.append(pdu.connection)
                }
                found[pdu.connection]!.requests[pdu.opcode, default: 0] += 1
            }
            return order.compactMap { found[$0] }
        }
    }

    /// What one advertiser's reports said, merged.
    struct Advertising {
        var name: String?
        var services: [BluetoothUUID] = []

        mutating func merge(_ data: AdvertisingData) {
            if let n = data.name, name == nil || data.nameIsComplete { name = n }
            for uuid in data.services where !services.contains(uuid) { services.append(uuid) }
        }
    }
}

extension GATTDatabase {
    /// What this database holds that `earlier` did not (or held otherwise).
    func adding(since earlier: GATTDatabase) -> GATTDatabase {
        var added = GATTDatabase()
        for (handle, service) in services where earlier.services[handle] != service { added.addService(service) }
        for (handle, characteristic) in characteristics where earlier.characteristics[handle] != characteristic { added.addCharacteristic(characteristic) }
        for (handle, type) in attributeTypes where earlier.attributeTypes[handle] != type { added.addAttributeType(type, handle: handle) }
        return added
    }

    /// Every handle this database says something about: service starts, characteristic
    /// declarations and values, typed attributes.
    var describedHandles: [UInt16] {
        Array(services.keys) + characteristics.values.flatMap { [$0.declarationHandle, $0.valueHandle] } + Array(attributeTypes.keys)
    }

    /// Adds everything `other` knows to this database.
    mutating func merge(_ other: GATTDatabase) {
        for service in other.services.values { addService(service) }
        for characteristic in other.characteristics.values { addCharacteristic(characteristic) }
        for (handle, type) in other.attributeTypes { addAttributeType(type, handle: handle) }
    }
}
