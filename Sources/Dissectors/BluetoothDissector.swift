import CaptureKit

/// The Bluetooth half of ``FrameDissector``: link types 201 (H4 with a 4-byte big-endian direction,
/// 0 sent by the host, 1 received; https://www.tcpdump.org/linktypes/LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR.html),
/// 187 (bare H4, direction unknown unless the pcapng `epb_flags` give it) and 254 (BlueZ monitor,
/// see ``BluetoothMonitor``), then HCI → ACL reassembly → L2CAP → ATT with GATT discovery.
struct BluetoothDissector: Sendable {
    var acl = ACLReassembler()
    var att = ATTSession()
    /// When `false`, HCI events, commands and ACL fragments carry an empty summary (as ATT PDUs
    /// do, see ``ATTSession/producesSummaries``): replay reads links and records only. Problems,
    /// links and records are the same either way.
    var producesSummaries = true {
        didSet { att.producesSummaries = producesSummaries }
    }

    mutating func dissect(_ data: UnsafeRawBufferPointer, linkType: LinkType, flags: UInt32?) -> DissectedFrame {
        switch linkType {
        case .bluetoothHCIH4WithPHDR:
            guard let field = data.u32be(at: 0) else {
                return DissectedFrame(problem: DissectionProblem.short(
                    "H4 pseudo-header", at: 0, need: 4, what: "direction", have: data.count))
            }
            let direction: HCIDirection = field & 1 == 0 ? .sent : .received
            return h4(data, at: 4, direction: direction)
        case .bluetoothHCIH4:
            // pcapng epb_flags bits 0–1: 1 inbound, 2 outbound (a pcap file has none).
            let direction: HCIDirection = switch (flags ?? 0) & 0x3 {
            case 1: .received
            case 2: .sent
            default: .unknown
            }
            return h4(data, at: 0, direction: direction)
        case .bluetoothLinuxMonitor:
            return monitor(data)
        default:
            return DissectedFrame(summary: "\(linkType) \(data.count) bytes", problems: [DissectionProblem(layer: "pcap", kind: .linkTypeNotDissected(linkType))])
        }
    }

    private mutating func h4(_ data: UnsafeRawBufferPointer, at offset: Int, direction: HCIDirection) -> DissectedFrame {
        guard let typeByte = data.u8(at: offset) else {
            return DissectedFrame(problem: DissectionProblem.short("H4", at: offset, need: 1, what: "packet type", have: 0), direction: direction)
        }
        guard let type = H4PacketType(rawValue: typeByte) else {
            return DissectedFrame(problem: DissectionProblem(
                layer: "H4", offset: offset, expected: "packet type 1 (command), 2 (ACL), 3 (SCO), 4 (event) or 5 (ISO)",
                found: "\(hex(typeByte, digits: 2))"), direction: direction)
        }
        return hci(type, data, at: offset + 1, direction: direction, adapter: 0)
    }

    private mutating func monitor(_ data: UnsafeRawBufferPointer) -> DissectedFrame {
        let header: BluetoothMonitor.Header
        switch BluetoothMonitor.parse(data) {
        case .failure(let problem): return DissectedFrame(problem: problem)
        case .success(let parsed): header = parsed
        }
        if let (type, direction) = BluetoothMonitor.hciPacket(header.opcode) {
            return hci(type, data, at: BluetoothMonitor.headerLength, direction: direction, adapter: header.adapter)
        }
        let payload = data.slice(at: BluetoothMonitor.headerLength, count: data.count - BluetoothMonitor.headerLength)
            ?? UnsafeRawBufferPointer(start: nil, count: 0)
        let (summary, note) = BluetoothMonitor.describe(opcode: header.opcode, adapter: header.adapter, payload: payload)
        return DissectedFrame(summary: summary, content: note.map { .note($0) } ?? .none)
    }

    private mutating func hci(_ type: H4PacketType, _ data: UnsafeRawBufferPointer, at offset: Int, direction: HCIDirection, adapter: UInt16) -> DissectedFrame {
        func failed(_ problem: DissectionProblem) -> DissectedFrame { DissectedFrame(problem: problem, direction: direction) }
        switch type {
        case .command:
            switch HCICommandHeader.parse(data, at: offset) {
            case .failure(let problem): return failed(problem)
            case .success(let header): return DissectedFrame(summary: producesSummaries ? "HCI Command \(header.name)" : "", direction: direction)
            }
        case .event:
            switch HCIEventHeader.parse(data, at: offset) {
            case .failure(let problem): return failed(problem)
            case .success(let header):
                let parameters = data.slice(at: offset + HCIEventHeader.length, count: header.parameterLength)
                    ?? UnsafeRawBufferPointer(start: nil, count: 0)
                return event(header, parameters: parameters, parametersOffset: offset + HCIEventHeader.length, direction: direction, adapter: adapter)
            }
        case .acl:
            switch HCIACLHeader.parse(data, at: offset) {
            case .failure(let problem): return failed(problem)
            case .success(let header):
                let payloadOffset = offset + HCIACLHeader.length
                let payload = data.slice(at: payloadOffset, count: header.dataLength) ?? UnsafeRawBufferPointer(start: nil, count: 0)
                return aclData(header, payload: payload, payloadOffset: payloadOffset, direction: direction, adapter: adapter)
            }
        case .sco:
            switch HCISCOHeader.parse(data, at: offset) {
            case .failure(let problem): return failed(problem)
            case .success(let header):
                return DissectedFrame(summary: "HCI SCO handle \(hex(header.handle, digits: 4)) \(header.dataLength) bytes", direction: direction)
            }
        case .iso:
            switch HCIISOHeader.parse(data, at: offset) {
            case .failure(let problem): return failed(problem)
            case .success(let header):
                return DissectedFrame(summary: "HCI ISO handle \(hex(header.handle, digits: 4)) \(header.dataLength) bytes", direction: direction)
            }
        }
    }

