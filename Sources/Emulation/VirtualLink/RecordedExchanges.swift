import Dissectors

/// A request the recorded central sent the peripheral, with the response that answered it.
public struct RecordedRequest: Sendable, Hashable {
    /// Its frame.
    public var frame: Int
    /// Since the capture's first frame.
    public var timeNs: Int64
    /// The whole ATT PDU: opcode, then its parameters.
    public var pdu: [UInt8]
    /// The response's frame, when the capture holds one.
    public var responseFrame: Int?
    /// The response's instant, since the capture's first frame.
    public var responseTimeNs: Int64?
    /// The response's opcode (0x01 for an Error Response).
    public var responseOpcode: UInt8?
}

/// A notification or indication of the recorded peripheral.
public struct RecordedNotification: Sendable, Hashable {
    /// Its frame.
    public var frame: Int
    /// Since the capture's first frame.
    public var timeNs: Int64
    /// The value handle it carried.
    public var handle: UInt16
    /// Its value.
    public var value: [UInt8]
    /// A Handle Value Indication rather than a Notification.
    public var isIndication: Bool
}

/// What a recorded notification was sent in answer to, which is what starts it again when the
/// app in the loop does the same.
public enum NotificationAnchor: Sendable, Hashable {
    /// A write of the central to a value (a command and its answers): the index into
    /// ``RecordedExchanges/writes``. A notification is taken as a write's answer when it came
    /// within ``RecordedExchanges/commandAnswerWindowNs`` of it.
    case write(Int)
    /// The `occurrence`-th time (0-based, over the whole capture) the central switched on the
    /// Client Characteristic Configuration descriptor at `cccd`.
    case subscription(cccd: UInt16, occurrence: Int)
    /// The connection itself: sent before anything the central did asked for it (a capture that
    /// began inside a connection whose subscription it never saw).
    case connection(Int)
}

/// A write the recorded central made to a value other than a CCCD.
public struct RecordedValueWrite: Sendable, Hashable {
    /// The handle written.
    public var handle: UInt16
    /// The bytes written.
    public var value: [UInt8]
    /// Since the capture's first frame.
    public var timeNs: Int64
}

/// The recorded conversation of the central and the peripheral arranged for a virtual link
/// (``VirtualPeripheralLink``): the central's requests in order on each connection with their
/// responses, and the peripheral's notifications grouped by what they were sent in answer to.
///
/// A notification's anchor is decided once, here: a write to a value within
/// ``commandAnswerWindowNs`` before it (a command and its answers) — unless its characteristic
/// was already notifying under its current subscription before that write (a stream, whose
/// samples the write did not cause) — else the latest subscription of its characteristic, else
/// its connection. Periodic data thus follows the subscription, whatever else the central did in
/// between, and a command's answers follow the command.
public struct RecordedExchanges: Sendable {
    /// How close after a write a notification must come to be taken as its answer.
    public static let commandAnswerWindowNs: Int64 = 100_000_000

    /// The central's requests, by connection ordinal, in order.
    public var requests: [Int: [RecordedRequest]] = [:]
    /// The central's writes to values other than CCCDs, in capture order.
    public var writes: [RecordedValueWrite] = []
    /// Indices into ``writes`` by the write's frame: which recorded write the ``Emulator`` matched.
    public var writeIndexByFrame: [Int: Int] = [:]
    /// The peripheral's notifications and indications, by anchor, in order.
    public var notifications: [NotificationAnchor: [RecordedNotification]] = [:]
    /// The recorded instant of each anchor (since the capture's first frame).
    public var anchorTimes: [NotificationAnchor: Int64] = [:]
    /// The MTU the central asked for on each connection, when it started an exchange.
    public var clientMTU: [Int: Int] = [:]
    /// The link's round trip: the capture's shortest request → response time; 30 ms (two 15 ms
    /// connection intervals, a phone's usual) when it has none.
    public var roundTripNs: Int64 = 30_000_000

