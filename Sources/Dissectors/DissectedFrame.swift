import CaptureKit

/// Which way an HCI packet went, seen from the host.
public enum HCIDirection: String, Sendable, Hashable {
    /// Host to controller (commands, ACL sent).
    case sent
    /// Controller to host (events, ACL received).
    case received
    /// The link type does not say (LINKTYPE_BLUETOOTH_HCI_H4).
    case unknown
}

extension UInt64 {
    fileprivate func rotated(by count: UInt64) -> UInt64 { count == 0 ? self : (self << count) | (self >> (64 - count)) }
}

/// An IPv4 or IPv6 address, held inline (no allocation: dissection makes two per frame).
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// IPv6: the first 8 bytes, big-endian. IPv4: 0.
    private var high: UInt64
    /// IPv6: the last 8 bytes, big-endian. IPv4: the address in the low 32 bits.
    private var low: UInt64
    /// `true` for a 4-byte address.
    public let isIPv4: Bool

    /// Wraps 4 (IPv4) or 16 (IPv6) address bytes in network order. Other lengths are not
    /// addresses; they are kept as their first (up to) 16 bytes, read as IPv6.
    public init(bytes: [UInt8]) {
        isIPv4 = bytes.count == 4
        var high: UInt64 = 0, low: UInt64 = 0
        if isIPv4 {
            for byte in bytes { low = low << 8 | UInt64(byte) }
        } else {
            for index in 0..<16 {
                let byte = index < bytes.count ? UInt64(bytes[index]) : 0
                if index < 8 { high = high << 8 | byte } else { low = low << 8 | byte }
            }
        }
        self.high = high
        self.low = low
    }

    /// An IPv4 address from its 32 bits (the first byte most significant).
    init(ipv4 value: UInt32) {
        isIPv4 = true
        high = 0
        low = UInt64(value)
    }

    /// An IPv6 address from its two halves (big-endian).
    init(ipv6High high: UInt64, low: UInt64) {
        isIPv4 = false
        self.high = high
        self.low = low
    }

    /// The address folded into one word, for hashing.
    var foldedBits: UInt64 { high ^ low.rotated(by: isIPv4 ? 1 : 0) }

    /// The address bytes in network order: 4 for IPv4, 16 for IPv6.
    public var bytes: [UInt8] {
        if isIPv4 { return (0..<4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * UInt64($0))) } }
        return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// Dotted quad for IPv4; RFC 5952 text for IPv6.
    public var description: String { IPAddress.format(bytes) }
}

/// A UDP datagram recovered from a frame (after IPv4 fragment reassembly where needed).
public struct UDPDatagram: Sendable, Hashable {
    /// The IP source address.
    public var sourceAddress: IPAddress
    /// The UDP source port.
    public var sourcePort: UInt16
    /// The IP destination address.
    public var destinationAddress: IPAddress
    /// The UDP destination port.
    public var destinationPort: UInt16
    /// The UDP payload.
    public var payload: [UInt8]
    /// A datagram from its addresses, ports and payload.
    public init(sourceAddress: IPAddress, sourcePort: UInt16, destinationAddress: IPAddress, destinationPort: UInt16, payload: [UInt8]) {
        self.sourceAddress = sourceAddress
        self.sourcePort = sourcePort
        self.destinationAddress = destinationAddress
        self.destinationPort = destinationPort
        self.payload = payload
    }
}

