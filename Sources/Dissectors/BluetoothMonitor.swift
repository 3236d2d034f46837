/// LINKTYPE_BLUETOOTH_LINUX_MONITOR (254), https://www.tcpdump.org/linktypes/LINKTYPE_BLUETOOTH_LINUX_MONITOR.html:
/// adapter index (u16 BE), opcode (u16 BE), then the BlueZ monitor payload. The payloads are those of
/// the kernel's monitor channel (BlueZ `monitor/control.c`, `lib/hci_mon.h`), little-endian:
/// 0 New Index (type, bus, bdaddr[6], name[8]), 1 Delete Index, 2 command, 3 event, 4/5 ACL tx/rx,
/// 6/7 SCO tx/rx, 8 Open Index, 9 Close Index, 10 Index Info (bdaddr[6], manufacturer u16),
/// 11 Vendor Diagnostics, 12 System Note (text), 13 User Logging (priority, ident length, ident,
/// text), 14/15 Control Open/Close, 16/17 Control Command/Event, 18/19 ISO tx/rx. HCI packets
/// carry no H4 type byte: the opcode says what they are.
enum BluetoothMonitor {
    static let headerLength = 4

    struct Header: Sendable, Hashable {
        var adapter: UInt16
        var opcode: UInt16
    }

    static func parse(_ frame: UnsafeRawBufferPointer) -> Result<Header, DissectionProblem> {
        guard let adapter = frame.u16be(at: 0), let opcode = frame.u16be(at: 2) else {
            return .failure(.short("Bluetooth monitor", at: 0, need: headerLength, what: "adapter index and opcode", have: frame.count))
        }
        return .success(Header(adapter: adapter, opcode: opcode))
    }

    /// The HCI packet type and direction an opcode carries, for 2–7, 18, 19.
    static func hciPacket(_ opcode: UInt16) -> (H4PacketType, HCIDirection)? {
        switch opcode {
        case 2: (.command, .sent)
        case 3: (.event, .received)
        case 4: (.acl, .sent)
        case 5: (.acl, .received)
        case 6: (.sco, .sent)
        case 7: (.sco, .received)
        case 18: (.iso, .sent)
        case 19: (.iso, .received)
        default: nil
        }
    }

    /// A summary (and the note text, for 12 and 13) of a record that is not an HCI packet.
    static func describe(opcode: UInt16, adapter: UInt16, payload: UnsafeRawBufferPointer) -> (summary: String, note: String?) {
        let index = "hci\(adapter)"
        switch opcode {
        case 0:
            guard let type = payload.u8(at: 0), let bus = payload.u8(at: 1), let address = payload.bytes(at: 2, count: 6),
                  let name = payload.bytes(at: 8, count: 8)
            else { return ("Monitor New Index \(index) (\(payload.count) bytes, 16 expected)", nil) }
            return ("Monitor New Index \(index): \(text(name)) \(bdaddr(address)) type \(type) bus \(busName(bus))", nil)
        case 1: return ("Monitor Delete Index \(index)", nil)
        case 8: return ("Monitor Open Index \(index)", nil)
        case 9: return ("Monitor Close Index \(index)", nil)
        case 10:
            guard let address = payload.bytes(at: 0, count: 6), let manufacturer = payload.u16le(at: 6) else {
                return ("Monitor Index Info \(index) (\(payload.count) bytes, 8 expected)", nil)
            }
            return ("Monitor Index Info \(index): \(bdaddr(address)) manufacturer \(manufacturer)", nil)
        case 11: return ("Monitor Vendor Diagnostics \(index) \(payload.count) bytes", nil)
        case 12:
            let note = text(payload.bytes(at: 0, count: payload.count) ?? [])
            return ("Monitor System Note: \(note)", note)
        case 13:
            guard let priority = payload.u8(at: 0), let identLength = payload.u8(at: 1).map(Int.init),
                  let ident = payload.bytes(at: 2, count: identLength)
            else { return ("Monitor User Logging (\(payload.count) bytes: too short for priority, ident length and ident)", nil) }
            let message = text(payload.bytes(at: 2 + identLength, count: payload.count - 2 - identLength) ?? [])
            let identText = text(ident)
            return ("Monitor User Logging \(identText.isEmpty ? "" : identText + " ")<\(priority)>: \(message)", message)
        case 14: return ("Monitor Control Open \(payload.count) bytes", nil)
        case 15: return ("Monitor Control Close", nil)
        case 16: return ("Monitor Control Command \(payload.count) bytes", nil)
        case 17: return ("Monitor Control Event \(payload.count) bytes", nil)
        default: return ("Monitor opcode \(opcode) \(index) \(payload.count) bytes", nil)
        }
    }

    /// Text up to the first NUL; invalid UTF-8 becomes U+FFFD rather than failing.
    static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// A Bluetooth device address, sent least significant byte first, shown most significant first.
    static func bdaddr(_ bytes: [UInt8]) -> String {
        bytes.reversed().map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: ":")
    }

    private static func busName(_ bus: UInt8) -> String {
        switch bus {
        case 0: "Virtual"
        case 1: "USB"
        case 2: "PC Card"
        case 3: "UART"
        case 4: "RS232"
        case 5: "PCI"
        case 6: "SDIO"
        case 7: "SPI"
        case 8: "I2C"
        case 9: "SMD"
        case 10: "VIRTIO"
        default: "\(bus)"
        }
    }
}
