import CaptureKit
import CaptureSet
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

    /// Scans the set at `setPath`. `verify` checks the capture's recorded SHA-256 first.
    public static func scan(setPath: String, verify: Bool = true) throws(EmulationError) -> RecordedPeripheral {
        let loaded: LoadedCaptureSet
        do {
            loaded = try CaptureSetDirectory.load(setPath, verify: verify)
        } catch {
            throw .cannotLoad(set: setPath, reason: "\(error)")
        }
        var named: [UInt16: (service: String?, characteristic: String)] = [:]
        for handle in loaded.manifest.gattHandles { named[handle.handle] = (handle.serviceUUID, handle.characteristicUUID) }
        let reader: any CaptureReader
        do {
            reader = try CaptureFile.open(path: loaded.capturePath)
        } catch {
            throw .unreadableCapture(file: loaded.capturePath, frame: 0, reason: "\(error)")
        }
        var scan = Scan()
        var lastFrame = 0
        while true {
            let frame: CaptureFrame?
            do {
                frame = try reader.next()
            } catch {
                throw .unreadableCapture(file: loaded.capturePath, frame: lastFrame, reason: "\(error)")
            }
            guard let frame else { break }
            lastFrame = frame.number
            guard frame.interfaceIndex < reader.interfaces.count else { continue }
            let linkType = reader.interfaces[frame.interfaceIndex].linkType
            guard bluetoothLinkTypes.contains(linkType) else { continue }
            scan.add(frame, linkType: linkType)
        }
        guard scan.bluetoothFrames > 0 else {
            throw .noBluetoothInterface(file: loaded.capturePath, linkTypes: reader.interfaces.map(\.linkType.rawValue))
        }
        guard !scan.records.isEmpty else { throw .noGATTTraffic(file: loaded.capturePath, frames: scan.bluetoothFrames) }
        var peripheral = scan.finish()
        peripheral.namedHandles = named
        return peripheral
    }

    /// Scans frames already read (tests, and captures held in memory).
    public static func scan(frames: [CaptureFrame], linkType: LinkType, name: String = "<memory>") throws(EmulationError) -> RecordedPeripheral {
        var scan = Scan()
        for frame in frames { scan.add(frame, linkType: linkType) }
        guard !scan.records.isEmpty else { throw .noGATTTraffic(file: name, frames: frames.count) }
        return scan.finish()
    }

    /// The state of one pass over the frames.
    struct Scan {
        var dissector = FrameDissector()
        var bluetoothFrames = 0
        var records: [(frame: Int, timeNs: Int64, connection: Int, record: ATTRecord)] = []
        var discovered = GATTDatabase()
        var connections: [UInt16: Int] = [:]
        var connectionCount = 0
        var peerAddress: String?
        var advertisers: [String: Advertising] = [:]
        var advertiserOrder: [String] = []

        init() { dissector.producesSummaries = false }

        mutating func add(_ frame: CaptureFrame, linkType: LinkType) {
            bluetoothFrames += 1
            let dissected = dissector.dissect(frame, linkType: linkType)
            if case .connected(let handle, let address, let role)? = dissected.linkChange {
                connections[handle] = connectionCount
                connectionCount += 1
                if role == 0, peerAddress == nil { peerAddress = address }
            }
            if let report = AdvertisingReports.parse(frame.data, linkType: linkType) {
                for entry in report {
                    if advertisers[entry.address] == nil { advertiserOrder.append(entry.address) }
                    advertisers[entry.address, default: Advertising()].merge(entry.data)
                }
            }
            for record in dissected.att {
                let connection: Int
                if let known = connections[record.connectionHandle] {
                    connection = known
                } else {
                    // The capture began inside this connection.
                    connection = connectionCount
                    connections[record.connectionHandle] = connection
                    connectionCount += 1
                }
                records.append((frame.number, frame.timestampNs, connection, record))
                if [0x05, 0x07, 0x09, 0x11].contains(record.opcode),
                   let database = dissector.gattDatabase(connectionHandle: record.connectionHandle) {
                    discovered.merge(database)
                }
            }
            if case .disconnected(let handle, _)? = dissected.linkChange { connections[handle] = nil }
        }

        func finish() -> RecordedPeripheral {
            // The client's direction is the one a client-only PDU travelled in.
            let clientDirection = records.first { ATTRole.clientOnly.contains($0.record.opcode) && $0.record.direction != .unknown }?.record.direction
            let pdus = records.map { entry -> RecordedPDU in
                let r = entry.record
                let fromClient: Bool
                if let clientDirection, r.direction != .unknown {
                    fromClient = r.direction == clientDirection
                } else {
                    fromClient = !ATTRole.serverOnly.contains(r.opcode)
                }
                return RecordedPDU(frame: entry.frame, timeNs: entry.timeNs, connection: entry.connection, fromClient: fromClient,
                                   opcode: r.opcode, handle: r.handle, value: r.value)
            }
            var notes: [String] = []
            let chosen = peerAddress.flatMap { advertisers[$0] != nil ? $0 : nil } ?? (advertiserOrder.count == 1 ? advertiserOrder[0] : nil)
            let advertising = chosen.flatMap { advertisers[$0] }
            if advertising == nil {
                notes.append("no advertising report of the peripheral in the capture: name and services come from the manifest or the options")
            }
            var peripheral = RecordedPeripheral(pdus: pdus, discovered: discovered, address: peerAddress ?? chosen,
                                                name: advertising?.name, advertisedServices: advertising?.services ?? [], notes: notes)
            // The host sent the client's requests: the capture was taken on the central.
            peripheral.recordedAtCentral = clientDirection == .sent
            return peripheral
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
    /// Adds everything `other` knows to this database.
    mutating func merge(_ other: GATTDatabase) {
        for service in other.services.values { addService(service) }
        for characteristic in other.characteristics.values { addCharacteristic(characteristic) }
        for (handle, type) in other.attributeTypes { addAttributeType(type, handle: handle) }
    }
}