/// An ATT PDU recovered from HCI ACL data (after ACL and L2CAP reassembly).
public struct ATTRecord: Sendable, Hashable {
    /// The ACL connection handle it travelled on.
    public var connectionHandle: UInt16
    /// Which way the PDU went (`.unknown` under LINKTYPE_BLUETOOTH_HCI_H4 without `epb_flags`).
    public var direction: HCIDirection
    /// The ATT opcode, as sent (an opcode the specification does not list keeps its byte).
    public var opcode: ATTOpcode
    /// The attribute handle, for PDUs that carry one.
    public var handle: UInt16?
    /// The attribute value (writes, notifications, indications, read responses); otherwise the
    /// PDU's parameters after the opcode (and handle).
    public var value: [UInt8]
    /// The service UUID owning `handle`, when GATT discovery earlier in the capture (or the
    /// manifest's `gatt_handles`) told it. Held inline, as the other two: a record is made for
    /// every ATT PDU, and three texts were three reference counts on each copy of it.
    public var serviceUUID: BluetoothUUID?
    /// The characteristic UUID owning `handle`, when discovery told it.
    public var characteristicUUID: BluetoothUUID?
    /// The descriptor type at `handle` (``BluetoothUUID/clientCharacteristicConfiguration`` for a
    /// CCCD), when `handle` is a descriptor of ``characteristicUUID`` that Find Information named.
    public var descriptorUUID: BluetoothUUID? = nil
    /// Prepare Write Request and Response: the Value Offset (§3.4.6.1), which is not part of
    /// ``value`` (the part value); `nil` for every other PDU.
    public var valueOffset: UInt16? = nil
    /// A record; the UUIDs default to unknown.
    public init(connectionHandle: UInt16, direction: HCIDirection, opcode: ATTOpcode, handle: UInt16?, value: [UInt8], serviceUUID: BluetoothUUID? = nil, characteristicUUID: BluetoothUUID? = nil) {
        self.connectionHandle = connectionHandle
        self.direction = direction
        self.opcode = opcode
        self.handle = handle
        self.value = value
        self.serviceUUID = serviceUUID
        self.characteristicUUID = characteristicUUID
    }
}

/// A Security Manager PDU (L2CAP channel 0x0006, Core v6.0 Vol 3 Part H §3.3), as sent: the core
/// adapters and the emulator read pairing from it (who asked, which pairing, which keys) without
/// parsing L2CAP themselves.
public struct SMPRecord: Sendable, Hashable {
    /// The ACL connection handle it travelled on.
    public var connectionHandle: UInt16
    /// Which way the PDU went (`.unknown` under LINKTYPE_BLUETOOTH_HCI_H4 without `epb_flags`).
    public var direction: HCIDirection
    /// The SMP command code (0x01 Pairing Request … 0x0B Security Request, §3.3 table 3.4).
    public var code: UInt8
    /// The command's parameters after the code, as sent (keys included: a capture already holds them).
    public var parameters: [UInt8]

    /// A record; see the properties.
    public init(connectionHandle: UInt16, direction: HCIDirection, code: UInt8, parameters: [UInt8]) {
        self.connectionHandle = connectionHandle
        self.direction = direction
        self.code = code
        self.parameters = parameters
    }
}

/// A change of an LE link that an HCI event reports, so core adapters can follow connections
/// without parsing HCI themselves.
public enum HCILinkChange: Sendable, Hashable {
    /// LE (Enhanced) Connection Complete with status 0: Core v6.0 Vol 4 Part E §7.7.65.1 / §7.7.65.10.
    /// `peerAddress` is written `F0:F1:F2:F3:F4:F5` (most significant byte first, as BlueZ does);
    /// `role` is 0 when the local controller is central, 1 when peripheral.
    case connected(connectionHandle: UInt16, peerAddress: String, role: UInt8)
    /// Disconnection Complete with status 0: Core v6.0 Vol 4 Part E §7.7.5.
    case disconnected(connectionHandle: UInt16, reason: UInt8)
}

/// What the dissectors made of one captured frame.
///
/// What a frame carried is one ``Content`` case: a frame is an ACL frame completing an ATT or an
/// SMP PDU, an HCI event opening or closing a link, a monitor note, a UDP datagram or a TCP
/// segment, never two of these, so the type cannot say it is. It also keeps a copy cheap: a frame
/// is copied on its way from the dissector to every adapter, and each reference-counted field is
/// counted on each copy (the nine optional fields this replaced were a tenth of a Connect IQ replay).
public struct DissectedFrame: Sendable, Hashable {
    /// What one frame carried beyond its summary, direction and problem.
    public enum Content: Sendable, Hashable {
        /// Nothing a core reads (an HCI command, a fragment, a frame that did not dissect…).
        case none
        /// ATT PDUs completed by this frame (a PDU reassembled from several ACL fragments belongs
        /// to the frame that completes it; one PDU may give several records).
        case att([ATTRecord])
        /// Security Manager PDUs completed by this frame.
        case smp([SMPRecord])
        /// The LE link this frame's HCI event opened or closed.
        case linkChange(HCILinkChange)
        /// The text of a BlueZ monitor System Note (opcode 12) or User Logging record (opcode 13):
        /// how a live annotation lands inside the BLE timeline.
        case note(String)
        /// The UDP datagram completed by this frame.
        case udp(UDPDatagram)
        /// The TCP segment the frame carries, what stream reassembly made of it, and the MQTT
        /// control packets it completes in stream order (a packet spanning several segments
        /// belongs to the frame whose segment completes it in sequence order).
        case tcp(TCPSegment, TCPSegmentAnalysis, mqtt: [MQTTRecord])
    }

