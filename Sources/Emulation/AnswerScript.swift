/// A notification or indication the peripheral sent after a request, with its recorded delay.
public struct RecordedAnswer: Sendable, Hashable {
    /// `true` for a Handle Value Indication (0x1D), `false` for a Notification (0x1B).
    public var isIndication: Bool
    /// The handle it carried.
    public var handle: UInt16
    /// Its value.
    public var value: [UInt8]
    /// Nanoseconds after the request that triggered it (after the connection's first PDU for
    /// answers sent before any write).
    public var delayNs: Int64
    /// Its frame in the capture.
    public var frame: Int

    /// An answer; see the properties.
    public init(isIndication: Bool = false, handle: UInt16, value: [UInt8], delayNs: Int64, frame: Int = 0) {
        self.isIndication = isIndication
        self.handle = handle
        self.value = value
        self.delayNs = delayNs
        self.frame = frame
    }
}

/// A write the central made in the capture, with what the peripheral did after it.
public struct RecordedWrite: Sendable, Hashable {
    /// The handle written.
    public var handle: UInt16
    /// The bytes written.
    public var value: [UInt8]
    /// The ATT error the peripheral answered a Write Request with, if it refused it.
    public var error: UInt8?
    /// The notifications and indications that followed, until the next write on that connection.
    public var answers: [RecordedAnswer]
    /// The write's frame in the capture.
    public var frame: Int
}

/// A read the central made in the capture and its answer.
public struct RecordedRead: Sendable, Hashable {
    /// The value read (a long read's Read Blob parts joined), or `nil` when it was refused.
    public var value: [UInt8]?
    /// The ATT error it was refused with.
    public var error: UInt8?
    /// The read's frame in the capture.
    public var frame: Int
}

/// What the peripheral did in the capture, arranged by request: the script the generic responder
/// plays back. Sans-I/O; built once from the recorded PDUs.
public struct AnswerScript: Sendable, Hashable {
    /// Every write of the central, in capture order.
    public var writes: [RecordedWrite] = []
    /// Every read of the central, by handle, in capture order.
    public var reads: [UInt16: [RecordedRead]] = [:]
    /// Notifications the peripheral sent on each connection before the central wrote anything.
    public var connectionAnswers: [Int: [RecordedAnswer]] = [:]
    /// The MTU the peripheral answered an Exchange MTU Request with.
    public var serverMTU: Int?
    /// The MTU the peripheral asked for when it started the exchange itself.
    public var peripheralRequestedMTU: Int?
    /// How many connections the capture holds.
    public var connections = 0
    /// Requests the peripheral made of the central (discovering the phone's database, …), by opcode: not played back.
    public var peripheralRequests: [UInt8: Int] = [:]
    /// The shortest request → response time of the capture (MTU exchange, reads, Write Requests):
    /// the link's round trip as the central saw it, when the capture has such a pair.
    public var linkRoundTripNs: Int64?

    /// An empty script.
    public init() {}

    /// Arranges `pdus` (a ``RecordedPeripheral``'s) by request. With `recordedAtCentral` (the
    /// capture was taken on the central's side), each answer's delay is shortened by the link's
    /// round trip (``linkRoundTripNs``): the recorded delay ran from the request leaving the central
    /// to the answer reaching it, while the emulator counts from the request reaching it and the
    /// answer still has the link to cross.
    public init(_ pdus: [RecordedPDU], recordedAtCentral: Bool = false) {
        self.init(pdus)
        guard recordedAtCentral, let roundTrip = linkRoundTripNs, roundTrip > 0 else { return }
        for w in writes.indices {
            for a in writes[w].answers.indices { writes[w].answers[a].delayNs = max(0, writes[w].answers[a].delayNs - roundTrip) }
        }
    }

