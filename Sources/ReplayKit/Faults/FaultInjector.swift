import BehaviourTrace
import CaptureKit
import CoreRandom
import Dissectors

/// Applies a run's faults between the capture and the cores: for every captured frame, what
/// reaches the cores, when, and as which bytes; and, on its own timer, the frames a fault puts on
/// the link (a disconnection, a reconnection). Sans-I/O and deterministic: the same frames and
/// faults give the same decisions, and each random fault decides per frame from its seed and the
/// frame number alone.
///
/// Every fault it applies is written as a `fault_injected` event of core ``FaultInjector/core``.
struct FaultInjector {
    /// The trace's name for the events faults write.
    static let core: TraceName = "faults"
    /// The one event it writes.
    static let faultInjected: TraceName = "fault_injected"

    /// One way a frame reaches the cores.
    struct Delivery {
        /// How long after its captured instant (or its reorder block's release).
        var delay: Duration = .zero
        /// Bytes to deliver instead of the captured ones.
        var replacement: LinkFaultFrames.Frame?
    }

    /// What becomes of one captured frame.
    struct Decision {
        /// Each delivery; none when the frame is lost.
        var deliveries: [Delivery] = [Delivery()]
        /// Set when a reorder fault holds the frame back: the ticket its release will name.
        var held: Int?
        /// `true` when nothing was changed (the engine's fast path).
        var untouched = true
    }

    /// A reorder block let go: its frames in the order they reach the cores, at `at`.
    struct Release {
        var at: Duration
        var tickets: [Int]
    }

    /// A frame a fault puts on a link.
    struct LinkFrame {
        var interfaceIndex: Int
        var frame: LinkFaultFrames.Frame
    }

    private struct Connection: Equatable {
        /// The recorded setup, from the connection's LE Connection Complete to just before the
        /// peer's first notification or indication: what a reconnection feeds again.
        var setup: [LinkFaultFrames.Frame] = []
        var setupComplete = false
        var lastWriteHandle: UInt16?
    }

    private struct BLELink: Equatable {
        var linkType: LinkType
        var connections: [UInt16: Connection] = [:]
        /// Dropped by a fault: handle → when it comes back (`nil`: never).
        var down: [UInt16: Duration?] = [:]
        var suppressed: [UInt16: Int] = [:]
    }

    private struct TCPFlow: Equatable {
        var template: [UInt8]
        var brokerNext: UInt32
        var clientNext: UInt32
    }

    private struct TCPLink: Equatable {
        var linkType: LinkType
        /// Broker → client flows with data seen, and the sequence numbers a reset must carry.
        var flows: [TCPFlowKey: TCPFlow] = [:]
        /// Flows reset by a fault (both directions): nothing more of them is delivered.
        var reset: Set<TCPFlowKey> = []
    }

    private enum Timed: Equatable {
        case disconnect(fault: Int)
        case reconnect(fault: Int, interface: Int, handle: UInt16)
        case closeBlock(fault: Int, block: Int)
    }

    private struct ReorderBlock: Equatable {
        var number = 0
        var tickets: [Int] = []
        var opened: Duration = .zero
    }

    private(set) var faults: [Fault]
    private var timed: [(at: Duration, order: Int, what: Timed)] = []
    private var timedOrder = 0
    private var ble: [Int: BLELink] = [:]
    private var tcp: [Int: TCPLink] = [:]
    private var blocks: [Int: ReorderBlock] = [:]
    private var nextTicket = 0
    /// Frames of each kind each fault touched, for the run's summary.
    private(set) var applied = 0

    init(faults: [Fault]) {
        self.faults = faults
        for (index, fault) in faults.enumerated() {
            if case .disconnect(let at, _) = fault { schedule(at, .disconnect(fault: index)) }
        }
    }

