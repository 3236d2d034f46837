import CaptureKit
import CaptureSet
import Dissectors

/// One capture interface as replay sees it: the file's description joined with the manifest's.
public struct ReplayInterface: Sendable, Hashable {
    /// Index in the capture file (pcapng Interface Description Block order).
    public var index: Int
    /// Link type of its frames.
    public var linkType: LinkType
    /// Interface name from the manifest, else from the capture file.
    public var name: String?
    /// Role from the manifest; `nil` when the manifest does not describe this interface.
    public var role: InterfaceRole?
    /// For `ingest-udp`: the manifest's `ingest_port`.
    public var ingestPort: UInt16?
    /// For BLE roles: the core the manifest says replays it (`nil`: messaging).
    public var core: String?
    /// For `mqtt-tcp`: the manifest's `broker_port` (its connections are read as MQTT).
    public var brokerPort: UInt16? = nil

    /// Describe one interface.
    public init(index: Int, linkType: LinkType, name: String? = nil, role: InterfaceRole? = nil, ingestPort: UInt16? = nil, core: String? = nil) {
        self.core = core
        self.index = index
        self.linkType = linkType
        self.name = name
        self.role = role
        self.ingestPort = ingestPort
    }
}

/// In what form an adapter wants the frames of one interface.
public enum ReplayInput: Sendable, Hashable, Comparable {
    /// Not at all: the adapter is not called for this interface's frames.
    case ignore
    /// The captured bytes only (the fast path: the adapter extracts what it needs itself).
    case raw
    /// The bytes and the ``DissectedFrame`` (HCI → ACL → L2CAP → ATT, or IP → UDP). The engine
    /// runs one stateful ``FrameDissector`` per interface and shares its result between adapters.
    case dissected
}

/// One captured frame handed to an adapter, at its virtual instant.
///
/// `bytes` borrow the reader's buffer: they are valid only during the ``CoreAdapter/frame(_:now:)``
/// call. Copy what must outlive it.
public struct ReplayFrame {
    /// 1-based frame number in the capture file, as Wireshark numbers it.
    public var number: Int
    /// Virtual nanoseconds since the capture's first frame (never less than the previous frame's).
    public var virtualTimeNs: Int64
    /// Capture timestamp, nanoseconds since the Unix epoch, as recorded.
    public var timestampNs: Int64
    /// The interface it was captured on.
    public var interface: ReplayInterface
    /// The captured bytes under `interface.linkType`; valid only during the call.
    public var bytes: UnsafeRawBufferPointer
    /// What the dissectors made of it; set only when some adapter asked for ``ReplayInput/dissected``
    /// on this interface.
    public var dissected: DissectedFrame?

    /// Describe one frame.
    public init(number: Int, virtualTimeNs: Int64, timestampNs: Int64, interface: ReplayInterface, bytes: UnsafeRawBufferPointer, dissected: DissectedFrame? = nil) {
        self.number = number
        self.virtualTimeNs = virtualTimeNs
        self.timestampNs = timestampNs
        self.interface = interface
        self.bytes = bytes
        self.dissected = dissected
    }
}

/// Connects one sans-I/O core to replay: turns frames into the core's inputs and the core's
/// outputs into trace events.
///
/// The engine calls, in virtual-time order: ``timeout(now:)`` at each ``nextDeadline`` that falls
/// due, ``frame(_:now:)`` for every frame of an interface the adapter wants, and ``finish(now:)``
/// once at the end. `now` never decreases. Every returned event should carry `timeNs` equal to
/// `now` in nanoseconds (``Swift/Duration/replayNanoseconds``).
public protocol CoreAdapter {
    /// The core's name in the trace: `ingest`, `messaging` or `session`.
    var core: String { get }
    /// `true` when ``input(for:)`` may answer ``ReplayInput/dissected`` for some interface. The
    /// engine then reads owned frames (with their pcapng flags, which carry HCI direction) instead
    /// of the borrowed fast path. Defaults to `false`.
    var dissectsFrames: Bool { get }
    /// Whether and how this adapter wants the frames of `interface`. Asked once per interface,
    /// when its first frame arrives.
    func input(for interface: ReplayInterface) -> ReplayInput
    /// One frame of an interface for which ``input(for:)`` did not say ``ReplayInput/ignore``.
    mutating func frame(_ frame: ReplayFrame, now: Duration) -> [TraceEvent]
    /// When the core wants ``timeout(now:)`` next; `nil` when it has no timer running.
    var nextDeadline: Duration? { get }
    /// Time reached ``nextDeadline``.
    mutating func timeout(now: Duration) -> [TraceEvent]
    /// The capture is over: flush and report (a final `summary` event, say).
    mutating func finish(now: Duration) -> [TraceEvent]
    /// ``frame(_:now:)`` handing each event to `emit` as it is made, in the same order: what the
    /// engine calls, so an adapter that implements it makes no array per frame. Defaults to
    /// emitting what ``frame(_:now:)`` returns.
    mutating func frame(_ frame: ReplayFrame, now: Duration, emit: (TraceEvent) -> Void)
    /// ``timeout(now:)`` handing each event to `emit` as it is made, in the same order.
    /// Defaults to emitting what ``timeout(now:)`` returns.
    mutating func timeout(now: Duration, emit: (TraceEvent) -> Void)
}

extension CoreAdapter {
    /// Raw-bytes adapters (the ingest adapter) need no dissection.
    public var dissectsFrames: Bool { false }

    /// Emits what ``frame(_:now:)`` returns.
    public mutating func frame(_ frame: ReplayFrame, now: Duration, emit: (TraceEvent) -> Void) {
        for event in self.frame(frame, now: now) { emit(event) }
    }

    /// Emits what ``timeout(now:)`` returns.
    public mutating func timeout(now: Duration, emit: (TraceEvent) -> Void) {
        for event in timeout(now: now) { emit(event) }
    }
}

extension Duration {
    /// The whole nanoseconds of this duration, saturating at the ends of `Int64`: the unit of a
    /// trace's `t_ns`.
    public var replayNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = ns.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}
