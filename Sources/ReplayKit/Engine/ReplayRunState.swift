import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors

// The engine's state during one run and the frames it holds back (a sweep copies it with the engine
// when it forks a run: docs/faults.md, "Sweeps").

extension CoreAdapter {
    /// ``nextDeadline``, asked through a mutating call, though it changes nothing: on an adapter
    /// in the engine's array a non-mutating call copied the adapter out (its box retained and
    /// released) for every question, one per frame and two per timeout; a mutating one reaches
    /// the adapter in place.
    mutating func nextDeadlineInPlace() -> Duration? { nextDeadline }
}

/// The parts of a frame's header the engine uses.
struct FrameHeader {
    var number: Int
    var interfaceIndex: Int
    var timestampNs: Int64
    /// The pcapng `epb_flags`, when the block has them.
    var flags: UInt32?
}

/// A frame a fault made late, repeated, altered or held back, copied out of the reader's buffer.
struct PendingFrame {
    /// When it reaches the cores; `nil` while a reorder block holds it.
    var at: Duration?
    /// The delay faults added on top of a reorder block's release.
    var extraDelay: Duration
    /// The reorder ticket holding it.
    var ticket: Int?
    var number: Int
    var timestampNs: Int64
    var interfaceIndex: Int
    var bytes: [UInt8]
    var flags: UInt32?
    /// The bytes are not the captured ones: dissect them when delivered.
    var redissect: Bool
    var dissected: DissectedFrame?
    var order = 0

    /// The same frame, due at the same instant, whatever its place in the queue's numbering
    /// (``RunState/hasSameFuture(as:)``).
    func isSameDelivery(as other: PendingFrame) -> Bool {
        at == other.at && extraDelay == other.extraDelay && ticket == other.ticket && number == other.number
            && timestampNs == other.timestampNs && interfaceIndex == other.interfaceIndex && bytes == other.bytes
            && flags == other.flags && redissect == other.redissect && dissected == other.dissected
    }

    static func precedes(_ a: PendingFrame, _ b: PendingFrame) -> Bool {
        switch (a.at, b.at) {
        case let (x?, y?): return (x, a.order) < (y, b.order)
        case (_?, nil): return true
        case (nil, _?): return false
        case (nil, nil): return a.order < b.order
        }
    }
}

/// Which adapters want an interface's frames, decided once per interface.
///
/// A class, and immutable: the engine looks it up for every frame, and a struct of an interface
/// and an array was two reference counts to take and drop per frame; this is one. A run state a
/// sweep copies shares its routes, which never change.
final class InterfaceRoute: Sendable {
    let interface: ReplayInterface
    /// Per adapter, in the engine's order.
    let inputs: [ReplayInput]
    /// The most any adapter wants: what the engine makes of the frame.
    let wanted: ReplayInput
    /// ``ReplayInterface/carriesAPICalls``, asked of every frame.
    let carriesAPICalls: Bool

    init(interface: ReplayInterface, inputs: [ReplayInput]) {
        self.interface = interface
        self.inputs = inputs
        wanted = inputs.max() ?? .ignore
        carriesAPICalls = interface.carriesAPICalls
    }
}

/// The engine's mutable state during one run.
struct RunState {
    var clock: Duration = .zero
    /// The next of the engine's scheduled calls to deliver.
    var nextCall = 0
    /// Per adapter: timeouts fired since its last input, and when the first of them fired.
    var consecutiveTimeouts: [Int]
    var firstTimeout: [Duration]
    /// The app in the loop's wake-ups since the last frame fed, and when the first of them was.
    var consecutiveWakeUps = 0
    var firstWakeUp: Duration = .zero
    /// Set when an adapter's timers ran away: no frame is read and no deadline fired after it.
    var halted = false
    /// Indexed by interface index; grows as interfaces appear.
    var routes: [InterfaceRoute?] = []
    /// One dissector per interface, because ACL reassembly state belongs to one link.
    var dissectors: [Int: FrameDissector] = [:]
    /// The manifest's `gatt_handles`, given to every interface's dissector.
    var namedHandles: [UInt16: GATTHandleName] = [:]
    /// The run's faults, when it has any.
    var injector: FaultInjector?
    /// Frames faults made late, repeated or altered, by instant (held reorder frames, without
    /// one, last).
    var pending: [PendingFrame] = []
    private var pendingOrder = 0
    /// Set once a frame the capture does not hold (one a fault put on a link, or altered bytes)
    /// went through a dissector: from then on the dissectors' state is not a function of the
    /// captured frames read alone (``hasSameFuture(as:)``).
    var dissectedOtherFrames = false