    /// Puts `fault` in the place of fault `index`, as if the run had had it from the start: what
    /// a fault sweep's fork does to a copy of the run without the variant's fault (``FaultSweep``).
    /// Sound only before anything asked about what `fault` selects, which the sweep sees to; and
    /// `false`, changing nothing, when a timer has been scheduled already (the new fault's own timer
    /// would then be ordered differently from a run that had it from the start).
    mutating func replaceFault(at index: Int, with fault: Fault) -> Bool {
        guard faults.indices.contains(index), timedOrder == 0, timed.isEmpty else { return false }
        faults[index] = fault
        if case .disconnect(let at, _) = fault { schedule(at, .disconnect(fault: index)) }
        return true
    }

    private mutating func schedule(_ at: Duration, _ what: Timed) {
        timedOrder += 1
        timed.append((at, timedOrder, what))
        timed.sort { ($0.at, $0.order) < ($1.at, $1.order) }
    }

    /// Whether the injector will act from now on exactly as `other` does, the faults aside (a
    /// fault sweep compares a variant with the run without its fault only once that fault can no
    /// longer act: ``FaultSweep``): the same timers due, in the same order, the same links
    /// followed and held down, the same reorder blocks. The count of faults applied, which only
    /// the summary reads, is left out, and so are the timers' sequence numbers, of which only the
    /// order matters.
    func hasSameState(as other: FaultInjector) -> Bool {
        timed.count == other.timed.count && zip(timed, other.timed).allSatisfy { $0.at == $1.at && $0.what == $1.what }
            && ble == other.ble && tcp == other.tcp && blocks == other.blocks && nextTicket == other.nextTicket
    }

    /// When ``fire(now:)`` is next due.
    var nextDeadline: Duration? { timed.first?.at }

    // MARK: frames

