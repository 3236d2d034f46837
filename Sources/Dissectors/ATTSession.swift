extension HCIDirection {
    /// The other way; unknown stays unknown.
    var opposite: HCIDirection {
        switch self {
        case .sent: .received
        case .received: .sent
        case .unknown: .unknown
        }
    }
}

/// Turns ATT PDUs (Core v6.0 Vol 3 Part F §3.4) into ``ATTRecord``s, following each connection's
/// request/response pairs and GATT discovery.
///
/// ATT allows one outstanding request per direction per bearer (§3.3.2), and one outstanding
/// indication (§3.4.7.2); so a response's handle is the handle of the last request the other side
/// sent — as Wireshark shows it for Read, Read Blob and Write Responses and for Confirmations.
/// When that request was not captured, the handle is `nil`.
struct ATTSession: Sendable {
    struct DirectionKey: Sendable, Hashable {
        var connection: ConnectionKey
        var direction: HCIDirection
    }

    struct PendingRequest: Sendable, Hashable {
        var opcode: UInt8
        var handle: UInt16?
        /// The attribute or group type asked for (discovery requests).
        var type: BluetoothUUID?
        /// Find By Type Value's value.
        var value: [UInt8] = []
    }

    struct Result: Sendable {
        var records: [ATTRecord] = []
        var summary: String
        var problem: DissectionProblem?
    }

    /// Connections whose state is kept at once; the least recently used is forgotten beyond this,
    /// so garbage input with random handles cannot grow memory without bound.
    let maxConnections: Int
    private(set) var databases: [ConnectionKey: GATTDatabase] = [:] {
        // Any change to any database (discovery, a manifest's handles, a disconnection) makes the
        // names worked out so far stale.
        didSet { names.removeAll(keepingCapacity: true) }
    }
    /// The UUIDs ``GATTDatabase/locate(_:)`` gives each handle, per connection, as worked out
    /// from the database as it is now: an ATT record names its handle from here, so the database
    /// is searched once per handle, not once per PDU. At most
    /// ``maxNamedHandles`` per connection (garbage input may name every handle there is).
    private var names: [ConnectionKey: [UInt16: HandleNames]] = [:]
    static let maxNamedHandles = 256

    /// What a record carries about its handle.
    struct HandleNames: Sendable {
        var service: BluetoothUUID?
        var characteristic: BluetoothUUID?
        var descriptor: BluetoothUUID?
    }
    /// When `false`, single-PDU results carry an empty summary: replay reads the records only, and
    /// formatting a line for every ATT PDU was a tenth of its dissection time.
    var producesSummaries = true
    private var requests: [DirectionKey: PendingRequest] = [:]
    private var indications: [DirectionKey: UInt16] = [:]
    private var lastUse: [ConnectionKey: UInt64] = [:]
    private var useCounter: UInt64 = 0

    init(maxConnections: Int = 256) {
        self.maxConnections = max(1, maxConnections)
    }

    /// Replaces a connection's GATT database (e.g. with handles a manifest names).
    mutating func setDatabase(_ database: GATTDatabase, for connection: ConnectionKey) {
        touch(connection)
        databases[connection] = database
    }

    /// Forgets everything about a connection (Disconnection Complete: handles may be reused).
    mutating func drop(_ connection: ConnectionKey) {
        databases[connection] = nil
        lastUse[connection] = nil
        for direction in [HCIDirection.sent, .received, .unknown] {
            let key = DirectionKey(connection: connection, direction: direction)
            requests[key] = nil
            indications[key] = nil
        }
    }