    /// Whether a run in this state, reading the same frames from here on, goes on exactly as a run
    /// in `other` does, its adapters aside (``ReplayEngine/hasSameFuture(as:state:otherState:)``):
    /// what a fault sweep asks of a variant and the run without its fault at the same frame.
    ///
    /// The routes and the dissectors are not compared: both are a function of the captured frames
    /// read so far, the same in both runs (every captured frame is dissected as it is read, before
    /// any fault decides its fate), unless a frame the capture does not hold was dissected
    /// (``dissectedOtherFrames``), and then the answer is `false`. The queue's numbering of late
    /// frames is left out (only their order matters), as are the summary's counts.
    func hasSameFuture(as other: RunState) -> Bool {
        // An adapter's first timeout in a row (and the app's first wake-up) counts only while it
        // has a row (after an input the next one sets it afresh).
        guard !dissectedOtherFrames, !other.dissectedOtherFrames, clock == other.clock, nextCall == other.nextCall,
              halted == other.halted, consecutiveTimeouts == other.consecutiveTimeouts, consecutiveWakeUps == other.consecutiveWakeUps,
              consecutiveTimeouts.indices.allSatisfy({ consecutiveTimeouts[$0] == 0 || firstTimeout[$0] == other.firstTimeout[$0] }),
              consecutiveWakeUps == 0 || firstWakeUp == other.firstWakeUp,
              pending.count == other.pending.count, zip(pending, other.pending).allSatisfy({ $0.isSameDelivery(as: $1) })
        else { return false }
        switch (injector, other.injector) {
        case (nil, nil): return true
        case let (a?, b?): return a.hasSameState(as: b)
        default: return false
        }
    }

    /// Queues a frame, keeping `pending` sorted by instant and, within one, by arrival.
    mutating func enqueue(_ frame: PendingFrame) {
        var frame = frame
        pendingOrder += 1
        frame.order = pendingOrder
        let index = pending.firstIndex { PendingFrame.precedes(frame, $0) } ?? pending.endIndex
        pending.insert(frame, at: index)
    }

    /// A reorder block let go: its held frames get the release instant, in the block's order.
    mutating func release(_ release: FaultInjector.Release) {
        for ticket in release.tickets {
            guard let index = pending.firstIndex(where: { $0.ticket == ticket }) else { continue }
            var frame = pending.remove(at: index)
            frame.at = release.at + frame.extraDelay
            frame.ticket = nil
            enqueue(frame)
        }
    }

    /// The route of an interface that has had a frame.
    func knownRoute(_ index: Int) -> InterfaceRoute? {
        index >= 0 && index < routes.count ? routes[index] : nil
    }

    init(adapterCount: Int) {
        consecutiveTimeouts = Array(repeating: 0, count: adapterCount)
        firstTimeout = Array(repeating: .zero, count: adapterCount)
    }

    /// The manifest's interfaces by index.
    var manifestInterfaces: [Int: ManifestInterface] = [:]

    mutating func route(for index: Int, make: (ManifestInterface?) -> InterfaceRoute) -> InterfaceRoute {
        if index >= 0, index < routes.count, let route = routes[index] { return route }
        let route = make(manifestInterfaces[index])
        // Interface indices come from the file; a wild one is routed each time rather than
        // growing an array to its size.
        if index >= 0, index < 4096 {
            if index >= routes.count { routes.append(contentsOf: repeatElement(nil, count: index + 1 - routes.count)) }
            routes[index] = route
        }
        return route
    }

    mutating func dissect(_ bytes: UnsafeRawBufferPointer, flags: UInt32?, interface: ReplayInterface) -> DissectedFrame {
        // Mutated in place: a copy taken out of the dictionary would copy the dissector's state
        // (reassembly buffers, GATT databases) on every frame. Looked up by index, not compared
        // with `nil`: `dissectors[i] == nil` copied the whole dissector out (a retain and release
        // of each of its buffers and tables) for every frame.
        let slot: Dictionary<Int, FrameDissector>.Index
        if let found = dissectors.index(forKey: interface.index) {
            slot = found
        } else {
            var dissector = Self.replayDissector(namedHandles)
            // A TCP interface's `broker_port` tells the dissector which connections are MQTT.
            if let port = interface.parameter("broker_port", as: UInt16.self) { dissector.mqttPorts.insert(port) }
            dissectors[interface.index] = dissector
            slot = dissectors.index(forKey: interface.index)!
        }
        return dissectors.values[slot].dissect(bytes: bytes, flags: flags, linkType: interface.linkType)
    }

    /// Adapters read records, links and datagrams, never the one-line summaries.
    static func replayDissector(_ namedHandles: [UInt16: GATTHandleName]) -> FrameDissector {
        var dissector = FrameDissector(namedHandles: namedHandles)
        dissector.producesSummaries = false
        dissector.retainsTCPPayload = false
        return dissector
    }
}