    /// A captured frame on a link interface (never `api-calls`), already dissected: what becomes
    /// of it. `emit` receives the `fault_injected` events.
    mutating func decide(
        number: Int, at now: Duration, bytes: UnsafeRawBufferPointer, flags: UInt32?, dissected: DissectedFrame?,
        interface: ReplayInterface, emit: (TraceEvent) -> Void
    ) -> Decision {
        let linkType = interface.linkType
        var suppressed = false
        switch linkType {
        case .bluetoothHCIH4WithPHDR, .bluetoothHCIH4, .bluetoothLinuxMonitor:
            suppressed = trackBLE(interface: interface.index, linkType: linkType, bytes: bytes, flags: flags, dissected: dissected)
        default:
            if let segment = dissected?.tcp { suppressed = trackTCP(interface: interface.index, linkType: linkType, bytes: bytes, segment: segment) }
        }
        if suppressed {
            return Decision(deliveries: [], held: nil, untouched: false)
        }
        guard let kind = PeerFrameClassifier.classify(bytes, dissected: dissected, interface: interface) else { return Decision() }
        var decision = Decision()
        for (index, fault) in faults.enumerated() {
            guard let selector = fault.selector, selector.matches(number: number, at: now, kind: kind) else { continue }
            var fields: [String: TraceValue] = [:]
            let action: String
            switch PeerFrameFaults.timing(of: fault, frame: number, kind: kind, at: now) {
            case .lost?:
                decision.deliveries = []
                action = "dropped"
            case .late(let by)?:
                for i in decision.deliveries.indices { decision.deliveries[i].delay += by }
                fields["delay_ns"] = .int(by.replayNanoseconds)
                if case .jitter = fault { action = "jittered" } else { action = "delayed" }
            case .repeated?:
                // One more copy per duplicate fault (PeerFrameFaults.deliveries says why).
                guard let last = decision.deliveries.last else { continue }
                decision.deliveries.append(last)
                action = "duplicated"
            case nil:
                switch fault {
                case .truncate(_, let keep):
                    guard kind == .datagram, let cut = LinkFaultFrames.truncatedUDP(Array(bytes), keep: keep, linkType: linkType) else { continue }
                    for i in decision.deliveries.indices { decision.deliveries[i].replacement = LinkFaultFrames.Frame(bytes: cut, flags: flags) }
                    fields["bytes"] = .int(Int64(keep))
                    action = "truncated"
                case .attError(_, let code):
                    guard kind == .writeResponse, let handle = LinkFaultFrames.aclHandle(bytes, linkType: linkType),
                          let attribute = ble[interface.index]?.connections[handle]?.lastWriteHandle,
                          let frame = LinkFaultFrames.inboundATT(
                            handle: handle, pdu: [0x01, 0x12, UInt8(attribute & 0xFF), UInt8(attribute >> 8), code], linkType: linkType)
                    else { continue }
                    for i in decision.deliveries.indices { decision.deliveries[i].replacement = frame }
                    fields["attribute_handle"] = .int(Int64(attribute))
                    fields["error_code"] = .int(Int64(code))
                    action = "att_error"
                case .mtu(_, let size):
                    guard kind == .mtu, let stated = LinkFaultFrames.exchangeMTU(Array(bytes), size: size, linkType: linkType) else { continue }
                    for i in decision.deliveries.indices { decision.deliveries[i].replacement = LinkFaultFrames.Frame(bytes: stated.bytes, flags: flags) }
                    fields["recorded_mtu"] = .int(Int64(stated.recorded))
                    fields["mtu"] = .int(Int64(size))
                    action = "mtu_changed"
                case .reorder(_, let window, let hold, _):
                    guard !decision.deliveries.isEmpty, decision.held == nil else { continue }
                    nextTicket += 1
                    decision.held = nextTicket
                    var block = blocks[index] ?? ReorderBlock()
                    if block.tickets.isEmpty {
                        block.opened = now
                        schedule(now + hold, .closeBlock(fault: index, block: block.number))
                    }
                    block.tickets.append(nextTicket)
                    blocks[index] = block
                    fields["block"] = .int(Int64(block.number))
                    action = "held"
                    fields["window"] = .int(Int64(window))
                case .disconnect, .drop, .randomDrop, .delay, .duplicate, .jitter:
                    continue
                }
            }
            decision.untouched = false
            applied += 1
            fields["fault"] = .string(fault.description)
            fields["action"] = .string(action)
            fields["frame"] = .int(Int64(number))
            fields["interface"] = .int(Int64(interface.index))
            fields["kind"] = .string(kind.rawValue)
            emit(TraceEvent(timeNs: now.replayNanoseconds, core: Self.core, event: Self.faultInjected, fields: fields))
            if decision.deliveries.isEmpty { break }
        }
        return decision
    }

    /// The reorder blocks the frame just held has filled: let go at once.
    mutating func fullBlocks(at now: Duration) -> [Release] {
        var releases: [Release] = []
        for (index, fault) in faults.enumerated() {
            guard case .reorder(_, let window, _, let seed) = fault, let block = blocks[index], block.tickets.count >= window else { continue }
            releases.append(release(fault: index, seed: seed, at: now))
        }
        return releases
    }

    private mutating func release(fault index: Int, seed: UInt64, at now: Duration) -> Release {
        var block = blocks[index] ?? ReorderBlock()
        var tickets = block.tickets
        // A Fisher–Yates shuffle seeded by the fault's seed and the block's number.
        var random = SeededRandom(seed: seed ^ (UInt64(block.number) &* 0x9E37_79B9_7F4A_7C15))
        if tickets.count > 1 {
            for i in stride(from: tickets.count - 1, to: 0, by: -1) {
                let j = Int(random.next() % UInt64(i + 1))
                tickets.swapAt(i, j)
            }
        }
        block.tickets = []
        block.number += 1
        blocks[index] = block
        return Release(at: now, tickets: tickets)
    }

    // MARK: link state