    /// Dissects one ATT PDU (the L2CAP payload on CID 4). `context` names where offsets count from.
    mutating func dissect(_ pdu: UnsafeRawBufferPointer, connection: ConnectionKey, direction: HCIDirection, context: @autoclosure () -> String) -> Result {
        touch(connection)
        guard let opcodeByte = pdu.u8(at: 0) else {
            let problem = DissectionProblem.short("ATT", at: 0, need: 1, what: "ATT opcode", have: 0, context: context())
            return Result(summary: "ATT empty PDU", problem: problem)
        }
        let opcode = ATTOpcode(rawValue: opcodeByte)
        let mine = DirectionKey(connection: connection, direction: direction)
        let theirs = DirectionKey(connection: connection, direction: direction.opposite)
        // Read when needed, not per PDU: a record names its handle from ``names`` and needs the
        // database only the first time (copying it out retained each of its arrays).
        var database: GATTDatabase { databases[connection] ?? GATTDatabase() }

        func make(_ handle: UInt16?, _ value: [UInt8], in database: @autoclosure () -> GATTDatabase) -> ATTRecord {
            var record = ATTRecord(connectionHandle: connection.handle, direction: direction, opcode: opcode, handle: handle, value: value)
            if let handle {
                let named = knownNames(of: handle, connection: connection) ?? names(of: handle, connection: connection, in: database())
                record.serviceUUID = named.service
                record.characteristicUUID = named.characteristic
                record.descriptorUUID = named.descriptor
            }
            return record
        }
        func short(_ need: Int, _ what: String) -> Result {
            let problem = DissectionProblem.short("ATT", at: 0, need: need, what: "\(opcode.name) (\(what))", have: pdu.count, context: context())
            return Result(summary: "ATT \(opcode.name) [malformed]", problem: problem)
        }
        func params(from offset: Int) -> [UInt8] { pdu.bytes(at: offset, count: pdu.count - offset) ?? [] }
        func single(_ handle: UInt16?, _ value: [UInt8], detail: String? = nil) -> Result {
            let record = make(handle, value, in: databases[connection] ?? GATTDatabase())
            return Result(records: [record], summary: producesSummaries ? Self.summary(record, opcode: opcode, detail: detail) : "")
        }
        func uuid(at offset: Int, count: Int) -> BluetoothUUID? {
            pdu.bytes(at: offset, count: count).flatMap { BluetoothUUID(littleEndian: $0) }
        }

        switch opcodeByte {
        case 0x01:
            guard let requestOpcode = pdu.u8(at: 1), let handle = pdu.u16le(at: 2), let code = pdu.u8(at: 4) else {
                return short(5, "request opcode, handle, error code")
            }
            requests[theirs] = nil
            return single(handle, [requestOpcode, code],
                          detail: "(\(ATTOpcode(rawValue: requestOpcode).name): \(ATTOpcode.errorName(code)))")

        case 0x02, 0x03:
            guard let mtu = pdu.u16le(at: 1) else { return short(3, "MTU") }
            if opcodeByte == 0x02 { requests[mine] = PendingRequest(opcode: opcodeByte) } else { requests[theirs] = nil }
            return single(nil, params(from: 1), detail: "MTU \(mtu)")

        case 0x04, 0x0E, 0x20:
            guard let first = pdu.u16le(at: 1), let second = pdu.u16le(at: 3) else { return short(5, "handles") }
            requests[mine] = PendingRequest(opcode: opcodeByte)
            let detail = opcodeByte == 0x04 ? Self.range(first, second) : Self.count((pdu.count - 1) / 2, "handle")
            return single(nil, params(from: 1), detail: detail)

        case 0x05:
            guard let format = pdu.u8(at: 1) else { return short(2, "format") }
            let uuidLength: Int
            switch format {
            case 1: uuidLength = 2
            case 2: uuidLength = 16
            default:
                requests[theirs] = nil
                var result = single(nil, params(from: 1))
                result.problem = DissectionProblem(
                    layer: "ATT", offset: 1, expected: "Find Information format 1 (16-bit UUIDs) or 2 (128-bit)",
                    found: "format \(format)", context: context())
                return result
            }
            requests[theirs] = nil
            var updated = database
            var offset = 2
            while pdu.has(2 + uuidLength, at: offset), let handle = pdu.u16le(at: offset), let type = uuid(at: offset + 2, count: uuidLength) {
                updated.addAttributeType(type, handle: handle)
                offset += 2 + uuidLength
            }
            databases[connection] = updated
            var result = single(nil, params(from: 1), detail: Self.count((offset - 2) / (2 + uuidLength), "attribute"))
            if offset != pdu.count {
                result.problem = DissectionProblem(
                    layer: "ATT", offset: offset, expected: "whole \(2 + uuidLength)-byte handle/UUID pairs",
                    found: "\(pdu.count - offset) bytes left over", context: context())
            }
            return result

        case 0x06:
            guard pdu.count >= 7, let typeField = pdu.u16le(at: 5) else { return short(7, "handles, type") }
            requests[mine] = PendingRequest(opcode: opcodeByte, type: BluetoothUUID(UInt32(typeField)), value: params(from: 7))
            return single(nil, params(from: 1))

        case 0x07:
            let request = requests[theirs]
            requests[theirs] = nil
            var updated = database
            var offset = 1
            var found = 0
            let serviceType = request.flatMap { $0.opcode == 0x06 ? $0.type : nil }
            let serviceUUID = request.flatMap { BluetoothUUID(littleEndian: $0.value) }
            while let start = pdu.u16le(at: offset), let end = pdu.u16le(at: offset + 2) {
                if let serviceType, let serviceUUID,
                   serviceType == .primaryService || serviceType == .secondaryService {
                    updated.addService(.init(startHandle: start, endHandle: end, uuid: serviceUUID, isPrimary: serviceType == .primaryService))
                }
                offset += 4
                found += 1
            }
            databases[connection] = updated
            var result = single(nil, params(from: 1), detail: Self.count(found, "handle range"))
            if offset != pdu.count {
                result.problem = DissectionProblem(
                    layer: "ATT", offset: offset, expected: "whole 4-byte handle ranges",
                    found: "\(pdu.count - offset) bytes left over", context: context())
            }
            return result

        case 0x08, 0x10:
            guard pdu.count == 7 || pdu.count == 21, let type = uuid(at: 5, count: pdu.count - 5) else {
                return short(7, "handles and a 2- or 16-byte type")
            }
            requests[mine] = PendingRequest(opcode: opcodeByte, type: type)
            let range = Self.range(pdu.u16le(at: 1) ?? 0, pdu.u16le(at: 3) ?? 0)
            return single(nil, params(from: 1), detail: "\(range) type \(type)")

        case 0x09, 0x11:
            guard let length = pdu.u8(at: 1).map(Int.init) else { return short(2, "length") }
            let request = requests[theirs]
            requests[theirs] = nil
            let minimum = opcodeByte == 0x09 ? 2 : 4
            guard length >= minimum else {
                var result = single(nil, params(from: 1))
                result.problem = DissectionProblem(
                    layer: "ATT", offset: 1, expected: "an entry length of at least \(minimum)",
                    found: "length \(length)", context: context())
                return result
            }
            var updated = database
            var offset = 2
            var entries = 0
            while pdu.has(length, at: offset) {
                if opcodeByte == 0x09 {
                    // A characteristic declaration: properties, value handle, UUID (§3.3.1).
                    if request?.opcode == 0x08, request?.type == .characteristic, length == 7 || length == 21,
                       let declaration = pdu.u16le(at: offset), let properties = pdu.u8(at: offset + 2),
                       let valueHandle = pdu.u16le(at: offset + 3), let type = uuid(at: offset + 5, count: length - 5) {
                        updated.addCharacteristic(.init(declarationHandle: declaration, valueHandle: valueHandle, properties: properties, uuid: type))
                    }
                } else {
                    let groupType = request?.opcode == 0x10 ? request?.type : nil
                    if groupType == nil || groupType == .primaryService || groupType == .secondaryService,
                       let start = pdu.u16le(at: offset), let end = pdu.u16le(at: offset + 2),
                       let type = uuid(at: offset + 4, count: length - 4) {
                        updated.addService(.init(startHandle: start, endHandle: end, uuid: type, isPrimary: groupType != .secondaryService))
                    }
                }
                offset += length
                entries += 1
            }
            databases[connection] = updated
            var result = single(nil, params(from: 1), detail: Self.count(entries, "entry", plural: "entries"))
            if offset != pdu.count {
                result.problem = DissectionProblem(
                    layer: "ATT", offset: offset, expected: "whole \(length)-byte entries",
                    found: "\(pdu.count - offset) bytes left over", context: context())
            }
            return result

        case 0x0A:
            guard let handle = pdu.u16le(at: 1) else { return short(3, "handle") }
            requests[mine] = PendingRequest(opcode: opcodeByte, handle: handle)
            return single(handle, params(from: 3))

        case 0x0C:
            guard let handle = pdu.u16le(at: 1), pdu.count >= 5 else { return short(5, "handle, offset") }
            requests[mine] = PendingRequest(opcode: opcodeByte, handle: handle)
            return single(handle, params(from: 3))

        case 0x0B, 0x0D, 0x13:
            let asked: UInt8 = opcodeByte == 0x0B ? 0x0A : opcodeByte == 0x0D ? 0x0C : 0x12
            let request = requests[theirs]
            requests[theirs] = nil
            return single(request?.opcode == asked ? request?.handle : nil, params(from: 1))

        case 0x0F, 0x19, 0x21:
            requests[theirs] = nil
            return single(nil, params(from: 1))

        case 0x12:
            guard let handle = pdu.u16le(at: 1) else { return short(3, "handle") }
            requests[mine] = PendingRequest(opcode: opcodeByte, handle: handle)
            return single(handle, params(from: 3))

        case 0x16, 0x17:
            guard let handle = pdu.u16le(at: 1), let valueOffset = pdu.u16le(at: 3) else { return short(5, "handle, offset") }
            if opcodeByte == 0x16 { requests[mine] = PendingRequest(opcode: opcodeByte, handle: handle) } else { requests[theirs] = nil }
            var result = single(handle, params(from: 5), detail: "offset \(valueOffset)")
            for index in result.records.indices { result.records[index].valueOffset = valueOffset }
            return result

        case 0x18:
            guard let flags = pdu.u8(at: 1) else { return short(2, "flags") }
            requests[mine] = PendingRequest(opcode: opcodeByte)
            return single(nil, [flags], detail: flags == 0 ? "cancel" : "write")

        case 0x1B, 0x52:
            guard let handle = pdu.u16le(at: 1) else { return short(3, "handle") }
            return single(handle, params(from: 3))

        case 0x1D:
            guard let handle = pdu.u16le(at: 1) else { return short(3, "handle") }
            indications[mine] = handle
            return single(handle, params(from: 3))

        case 0x1E:
            let handle = indications[theirs]
            indications[theirs] = nil
            return single(handle, params(from: 1))

        case 0xD2:
            // The 12-byte Authentication Signature (§3.3.1) closes the PDU and is not the value.
            guard let handle = pdu.u16le(at: 1), pdu.count >= 15 else { return short(15, "handle and 12-byte signature") }
            return single(handle, pdu.bytes(at: 3, count: pdu.count - 15) ?? [])

        case 0x23:
            // Several handle/length/value tuples (§3.4.7.4): one record each, so every value is
            // visible to replay on its own.
            var records: [ATTRecord] = []
            var offset = 1
            var problem: DissectionProblem?
            while offset < pdu.count {
                guard let handle = pdu.u16le(at: offset), let length = pdu.u16le(at: offset + 2),
                      let value = pdu.bytes(at: offset + 4, count: Int(length))
                else {
                    problem = DissectionProblem(
                        layer: "ATT", offset: offset, expected: "a handle, a length and that many value bytes",
                        found: "\(pdu.count - offset) bytes", context: context())
                    break
                }
                records.append(make(handle, value, in: database))
                offset += 4 + Int(length)
            }
            let handles = records.compactMap { $0.handle.map { hex($0, digits: 4) } }.joined(separator: ", ")
            return Result(records: records, summary: "ATT \(opcode.name) \(Self.count(records.count, "value")) (\(handles))", problem: problem)

        default:
            return single(nil, params(from: 1))
        }
    }