    /// Arranges `pdus` (a ``RecordedPeripheral``'s) by request, delays as recorded.
    public init(_ pdus: [RecordedPDU]) {
        var requestTime: [Int: Int64] = [:]
        var lastWrite: [Int: Int] = [:]  // connection → index into writes
        var firstTime: [Int: Int64] = [:]
        var pending: [Int: (opcode: UInt8, handle: UInt16?, write: Int?)] = [:]
        for pdu in pdus {
            connections = max(connections, pdu.connection + 1)
            if firstTime[pdu.connection] == nil { firstTime[pdu.connection] = pdu.timeNs }
            if pdu.fromClient {
                switch pdu.opcode {
                case 0x12, 0x52:
                    guard let handle = pdu.handle else { continue }
                    writes.append(RecordedWrite(handle: handle, value: pdu.value, error: nil, answers: [], frame: pdu.frame))
                    lastWrite[pdu.connection] = writes.count - 1
                    if pdu.opcode == 0x12 {
                        pending[pdu.connection] = (0x12, handle, writes.count - 1)
                        requestTime[pdu.connection] = pdu.timeNs
                    }
                case 0x0A, 0x0C, 0x02:
                    requestTime[pdu.connection] = pdu.timeNs
                    pending[pdu.connection] = (pdu.opcode, pdu.handle, nil)
                    if pdu.opcode == 0x0C, let handle = pdu.handle, pdu.value.count >= 2 {
                        let offset = Int(pdu.value[0]) | Int(pdu.value[1]) << 8
                        // A blob read continuing the last read of this handle.
                        if offset == 0 || reads[handle]?.last?.value?.count != offset { pending[pdu.connection] = (0x0A, handle, nil) }
                    }
                default:
                    continue
                }
                continue
            }
            // From the peripheral.
            if [0x03, 0x0B, 0x0D, 0x13].contains(pdu.opcode), let asked = requestTime.removeValue(forKey: pdu.connection) {
                let roundTrip = elapsedNs(from: asked, to: pdu.timeNs)
                if roundTrip >= 0 { linkRoundTripNs = min(linkRoundTripNs ?? roundTrip, roundTrip) }
            }
            switch pdu.opcode {
            case 0x1B, 0x1D:
                guard let handle = pdu.handle else { continue }
                if let index = lastWrite[pdu.connection] {
                    let delay = elapsedNs(from: timeOf(writes[index].frame, in: pdus), to: pdu.timeNs)
                    writes[index].answers.append(RecordedAnswer(isIndication: pdu.opcode == 0x1D, handle: handle, value: pdu.value, delayNs: max(0, delay), frame: pdu.frame))
                } else {
                    let delay = elapsedNs(from: firstTime[pdu.connection] ?? pdu.timeNs, to: pdu.timeNs)
                    connectionAnswers[pdu.connection, default: []].append(
                        RecordedAnswer(isIndication: pdu.opcode == 0x1D, handle: handle, value: pdu.value, delayNs: max(0, delay), frame: pdu.frame))
                }
            case 0x0B:
                guard let request = pending[pdu.connection], request.opcode == 0x0A, let handle = request.handle else { continue }
                reads[handle, default: []].append(RecordedRead(value: pdu.value, error: nil, frame: pdu.frame))
                pending[pdu.connection] = nil
            case 0x0D:
                guard let request = pending[pdu.connection], let handle = request.handle else { continue }
                if request.opcode == 0x0C, let last = reads[handle]?.indices.last, reads[handle]![last].value != nil {
                    reads[handle]![last].value! += pdu.value
                } else {
                    reads[handle, default: []].append(RecordedRead(value: pdu.value, error: nil, frame: pdu.frame))
                }
                pending[pdu.connection] = nil
            case 0x13:
                pending[pdu.connection] = nil
            case 0x03:
                if pdu.value.count >= 2 { serverMTU = Int(pdu.value[0]) | Int(pdu.value[1]) << 8 }
                pending[pdu.connection] = nil
            case 0x01:
                guard let request = pending[pdu.connection], pdu.value.count >= 2 else { continue }
                let code = pdu.value[1]
                if request.opcode == 0x12, let index = request.write {
                    writes[index].error = code
                } else if request.opcode == 0x0A || request.opcode == 0x0C, let handle = request.handle {
                    reads[handle, default: []].append(RecordedRead(value: nil, error: code, frame: pdu.frame))
                }
                pending[pdu.connection] = nil
            case 0x02:
                if pdu.value.count >= 2 { peripheralRequestedMTU = Int(pdu.value[0]) | Int(pdu.value[1]) << 8 }
                peripheralRequests[0x02, default: 0] += 1
            default:
                if ATTRole.clientOnly.contains(pdu.opcode) { peripheralRequests[pdu.opcode, default: 0] += 1 }
            }
        }
    }
}

/// Nanoseconds from `start` to `end`; 0 when the capture's clock ran backwards or the difference does
/// not fit (a capture's timestamps are input: any 64-bit values may be there).
func elapsedNs(from start: Int64, to end: Int64) -> Int64 {
    let (difference, overflow) = end.subtractingReportingOverflow(start)
    return overflow ? 0 : max(0, difference)
}

/// The capture time of `frame` among `pdus` (frames are in capture order).
private func timeOf(_ frame: Int, in pdus: [RecordedPDU]) -> Int64 {
    var low = 0
    var high = pdus.count - 1
    while low < high {
        let middle = (low + high) / 2
        if pdus[middle].frame < frame { low = middle + 1 } else { high = middle }
    }
    return pdus[low].timeNs
}