    /// Follows a BLE interface's connections; `true` when the frame belongs to a connection a fault
    /// dropped (it is then not delivered).
    private mutating func trackBLE(interface index: Int, linkType: LinkType, bytes: UnsafeRawBufferPointer, flags: UInt32?, dissected: DissectedFrame?) -> Bool {
        var link = ble[index] ?? BLELink(linkType: linkType)
        defer { ble[index] = link }
        switch dissected?.linkChange {
        case .connected(let handle, _, _)?:
            link.connections[handle] = Connection(setup: [LinkFaultFrames.Frame(bytes: Array(bytes), flags: flags)])
            if link.down[handle] != nil {
                // The capture's own reconnection on this handle while a fault holds it down.
                link.suppressed[handle, default: 0] += 1
                return true
            }
            return false
        case .disconnected(let handle, _)?:
            if link.down[handle] != nil {
                link.suppressed[handle, default: 0] += 1
                return true
            }
            link.connections[handle] = nil
            return false
        case nil:
            break
        }
        guard let handle = LinkFaultFrames.aclHandle(bytes, linkType: link.linkType) else { return false }
        let down = link.down[handle] != nil
        if down { link.suppressed[handle, default: 0] += 1 }
        guard var connection = link.connections[handle] else { return down }
        for record in dissected?.att ?? [] where record.direction == .sent && record.opcode == .writeRequest {
            connection.lastWriteHandle = record.handle
        }
        // The setup goes on being recorded while a fault holds the link down: a link dropped
        // during its own setup gets the whole of it fed again when it comes back.
        if !connection.setupComplete {
            if dissected?.direction == .received, dissected?.att.contains(where: { $0.opcode == .handleValueNotification || $0.opcode == .handleValueIndication }) == true {
                connection.setupComplete = true
            } else if connection.setup.count < 4096 {
                connection.setup.append(LinkFaultFrames.Frame(bytes: Array(bytes), flags: flags))
            }
        }
        link.connections[handle] = connection
        return down
    }

    /// Follows an MQTT interface's TCP flows; `true` for a segment of a flow a fault reset.
    private mutating func trackTCP(interface index: Int, linkType: LinkType, bytes: UnsafeRawBufferPointer, segment: TCPSegment) -> Bool {
        var link = tcp[index] ?? TCPLink(linkType: linkType)
        defer { tcp[index] = link }
        let key = TCPFlowKey(segment)
        if link.reset.contains(key) { return true }
        let length = UInt32(truncatingIfNeeded: segment.payload.count) &+ (segment.flags & 0x03 != 0 ? 1 : 0)
        if link.flows[key] != nil {
            link.flows[key]?.brokerNext = segment.sequenceNumber &+ length
            link.flows[key]?.clientNext = segment.acknowledgmentNumber
        } else if link.flows[key.reversed] != nil {
            link.flows[key.reversed]?.clientNext = segment.sequenceNumber &+ length
        } else if segment.flags & 0x12 == 0x12 {
            // The broker's SYN-ACK opens a flow this side can reset.
            link.flows[key] = TCPFlow(template: Array(bytes), brokerNext: segment.sequenceNumber &+ 1, clientNext: segment.acknowledgmentNumber)
        }
        if segment.flags & 0x05 != 0 {
            // FIN or RST: the connection ended as recorded.
            link.flows[key] = nil
            link.flows[key.reversed] = nil
        }
        return false
    }

    // MARK: timed faults

    /// Everything due at or before `now`: the frames to put on links (in order) and the reorder
    /// blocks to let go.
    mutating func fire(now: Duration, emit: (TraceEvent) -> Void) -> (frames: [LinkFrame], releases: [Release]) {
        var frames: [LinkFrame] = []
        var releases: [Release] = []
        while let first = timed.first, first.at <= now {
            timed.removeFirst()
            switch first.what {
            case .disconnect(let index):
                frames += disconnect(fault: index, now: now, emit: emit)
            case .reconnect(let index, let interface, let handle):
                frames += reconnect(fault: index, interface: interface, handle: handle, now: now, emit: emit)
            case .closeBlock(let index, let number):
                guard case .reorder(_, _, _, let seed) = faults[index], let block = blocks[index], block.number == number, !block.tickets.isEmpty else { continue }
                releases.append(release(fault: index, seed: seed, at: now))
            }
        }
        return (frames, releases)
    }

