import CaptureKit

/// The HCI layer: where addresses, names and keys sit in HCI commands, events and the SMP PDUs
/// of ACL data (Bluetooth Core 5.4, Vol 4 Part E §7 for commands and events, Vol 3 Part H §3.6
/// for SMP key distribution, Vol 3 Part C §11 for advertising data).
///
/// One walker, ``fields(in:linkType:)``, lists the fields of a frame; discovery registers their
/// values and rewriting writes each value's placeholder over it, the same length. A frame too
/// short for a field simply has no such field: nothing here traps on any input.
enum HCIRedaction {
    /// A field to redact: `count` bytes at `offset` of the frame.
    struct Field: Hashable {
        var kind: RedactedKind
        var offset: Int
        var count: Int
        /// Where the field was found, for messages (`LE Connection Complete peer address`).
        var what: String
    }

    /// Whether frames of `linkType` are HCI packets this layer reads.
    static func reads(_ linkType: LinkType) -> Bool {
        linkType == .bluetoothHCIH4WithPHDR || linkType == .bluetoothHCIH4 || linkType == .bluetoothLinuxMonitor
    }

    /// Every redactable field of one frame.
    static func fields(in data: [UInt8], linkType: LinkType) -> [Field] {
        var type: UInt8
        var start: Int
        switch linkType {
        case .bluetoothHCIH4WithPHDR:
            guard data.count > 4 else { return [] }
            type = data[4]; start = 5
        case .bluetoothHCIH4:
            guard data.count > 0 else { return [] }
            type = data[0]; start = 1
        case .bluetoothLinuxMonitor:
            guard data.count >= 4 else { return [] }
            let opcode = UInt16(data[2]) << 8 | UInt16(data[3])
            switch opcode {
            case 2: type = 0x01
            case 3: type = 0x04
            case 4, 5: type = 0x02
            default: return []
            }
            start = 4
        default:
            return []
        }
        var out: [Field] = []
        switch type {
        case 0x01: command(data, start, &out)
        case 0x04: event(data, start, &out)
        case 0x02: acl(data, start, &out)
        default: break
        }
        return out.filter { $0.offset >= 0 && $0.count > 0 && $0.offset + $0.count <= data.count }
    }

    private static func address(_ at: Int, _ what: String, _ out: inout [Field]) { out.append(Field(kind: .address, offset: at, count: 6, what: what)) }
    private static func key(_ at: Int, _ what: String, _ out: inout [Field]) { out.append(Field(kind: .key, offset: at, count: 16, what: what)) }

    /// A name field of at most `max` bytes ending at its first NUL.
    private static func name(_ data: [UInt8], _ at: Int, max: Int, _ what: String, _ out: inout [Field]) {
        guard at < data.count else { return }
        let end = min(data.count, at + max)
        let length = data[at..<end].firstIndex(of: 0).map { $0 - at } ?? (end - at)
        out.append(Field(kind: .name, offset: at, count: length, what: what))
    }

    /// Complete and Shortened Local Name (AD types 0x09, 0x08) in advertising data.
    private static func advertisingData(_ data: [UInt8], _ at: Int, length: Int, _ what: String, _ out: inout [Field]) {
        var i = at
        let end = min(data.count, at + length)
        while i < end {
            let count = Int(data[i])
            guard count > 0, i + 1 < end else { break }
            if data[i + 1] == 0x08 || data[i + 1] == 0x09 {
                out.append(Field(kind: .name, offset: i + 2, count: min(count - 1, end - i - 2), what: "\(what) Local Name"))
            }
            i += 1 + count
        }
    }

    private static func command(_ d: [UInt8], _ s: Int, _ out: inout [Field]) {
        guard d.count >= s + 3 else { return }
        let opcode = UInt16(d[s]) | UInt16(d[s + 1]) << 8
        let p = s + 3
        switch opcode {
        case 0x0405, 0x0409, 0x040A, 0x040C, 0x0419: address(p, commandName(opcode), &out)
        case 0x040B: address(p, "Link Key Request Reply", &out); key(p + 6, "Link Key Request Reply", &out)
        case 0x0C13: name(d, p, max: 248, "Write Local Name", &out)
        case 0x2005: address(p, "LE Set Random Address", &out)
        case 0x2006: address(p + 7, "LE Set Advertising Parameters peer address", &out)
        case 0x2008, 0x2009:
            if d.count > p { advertisingData(d, p + 1, length: Int(d[p]), "LE Set Advertising/Scan Response Data", &out) }
        case 0x200D: address(p + 6, "LE Create Connection peer address", &out)
        case 0x2011, 0x2012: address(p + 1, "filter accept list", &out)
        case 0x2019: key(p + 12, "LE Enable Encryption LTK", &out)
        case 0x201A: key(p + 2, "LE Long Term Key Request Reply", &out)
        case 0x2027:
            address(p + 1, "LE Add Device To Resolving List", &out)
            key(p + 7, "LE Add Device To Resolving List peer IRK", &out)
            key(p + 23, "LE Add Device To Resolving List local IRK", &out)
        case 0x2028: address(p + 1, "LE Remove Device From Resolving List", &out)
        case 0x2035: address(p + 1, "LE Set Advertising Set Random Address", &out)
        case 0x2036: address(p + 14, "LE Set Extended Advertising Parameters peer address", &out)
        case 0x2037, 0x2038:
            if d.count > p + 3 { advertisingData(d, p + 4, length: Int(d[p + 3]), "LE Set Extended Advertising/Scan Response Data", &out) }
        case 0x2043: address(p + 3, "LE Extended Create Connection peer address", &out)
        default: break
        }
    }

