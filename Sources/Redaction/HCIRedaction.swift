import CaptureKit

/// The HCI layer: where addresses, names, keys, PINs and passkeys sit in HCI commands, events and
/// the SMP PDUs of ACL data. The layouts are the tables of ``HCIParameters`` (Bluetooth Core 5.4,
/// Vol 4 Part E §7, and the advertising data types of Assigned Numbers); SMP key distribution is
/// Vol 3 Part H §3.6.
///
/// One walker, ``fields(in:linkType:)``, lists the fields of a frame; discovery registers their
/// values and rewriting writes each value's placeholder over it, the same length, then replaces
/// every registered address and key wherever else its bytes stand in the packet. A frame too
/// short for a field simply has no such field: nothing here traps on any input.
enum HCIRedaction {
    /// A field to redact: `count` bytes at `offset` of the frame.
    struct Field: Hashable {
        var kind: RedactedKind
        var offset: Int
        var count: Int
        /// Where the field was found, for messages (`HCI_LE_Connection_Complete Peer_Address`).
        var what: String
    }

    /// Whether frames of `linkType` are HCI packets this layer reads.
    static func reads(_ linkType: LinkType) -> Bool {
        linkType == .bluetoothHCIH4WithPHDR || linkType == .bluetoothHCIH4 || linkType == .bluetoothLinuxMonitor
    }

    /// Where the HCI packet of a frame starts and its H4 packet type (0x01 command, 0x02 ACL
    /// data, 0x04 event), or nil for a frame that holds none. A Linux monitor frame's other
    /// opcodes come back as `monitor`.
    enum Packet {
        case hci(type: UInt8, start: Int)
        /// A Linux monitor frame that is not an HCI packet: its opcode and where its payload starts.
        case monitor(opcode: UInt16, start: Int)
    }

    /// The packet in one frame of `linkType`.
    static func packet(in data: [UInt8], linkType: LinkType) -> Packet? {
        switch linkType {
        case .bluetoothHCIH4WithPHDR:
            guard data.count > 4 else { return nil }
            return .hci(type: data[4], start: 5)
        case .bluetoothHCIH4:
            guard data.count > 0 else { return nil }
            return .hci(type: data[0], start: 1)
        case .bluetoothLinuxMonitor:
            // The pcap header of LINKTYPE_BLUETOOTH_LINUX_MONITOR: adapter index and opcode, both
            // big-endian (BlueZ's btsnoop/monitor opcodes).
            guard data.count >= 4 else { return nil }
            let opcode = UInt16(data[2]) << 8 | UInt16(data[3])
            switch opcode {
            case 2: return .hci(type: 0x01, start: 4)
            case 3: return .hci(type: 0x04, start: 4)
            case 4, 5: return .hci(type: 0x02, start: 4)
            default: return .monitor(opcode: opcode, start: 4)
            }
        default:
            return nil
        }
    }

    /// Every redactable field of one frame, from the tables of ``HCIParameters``.
    static func fields(in data: [UInt8], linkType: LinkType) -> [Field] {
        var out: [Field] = []
        switch packet(in: data, linkType: linkType) {
        case .hci(0x01, let start)?: command(data, start, &out)
        case .hci(0x04, let start)?: event(data, start, &out)
        case .hci(0x02, let start)?: acl(data, start, &out)
        case .monitor(0, let start)?:
            // New Index: type, bus, BD_ADDR, name (the adapter's, e.g. `hci0`).
            out.append(Field(kind: .address, offset: start + 2, count: 6, what: "monitor New Index BD_ADDR"))
        case .monitor(10, let start)?:
            // Index Info: BD_ADDR, manufacturer.
            out.append(Field(kind: .address, offset: start, count: 6, what: "monitor Index Info BD_ADDR"))
        default: break
        }
        return out.filter { $0.offset >= 0 && $0.count > 0 && $0.offset + $0.count <= data.count }
    }