    private mutating func disconnect(fault index: Int, now: Duration, emit: (TraceEvent) -> Void) -> [LinkFrame] {
        guard case .disconnect(_, let again) = faults[index] else { return [] }
        var frames: [LinkFrame] = []
        let base: [String: TraceValue] = ["fault": .string(faults[index].description), "action": .string("disconnected")]
        for interface in ble.keys.sorted() {
            guard var link = ble[interface] else { continue }
            for handle in link.connections.keys.sorted() where link.down[handle] == nil {
                guard let frame = LinkFaultFrames.disconnectionComplete(handle: handle, linkType: link.linkType) else { continue }
                link.down[handle] = again.map { now + $0 }
                link.suppressed[handle] = 0
                frames.append(LinkFrame(interfaceIndex: interface, frame: frame))
                var fields = base
                fields["interface"] = .int(Int64(interface))
                fields["connection_handle"] = .int(Int64(handle))
                fields["reason"] = .int(0x08)
                emit(TraceEvent(timeNs: now.replayNanoseconds, core: Self.core, event: Self.faultInjected, fields: fields))
                applied += 1
                if let again { schedule(now + again, .reconnect(fault: index, interface: interface, handle: handle)) }
            }
            ble[interface] = link
        }
        for interface in tcp.keys.sorted() {
            guard var link = tcp[interface] else { continue }
            for key in link.flows.keys.sorted(by: { "\($0)" < "\($1)" }) {
                guard let flow = link.flows[key],
                      let reset = LinkFaultFrames.tcpReset(template: flow.template, linkType: link.linkType, flow: key,
                                                           sequence: flow.brokerNext, acknowledgment: flow.clientNext) else { continue }
                frames.append(LinkFrame(interfaceIndex: interface, frame: LinkFaultFrames.Frame(bytes: reset, flags: nil)))
                link.flows[key] = nil
                link.reset.insert(key)
                link.reset.insert(key.reversed)
                var fields = base
                fields["interface"] = .int(Int64(interface))
                fields["flow"] = .string("\(key.sourceAddress):\(key.sourcePort) → \(key.destinationAddress):\(key.destinationPort)")
                fields["detail"] = .string("the broker reset the TCP connection")
                emit(TraceEvent(timeNs: now.replayNanoseconds, core: Self.core, event: Self.faultInjected, fields: fields))
                applied += 1
            }
            tcp[interface] = link
        }
        if frames.isEmpty {
            var fields = base
            fields["action"] = .string("no_link")
            fields["detail"] = .string("no BLE connection or MQTT connection was open at this instant; nothing was disconnected")
            emit(TraceEvent(timeNs: now.replayNanoseconds, core: Self.core, event: Self.faultInjected, fields: fields))
        }
        return frames
    }

    private mutating func reconnect(fault index: Int, interface: Int, handle: UInt16, now: Duration, emit: (TraceEvent) -> Void) -> [LinkFrame] {
        guard var link = ble[interface] else { return [] }
        let setup = link.connections[handle]?.setup ?? []
        link.down[handle] = nil
        let suppressed = link.suppressed.removeValue(forKey: handle) ?? 0
        ble[interface] = link
        emit(TraceEvent(timeNs: now.replayNanoseconds, core: Self.core, event: Self.faultInjected, fields: [
            "fault": .string(faults[index].description), "action": .string("reconnected"),
            "interface": .int(Int64(interface)), "connection_handle": .int(Int64(handle)),
            "setup_frames": .int(Int64(setup.count)), "frames_lost_while_down": .int(Int64(suppressed)),
        ]))
        applied += 1
        return setup.map { LinkFrame(interfaceIndex: interface, frame: $0) }
    }
}