    private static func event(_ d: [UInt8], _ s: Int, _ out: inout [Field]) {
        guard d.count >= s + 2 else { return }
        let code = d[s]
        let p = s + 2
        switch code {
        case 0x03: address(p + 3, "Connection Complete", &out)
        case 0x04: address(p, "Connection Request", &out)
        case 0x07: address(p + 1, "Remote Name Request Complete", &out); name(d, p + 7, max: 248, "Remote Name Request Complete", &out)
        case 0x17: address(p, "Link Key Request", &out)
        case 0x18: address(p, "Link Key Notification", &out); key(p + 6, "Link Key Notification", &out)
        case 0x0E:
            guard d.count >= p + 3 else { return }
            let opcode = UInt16(d[p + 1]) | UInt16(d[p + 2]) << 8
            let r = p + 3
            if opcode == 0x1009 { address(r + 1, "Read BD_ADDR", &out) }
            if opcode == 0x0C14 { name(d, r + 1, max: 248, "Read Local Name", &out) }
        case 0x3E:
            guard d.count > p else { return }
            leMeta(d, p, &out)
        default: break
        }
    }

    private static func leMeta(_ d: [UInt8], _ p: Int, _ out: inout [Field]) {
        switch d[p] {
        case 0x01: address(p + 6, "LE Connection Complete peer address", &out)
        case 0x0A, 0x29:
            address(p + 6, "LE Enhanced Connection Complete peer address", &out)
            address(p + 12, "LE Enhanced Connection Complete local RPA", &out)
            address(p + 18, "LE Enhanced Connection Complete peer RPA", &out)
        case 0x02:
            guard d.count > p + 1 else { return }
            var i = p + 2
            for _ in 0..<Int(d[p + 1]) {
                guard d.count > i + 8 else { return }
                address(i + 2, "LE Advertising Report", &out)
                let length = Int(d[i + 8])
                advertisingData(d, i + 9, length: length, "LE Advertising Report", &out)
                i += 9 + length + 1
            }
        case 0x0B:
            guard d.count > p + 1 else { return }
            var i = p + 2
            for _ in 0..<Int(d[p + 1]) {
                address(i + 2, "LE Directed Advertising Report", &out)
                address(i + 9, "LE Directed Advertising Report direct address", &out)
                i += 16
            }
        case 0x0D:
            guard d.count > p + 1 else { return }
            var i = p + 2
            for _ in 0..<Int(d[p + 1]) {
                guard d.count > i + 23 else { return }
                address(i + 3, "LE Extended Advertising Report", &out)
                address(i + 17, "LE Extended Advertising Report direct address", &out)
                let length = Int(d[i + 23])
                advertisingData(d, i + 24, length: length, "LE Extended Advertising Report", &out)
                i += 24 + length
            }
        default: break
        }
    }

    /// SMP key distribution over L2CAP CID 6, in the first fragment of an ACL packet.
    private static func acl(_ d: [UInt8], _ s: Int, _ out: inout [Field]) {
        guard d.count >= s + 9 else { return }
        let boundary = (d[s + 1] >> 4) & 0x03
        guard boundary == 0 || boundary == 2 else { return }
        let cid = UInt16(d[s + 6]) | UInt16(d[s + 7]) << 8
        guard cid == 0x0006 else { return }
        let smp = s + 8
        switch d[smp] {
        case 0x06: key(smp + 1, "SMP Encryption Information LTK", &out)
        case 0x08: key(smp + 1, "SMP Identity Information IRK", &out)
        case 0x09: address(smp + 2, "SMP Identity Address Information", &out)
        case 0x0A: key(smp + 1, "SMP Signing Information CSRK", &out)
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
            case .name where !keepNames: map.string(.name, value)
            default: break
            }
        }
    }

    /// Writes each field's placeholder over it; returns the count per kind.
    static func rewrite(_ data: inout [UInt8], linkType: LinkType, map: RedactionMap) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        for field in fields(in: data, linkType: linkType) {
            let range = field.offset..<(field.offset + field.count)
            guard let placeholder = map.placeholder(for: Array(data[range])), placeholder.count == field.count else { continue }
            data.replaceSubrange(range, with: placeholder)
            counts[field.kind, default: 0] += 1
        }
        return counts
    }
}

extension HCIRedaction {
    /// `HCI command 0x040b`: how a command without a name here is named in messages.
    static func commandName(_ opcode: UInt16) -> String {
        "HCI command 0x" + Hex.spell([UInt8(opcode >> 8), UInt8(opcode & 0xFF)], upper: false, separator: "")
    }
}