    private mutating func event(_ header: HCIEventHeader, parameters: UnsafeRawBufferPointer, parametersOffset: Int, direction: HCIDirection, adapter: UInt16) -> DissectedFrame {
        // The event's name and the summary are text for `tether inspect`; replay asks for neither
        // (every sent ACL packet earns a Number Of Completed Packets event).
        let summaries = producesSummaries
        var name: String { HCINames.eventName(header.code) ?? hex(header.code, digits: 2) }
        var summary = summaries ? "HCI Event \(name)" : ""
        var problem: DissectionProblem?
        var linkChange: HCILinkChange?
        func need(_ count: Int, _ what: String) {
            problem = .short("HCI Event \(name)", at: parametersOffset, need: count, what: what, have: parameters.count)
        }
        switch header.code {
        case HCIEventHeader.commandComplete:
            if let opcode = parameters.u16le(at: 1) {
                if summaries { summary += " (\(HCICommandHeader(opcode: opcode, parameterLength: 0).name))" }
                if summaries, let status = parameters.u8(at: 3), status != 0 { summary += " status \(hex(status, digits: 2))" }
            } else {
                need(3, "Num_HCI_Command_Packets and command opcode")
            }
        case HCIEventHeader.commandStatus:
            if let status = parameters.u8(at: 0), let opcode = parameters.u16le(at: 2) {
                if summaries { summary += " (\(HCICommandHeader(opcode: opcode, parameterLength: 0).name))" }
                if summaries, status != 0 { summary += " status \(hex(status, digits: 2))" }
            } else {
                need(4, "status, Num_HCI_Command_Packets and command opcode")
            }
        case HCIEventHeader.disconnectionComplete:
            if let status = parameters.u8(at: 0), let handleField = parameters.u16le(at: 1), let reason = parameters.u8(at: 3) {
                let handle = handleField & 0x0FFF
                if summaries { summary += " handle \(hex(handle, digits: 4)) reason \(hex(reason, digits: 2))" }
                if status == 0 {
                    let connection = ConnectionKey(adapter: adapter, handle: handle)
                    acl.drop(connection)
                    att.drop(connection)
                    linkChange = .disconnected(connectionHandle: handle, reason: reason)
                } else {
                    if summaries { summary += " status \(hex(status, digits: 2))" }
                }
            } else {
                need(4, "status, connection handle and reason")
            }
        case HCIEventHeader.leMeta:
            if let subevent = parameters.u8(at: 0) {
                if summaries { summary += " (\(HCINames.leSubeventName(subevent) ?? "subevent \(hex(subevent, digits: 2))"))" }
                // LE Connection Complete (0x01) and LE Enhanced Connection Complete (0x0A, 0x29 for v2)
                // share the prefix: status, handle, role, peer address type, peer address (6, LE).
                if subevent == 0x01 || subevent == 0x0A || subevent == 0x29 {
                    if let status = parameters.u8(at: 1), let handleField = parameters.u16le(at: 2), let role = parameters.u8(at: 4),
                       let address = parameters.bytes(at: 6, count: 6) {
                        let handle = handleField & 0x0FFF
                        let peer = bluetoothAddress(address)
                        if status == 0 {
                            linkChange = .connected(connectionHandle: handle, peerAddress: peer, role: role)
                            if summaries { summary += " handle \(hex(handle, digits: 4)) peer \(peer)" }
                        } else {
                            if summaries { summary += " status \(hex(status, digits: 2))" }
                        }
                    } else {
                        need(12, "status, connection handle, role and peer address")
                    }
                }
            } else {
                need(1, "subevent code")
            }
        default:
            break
        }
        return DissectedFrame(summary: summary, direction: direction, content: linkChange.map { .linkChange($0) } ?? .none, problems: problem.map { [$0] } ?? [])
    }