    /// One line for `tether inspect --frames`, e.g.
    /// `ATT Handle Value Notification 0x0010 (6a4ecd28-…) 3 bytes` or
    /// `UDP 127.0.0.1:50123 → 127.0.0.1:12345 512 bytes`.
    public var summary: String
    /// HCI direction, for Bluetooth link types.
    public var direction: HCIDirection?
    /// What the frame carried.
    public var content: Content
    /// ``problems``, `nil` when there are none: nearly every frame has none, and an absent array
    /// is nothing to count when the frame is copied. Never an empty array, so equality holds.
    private var storedProblems: [DissectionProblem]?

    /// A dissected frame.
    public init(summary: String, direction: HCIDirection? = nil, content: Content = .none, problems: [DissectionProblem] = []) {
        self.summary = summary
        self.direction = direction
        self.content = content
        self.storedProblems = problems.isEmpty ? nil : problems
    }

    /// Why the frame could not be dissected further, in the order the layers met them: usually
    /// none; two when, say, an unfinished PDU was dropped before the frame's own, or a TCP gap
    /// came before a malformed MQTT packet. Values, not errors.
    public var problems: [DissectionProblem] {
        get { storedProblems ?? [] }
        set { storedProblems = newValue.isEmpty ? nil : newValue }
    }

    /// The first of ``problems``, if there is one.
    public var problem: DissectionProblem? { storedProblems?.first }

    /// ``problems`` as one line, joined by `; ` (what `tether inspect` shows), `nil` when there
    /// are none.
    public var problemDescription: String? {
        storedProblems.map { $0.map(\.description).joined(separator: "; ") }
    }

    /// ATT PDUs completed by this frame; empty unless ``content`` is ``Content/att(_:)``.
    public var att: [ATTRecord] {
        if case .att(let records) = content { return records }
        return []
    }
    /// Security Manager PDUs completed by this frame; empty unless ``content`` is ``Content/smp(_:)``.
    public var smp: [SMPRecord] {
        if case .smp(let records) = content { return records }
        return []
    }
    /// The UDP datagram completed by this frame, if any.
    public var udp: UDPDatagram? {
        if case .udp(let datagram) = content { return datagram }
        return nil
    }
    /// The TCP segment the frame carries, if any.
    public var tcp: TCPSegment? {
        if case .tcp(let segment, _, _) = content { return segment }
        return nil
    }
    /// What stream reassembly made of ``tcp``.
    public var tcpAnalysis: TCPSegmentAnalysis? {
        if case .tcp(_, let analysis, _) = content { return analysis }
        return nil
    }
    /// MQTT control packets this frame completes, in stream order.
    public var mqtt: [MQTTRecord] {
        if case .tcp(_, _, let records) = content { return records }
        return []
    }
    /// The text of a monitor System Note or User Logging record, if the frame is one.
    public var note: String? {
        if case .note(let text) = content { return text }
        return nil
    }
    /// The LE link this frame's HCI event opened or closed, if it did.
    public var linkChange: HCILinkChange? {
        if case .linkChange(let change) = content { return change }
        return nil
    }
}

extension DissectedFrame {
    /// Changes each ATT record in place (a frame without ATT records is left as it is): the
    /// records are taken out of ``content`` first, so the array is not copied.
    mutating func updateATTRecords(_ body: (inout ATTRecord) -> Void) {
        guard case .att(var records) = content else { return }
        content = .none
        for index in records.indices { body(&records[index]) }
        content = .att(records)
    }

    /// A frame that could not be dissected at all: the summary is the problem's sentence, which
    /// says which layer, where and what was expected.
    public init(problem: DissectionProblem, direction: HCIDirection? = nil) {
        self.init(summary: problem.description, direction: direction, problems: [problem])
    }
}