    /// `ATT Handle Value Notification 0x0010 (6a4ecd28-…) 3 bytes`.
    static func summary(_ record: ATTRecord, opcode: ATTOpcode, detail: String?) -> String {
        var text = "ATT \(opcode.name)"
        if let handle = record.handle {
            text += " " + hex(handle, digits: 4)
            let characteristic = record.characteristicUUID?.abbreviated
            switch (record.descriptorUUID?.abbreviated, characteristic) {
            case (let descriptor?, let characteristic?): text += " (\(descriptor) of \(characteristic))"
            case (let descriptor?, nil): text += " (\(descriptor))"
            case (nil, let characteristic?): text += " (\(characteristic))"
            case (nil, nil): break
            }
        }
        if let detail { return text + " " + detail }
        // Requests and answers that carry no value read better without "0 bytes".
        if record.value.isEmpty && !Self.carriesValue.contains(opcode.rawValue) { return text }
        return text + " \(record.value.count) bytes"
    }

    /// Opcodes whose parameters end in an attribute value (possibly empty).
    private static let carriesValue: Set<UInt8> = [0x0B, 0x0D, 0x0F, 0x12, 0x16, 0x17, 0x1B, 0x1D, 0x21, 0x52, 0xD2]

    private static func count(_ n: Int, _ singular: String, plural: String? = nil) -> String {
        "\(n) " + (n == 1 ? singular : plural ?? singular + "s")
    }

    private static func range(_ first: UInt16, _ last: UInt16) -> String {
        "\(hex(first, digits: 4))..\(hex(last, digits: 4))"
    }

    /// `handle`'s UUIDs in `database` (the connection's database as it is now, or an empty one
    /// when it has none), worked out and kept in ``names`` (``knownNames(of:connection:)`` first).
    private mutating func names(of handle: UInt16, connection: ConnectionKey, in database: GATTDatabase) -> HandleNames {
        let location = database.locate(handle)
        let named = HandleNames(service: location.service, characteristic: location.characteristic, descriptor: location.descriptor)
        if names[connection]?.count ?? 0 >= Self.maxNamedHandles { names[connection] = nil }
        names[connection, default: [:]][handle] = named
        return named
    }

    /// `handle`'s UUIDs as ``names(of:connection:in:)`` worked them out before, if it did.
    private func knownNames(of handle: UInt16, connection: ConnectionKey) -> HandleNames? {
        names[connection]?[handle]
    }

    private mutating func touch(_ connection: ConnectionKey) {
        useCounter &+= 1
        lastUse[connection] = useCounter
        guard lastUse.count > maxConnections,
              let oldest = lastUse.min(by: { $0.value < $1.value })?.key else { return }
        drop(oldest)
    }
}