    private mutating func aclData(_ header: HCIACLHeader, payload: UnsafeRawBufferPointer, payloadOffset: Int, direction: HCIDirection, adapter: UInt16) -> DissectedFrame {
        let connection = ConnectionKey(adapter: adapter, handle: header.handle)
        let key = ACLReassembler.Key(connection: connection, direction: direction)
        // A PDU whole in its one fragment is read where it lies in the frame, not copied.
        let outcome = acl.add(header, data: payload, key: key, dataOffset: payloadOffset, borrowingWholePDU: true)
        var handleText: String { hex(header.handle, digits: 4) }
        var frame: Partial
        let wasSingle: Bool
        // Only a problem shows it: made when one is, not for every PDU.
        var context: String { Self.reassembledContext(handle: header.handle) }
        if outcome.pduIsFragment {
            wasSingle = header.dataLength == payload.count && !header.isContinuation
            frame = l2cap(payload, connection: connection, direction: direction, context: context)
        } else if let pdu = outcome.pdu {
            // A PDU that came whole in this frame gets frame offsets; a reassembled one gets offsets
            // within the PDU, said so in the problem text.
            wasSingle = header.dataLength == pdu.count && !header.isContinuation
            frame = pdu.withUnsafeBytes { buffer in
                l2cap(buffer, connection: connection, direction: direction, context: context)
            }
        } else {
            let summary: String
            if !producesSummaries {
                summary = ""
            } else if let (have, total) = outcome.progress {
                let of = total.map { " of \($0)" } ?? ""
                summary = "ACL fragment handle \(handleText) (\(have)\(of) bytes)"
            } else {
                summary = "ACL handle \(handleText) \(payload.count) bytes (dropped)"
            }
            return DissectedFrame(summary: summary, direction: direction, problems: outcome.problem.map { [$0] } ?? [])
        }
        if wasSingle { frame.problemValue?.rebase(from: context, toFrameOffset: payloadOffset) }
        // A dropped unfinished PDU before a good one: both are worth seeing.
        let problems = [outcome.problem, frame.problemValue].compactMap { $0 }
        let content: DissectedFrame.Content
        if let smp = frame.smp {
            content = .smp([smp])
        } else {
            content = frame.records.isEmpty ? .none : .att(frame.records)
        }
        return DissectedFrame(summary: frame.summary, direction: direction, content: content, problems: problems)
    }

    /// Where a problem's offsets count from when they are not frame offsets.
    static func reassembledContext(handle: UInt16) -> String {
        "the L2CAP PDU on handle \(hex(handle, digits: 4)) reassembled from ACL fragments"
    }

    /// What L2CAP and ATT made of a PDU, with a problem that can still be moved to frame offsets.
    /// The ``DissectedFrame`` is built once from it, at the end: building it here and changing
    /// it afterwards copied the whole frame (every text and array in it) once more per PDU.
    private struct Partial {
        var summary: String
        var records: [ATTRecord] = []
        var problemValue: DissectionProblem?
        var smp: SMPRecord? = nil
    }

    private mutating func l2cap(_ pdu: UnsafeRawBufferPointer, connection: ConnectionKey, direction: HCIDirection, context: @autoclosure () -> String) -> Partial {
        let header: L2CAPBasicHeader
        switch L2CAPBasicHeader.parse(pdu, context: context()) {
        case .failure(let problem):
            return Partial(summary: "L2CAP [malformed]", problemValue: problem)
        case .success(let parsed): header = parsed
        }
        let payload = pdu.slice(at: L2CAPBasicHeader.length, count: header.payloadLength) ?? UnsafeRawBufferPointer(start: nil, count: 0)
        switch header.channelID {
        case L2CAPBasicHeader.attChannel:
            // Offsets inside ATT count from the ATT opcode; shift them to the PDU's start.
            let result = att.dissect(payload, connection: connection, direction: direction, context: context())
            var problem = result.problem
            problem?.moveOffset(by: L2CAPBasicHeader.length)
            return Partial(summary: result.summary, records: result.records, problemValue: problem)
        case L2CAPBasicHeader.leSignallingChannel, 0x0001:
            let code = payload.u8(at: 0).map(L2CAPBasicHeader.signallingCommandName) ?? "empty"
            let channel = L2CAPBasicHeader.channelName(header.channelID)
            return Partial(summary: "L2CAP \(channel) \(code)")
        case L2CAPBasicHeader.smpChannel:
            guard let code = payload.u8(at: 0) else { return Partial(summary: "SMP empty") }
            let record = SMPRecord(connectionHandle: connection.handle, direction: direction, code: code,
                                   parameters: payload.bytes(at: 1, count: payload.count - 1) ?? [])
            return Partial(summary: "SMP \(L2CAPBasicHeader.smpCommandName(code))", smp: record)
        default:
            let channel = L2CAPBasicHeader.channelName(header.channelID)
            return Partial(summary: "L2CAP \(channel) \(header.payloadLength) bytes")
        }
    }
}