    /// Arranges `peripheral`'s PDUs over `database`.
    public init(_ peripheral: RecordedPeripheral, database: EmulatedDatabase, script: AnswerScript) {
        let start = peripheral.captureStartNs
        func since(_ t: Int64) -> Int64 { elapsedNs(from: start, to: t) }
        if let roundTrip = script.linkRoundTripNs, roundTrip > 0 { roundTripNs = roundTrip }
        let cccds = database.cccdHandles
        var cccdOccurrences: [UInt16: Int] = [:]
        var latestSubscription: [UInt16: NotificationAnchor] = [:]  // CCCD → its latest enabling write
        var latestWrite: [Int: (index: Int, timeNs: Int64)] = [:]    // connection → latest value write
        var open: [Int: Int] = [:]                                    // connection → index of the request awaiting its response
        var notifiedUnder: [NotificationAnchor: Set<UInt16>] = [:]   // subscription → handles that notified under it
        for pdu in peripheral.pdus {
            let time = since(pdu.timeNs)
            if pdu.fromClient {
                let isRequest = Self.requestOpcodes.contains(pdu.opcode)
                if isRequest || pdu.opcode == 0x52 {
                    var bytes = [pdu.opcode]
                    if let handle = pdu.handle { bytes += [UInt8(handle & 0xFF), UInt8(handle >> 8)] }
                    bytes += pdu.value
                    if isRequest {
                        requests[pdu.connection, default: []].append(RecordedRequest(frame: pdu.frame, timeNs: time, pdu: bytes))
                        open[pdu.connection] = requests[pdu.connection]!.count - 1
                    }
                }
                if pdu.opcode == 0x02, pdu.value.count >= 2 { clientMTU[pdu.connection] = Int(pdu.value[0]) | Int(pdu.value[1]) << 8 }
                if pdu.opcode == 0x12 || pdu.opcode == 0x52, let handle = pdu.handle {
                    if cccds.contains(handle) {
                        if pdu.value.first.map({ $0 & 0x03 != 0 }) == true {
                            let anchor = NotificationAnchor.subscription(cccd: handle, occurrence: cccdOccurrences[handle, default: 0])
                            cccdOccurrences[handle, default: 0] += 1
                            latestSubscription[handle] = anchor
                            anchorTimes[anchor] = time
                        } else {
                            latestSubscription[handle] = nil
                        }
                    } else {
                        writes.append(RecordedValueWrite(handle: handle, value: pdu.value, timeNs: time))
                        writeIndexByFrame[pdu.frame] = writes.count - 1
                        latestWrite[pdu.connection] = (writes.count - 1, time)
                        anchorTimes[.write(writes.count - 1)] = time
                    }
                }
                continue
            }
            if Self.responseOpcodes.contains(pdu.opcode), let index = open.removeValue(forKey: pdu.connection) {
                requests[pdu.connection]![index].responseFrame = pdu.frame
                requests[pdu.connection]![index].responseTimeNs = time
                requests[pdu.connection]![index].responseOpcode = pdu.opcode
            }
            guard pdu.opcode == 0x1B || pdu.opcode == 0x1D, let handle = pdu.handle else { continue }
            let notification = RecordedNotification(frame: pdu.frame, timeNs: time, handle: handle, value: pdu.value, isIndication: pdu.opcode == 0x1D)
            let anchor: NotificationAnchor
            let subscription = database.characteristic(valueHandle: handle)
                .flatMap { $0.descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration })?.handle }
                .flatMap { latestSubscription[$0] }
            let streaming = subscription.map { notifiedUnder[$0]?.contains(handle) ?? false } ?? false
            if let write = latestWrite[pdu.connection], time - write.timeNs <= Self.commandAnswerWindowNs,
               !(streaming && anchorTimes[subscription!].map { $0 < write.timeNs } == true) {
                anchor = .write(write.index)
            } else if let subscription {
                anchor = subscription
                notifiedUnder[subscription, default: []].insert(handle)
            } else {
                anchor = .connection(pdu.connection)
                if anchorTimes[anchor] == nil {
                    anchorTimes[anchor] = peripheral.connections.first { $0.ordinal == pdu.connection }?.timeNs ?? time
                }
            }
            notifications[anchor, default: []].append(notification)
        }
    }

    /// ATT requests that expect a response (Vol 3 Part F §3.4.8), as a client sends them.
    static let requestOpcodes: Set<UInt8> = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20]
    /// The responses to them, and the Error Response.
    static let responseOpcodes: Set<UInt8> = [0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x21]
}