    /// Walks `parameters` over `d[at..<end]`, appending the fields found; returns where the next
    /// parameter would start, or nil when the data ends first. Never reads past `end`.
    @discardableResult
    static func walk(
        _ parameters: [HCIParameters.Parameter], _ d: [UInt8], at start: Int, end: Int, packet: String, _ out: inout [Field]
    ) -> Int? {
        var at = start
        for parameter in parameters {
            guard at <= end else { return nil }
            switch parameter {
            case .octets(let n):
                at += n
            case .address(let name):
                if at + 6 <= end { out.append(Field(kind: .address, offset: at, count: 6, what: "\(packet) \(name)")) }
                at += 6
            case .key(let name, let size):
                if at + size <= end { out.append(Field(kind: .key, offset: at, count: size, what: "\(packet) \(name)")) }
                at += size
            case .passkey(let name):
                if at + 4 <= end { out.append(Field(kind: .passkey, offset: at, count: 4, what: "\(packet) \(name)")) }
                at += 4
            case .pinCode(let name):
                guard at < end else { return nil }
                let length = max(0, min(Int(d[at]), 16, end - at - 1))
                out.append(Field(kind: .pin, offset: at + 1, count: length, what: "\(packet) \(name)"))
                at += 1 + 16
            case .name(let name, let size):
                let fieldEnd = min(end, at + size)
                if at < fieldEnd {
                    let length = d[at..<fieldEnd].firstIndex(of: 0).map { $0 - at } ?? (fieldEnd - at)
                    out.append(Field(kind: .name, offset: at, count: length, what: "\(packet) \(name)"))
                }
                at += size
            case .eir(let name, let size):
                advertisingData(d, at, length: min(size, end - at), "\(packet) \(name)", &out)
                at += size
            case .advertisingData(let name):
                guard at < end else { return nil }
                let length = Int(d[at])
                advertisingData(d, at + 1, length: min(length, end - at - 1), "\(packet) \(name)", &out)
                at += 1 + length
            case .array(_, let element):
                guard at < end else { return nil }
                let count = Int(d[at])
                at += 1
                for _ in 0..<count {
                    guard let next = walk(element, d, at: at, end: end, packet: packet, &out) else { return nil }
                    at = next
                }
            }
        }
        return at
    }

    /// The AD structures of advertising, scan response, periodic advertising or EIR data
    /// (length, type, data; a zero length ends the significant part).
    static func advertisingData(_ d: [UInt8], _ at: Int, length: Int, _ what: String, _ out: inout [Field]) {
        var i = at
        let end = min(d.count, at + max(0, length))
        while i + 1 < end {
            let count = Int(d[i])
            guard count > 0 else { break }
            let type = d[i + 1]
            let dataStart = i + 2
            let dataCount = max(0, min(count - 1, end - dataStart))
            if let (name, content) = HCIParameters.advertisingDataTypes[type] {
                let label = "\(what) AD 0x\(Hex.spell([type], upper: true, separator: "")) \(name)"
                switch content {
                case .name:
                    let length = d[dataStart..<(dataStart + dataCount)].firstIndex(of: 0).map { $0 - dataStart } ?? dataCount
                    out.append(Field(kind: .name, offset: dataStart, count: length, what: label))
                case .addresses:
                    var k = 0
                    while k + 6 <= dataCount {
                        out.append(Field(kind: .address, offset: dataStart + k, count: 6, what: label))
                        if type == 0x1B || type == 0x2E { break }
                        k += 6
                    }
                case .key:
                    if dataCount == 16 { out.append(Field(kind: .key, offset: dataStart, count: 16, what: label)) }
                }
            }
            i += 1 + count
        }
    }

    /// An HCI command: opcode (2, little-endian), parameter length (1), parameters.
    private static func command(_ d: [UInt8], _ s: Int, _ out: inout [Field]) {
        guard d.count >= s + 3 else { return }
        let opcode = UInt16(d[s]) | UInt16(d[s + 1]) << 8
        guard let layout = HCIParameters.commands[opcode] else { return }
        let p = s + 3
        walk(layout.parameters, d, at: p, end: min(d.count, p + Int(d[s + 2])), packet: layout.name, &out)
    }

    /// An HCI event: event code (1), parameter length (1), parameters.
    private static func event(_ d: [UInt8], _ s: Int, _ out: inout [Field]) {
        guard d.count >= s + 2 else { return }
        let code = d[s]
        let p = s + 2
        let end = min(d.count, p + Int(d[s + 1]))
        switch code {
        case 0x0E:
            // HCI_Command_Complete: Num_HCI_Command_Packets, Command_Opcode, return parameters.
            guard end >= p + 3 else { return }
            let opcode = UInt16(d[p + 1]) | UInt16(d[p + 2]) << 8
            guard let layout = HCIParameters.returnParameters[opcode] else { return }
            walk(layout.parameters, d, at: p + 3, end: end, packet: layout.name + " (Command Complete)", &out)
        case 0x3E:
            guard end > p, let layout = HCIParameters.leSubevents[d[p]] else { return }
            walk(layout.parameters, d, at: p + 1, end: end, packet: layout.name, &out)
        default:
            guard let layout = HCIParameters.events[code] else { return }
            walk(layout.parameters, d, at: p, end: end, packet: layout.name, &out)
        }
    }

    /// SMP key distribution (Vol 3 Part H §3.6) over L2CAP CID 0x0006 (LE) or 0x0007 (BR/EDR),
    /// in the first fragment of an ACL packet.
    private static func acl(_ d: [UInt8], _ s: Int, _ out: inout [Field]) {
        guard d.count >= s + 9 else { return }
        let boundary = (d[s + 1] >> 4) & 0x03
        guard boundary == 0 || boundary == 2 else { return }
        let cid = UInt16(d[s + 6]) | UInt16(d[s + 7]) << 8
        guard cid == 0x0006 || cid == 0x0007 else { return }
        let smp = s + 8
        switch d[smp] {
        case 0x06: out.append(Field(kind: .key, offset: smp + 1, count: 16, what: "SMP Encryption Information LTK"))
        case 0x08: out.append(Field(kind: .key, offset: smp + 1, count: 16, what: "SMP Identity Information IRK"))
        case 0x09: out.append(Field(kind: .address, offset: smp + 2, count: 6, what: "SMP Identity Address Information"))
        case 0x0A: out.append(Field(kind: .key, offset: smp + 1, count: 16, what: "SMP Signing Information CSRK"))
        default: break
        }
    }

    /// Registers every field's value of one frame in `map`.
    static func discover(_ data: [UInt8], linkType: LinkType, into map: inout RedactionMap, keepNames: Bool) {
        for field in fields(in: data, linkType: linkType) {
            let value = Array(data[field.offset..<(field.offset + field.count)])
            switch field.kind {
            case .address: map.address(wire: value)
            case .key: map.key(value)
            case .pin: map.string(.pin, value)
            case .passkey: map.passkey(value)
            case .name where !keepNames: map.string(.name, value)
            default: break
            }
        }
    }

    /// Writes each field's placeholder over it, then every registered address and key wherever
    /// its bytes stand in the rest of the packet, in either byte order (manufacturer-specific
    /// and service data, ATT values, vendor commands: an address is six bytes nothing else
    /// spells by chance); a Linux monitor system note or user log is redacted as text. Returns
    /// the count per kind.
    static func rewrite(
        _ data: inout [UInt8], linkType: LinkType, map: RedactionMap, raw: [(RedactedKind, [ByteSubstitution])], text: TextRedaction.Table
    ) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        for field in fields(in: data, linkType: linkType) {
            let range = field.offset..<(field.offset + field.count)
            guard let placeholder = map.placeholder(for: Array(data[range])), placeholder.count == field.count else { continue }
            data.replaceSubrange(range, with: placeholder)
            counts[field.kind, default: 0] += 1
        }
        let start: Int
        switch packet(in: data, linkType: linkType) {
        case .hci(_, let at)?: start = at
        case .monitor(let opcode, let at)?:
            start = at
            if opcode == 12 || opcode == 13, at < data.count {
                // System Note and User Logging: text (a log line can name a device).
                var payload = Array(data[at...])
                for (kind, n) in TextRedaction.rewrite(&payload, table: text, as: .prose) { counts[kind, default: 0] += n }
                if payload.count == data.count - at { data.replaceSubrange(at..., with: payload) }
            }
        case nil: return counts
        }
        if start < data.count {
            for (kind, n) in replaceRaw(&data, from: start, raw) { counts[kind, default: 0] += n }
        }
        return counts
    }

    /// ``rewrite(_:linkType:map:raw:text:)`` with the substitutions made from `map` for this one frame.
    static func rewrite(_ data: inout [UInt8], linkType: LinkType, map: RedactionMap) -> [RedactedKind: Int] {
        rewrite(&data, linkType: linkType, map: map, raw: rawSubstitutions(map), text: TextRedaction.Table(map))
    }

    /// The raw substitutions of every registered address and key, both byte orders, per kind.
    static func rawSubstitutions(_ map: RedactionMap) -> [(RedactedKind, [ByteSubstitution])] {
        [RedactedKind.address, .key].map { kind in
            (kind, map.entries.filter { $0.kind == kind }.flatMap { entry in
                [ByteSubstitution(entry.original, entry.placeholder, boundary: .none),
                 ByteSubstitution(entry.original.reversed(), entry.placeholder.reversed(), boundary: .none)]
            }.sorted { $0.original.count > $1.original.count })
        }.filter { !$0.1.isEmpty }
    }

    /// Applies `raw` to `data[start...]`, the same length; returns the count per kind.
    static func replaceRaw(_ data: inout [UInt8], from start: Int, _ raw: [(RedactedKind, [ByteSubstitution])]) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        guard start >= 0, start < data.count else { return counts }
        for (kind, substitutions) in raw {
            var rest = Array(data[start...])
            let n = ByteSubstitution.apply(substitutions, to: &rest)
            guard n > 0, rest.count == data.count - start else { continue }
            data.replaceSubrange(start..., with: rest)
            counts[kind, default: 0] += n
        }
        return counts
    }
}
