import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors

/// One capture interface as replay sees it: the file's description joined with the manifest's.
///
/// Its fields live in one immutable object shared by every copy: the engine hands the interface
/// to an adapter with every frame, and copying six fields (three of them reference-counted) per
/// frame was a measurable part of a replay. Setting a field makes a new object.
public struct ReplayInterface: Sendable, Hashable {
    private struct Fields: Sendable, Hashable {
        var index: Int
        var linkType: LinkType
        var name: String?
        var role: InterfaceRole?
        var core: String?
        var parameters: [String: String]
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    /// Reads `box`'s fields; writing one makes a new box.
    private var fields: Fields {
        get { box.fields }
        set { box = Box(newValue) }
    }

    /// Index in the capture file (pcapng Interface Description Block order).
    public var index: Int {
        get { fields.index }
        set { fields.index = newValue }
    }
    /// Link type of its frames.
    public var linkType: LinkType {
        get { fields.linkType }
        set { fields.linkType = newValue }
    }
    /// Interface name from the manifest, else from the capture file.
    public var name: String? {
        get { fields.name }
        set { fields.name = newValue }
    }
    /// Role from the manifest; `nil` when the manifest does not describe this interface.
    public var role: InterfaceRole? {
        get { fields.role }
        set { fields.role = newValue }
    }
    /// The core whose adapter takes this interface's frames: the manifest's `core:`, else the one
    /// the registry chose for its role (``IntegrationRegistry/select(for:manifestPath:)``). `nil`
    /// for an undescribed interface and for `api-calls`, whose records are split by their own
    /// `core` field.
    public var core: String? {
        get { fields.core }
        set { fields.core = newValue }
    }
    /// Every other key the manifest gives the interface, as text (`ingest_port`, `broker_port`,
    /// or a user integration's own): what an adapter reads about an interface beyond its role.
    public var parameters: [String: String] {
        get { fields.parameters }
        set { fields.parameters = newValue }
    }

    /// Describe one interface.
    public init(index: Int, linkType: LinkType, name: String? = nil, role: InterfaceRole? = nil, core: String? = nil, parameters: [String: String] = [:]) {
        box = Box(Fields(index: index, linkType: linkType, name: name, role: role, core: core, parameters: parameters))
    }

    /// Equal when every field is.
    public static func == (a: ReplayInterface, b: ReplayInterface) -> Bool {
        a.box === b.box || a.fields == b.fields
    }

    /// Hashes every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields)
    }

    /// The interface as the manifest describes it (`nil`: undescribed), on a file interface of
    /// `linkType`.
    public init(index: Int, linkType: LinkType, name: String?, manifest described: ManifestInterface?) {
        var parameters = described?.parameters ?? [:]
        if let port = described?.ingestPort { parameters["ingest_port"] = String(port) }
        if let port = described?.brokerPort { parameters["broker_port"] = String(port) }
        self.init(index: index, linkType: linkType, name: described?.name ?? name, role: described?.role,
                  core: described?.core, parameters: parameters)
    }

    /// Whether the interface carries the app's API-call records: its role is `api-calls`, or the
    /// manifest does not describe it and its link type is LINKTYPE_USER0 (147).
    public var carriesAPICalls: Bool {
        role == .apiCalls || (role == nil && linkType == .user0)
    }

    /// A parameter read as a number or other value; `nil` when absent or not of that type.
    public func parameter<T: LosslessStringConvertible>(_ key: String, as type: T.Type = T.self) -> T? {
        parameters[key].flatMap { T($0) }
    }
}

/// What the engine made of one `api-calls` record (LINKTYPE_USER0, one JSON object per frame):
/// parsed once, and handed only to the adapter of the core its `core` field names.
public enum APICallRecord: Sendable, Hashable {
    /// The record's members.
    case parsed([String: TraceValue])
    /// Not a JSON object; the reason, naming the frame.
    case malformed(String)

    /// The `core` member, when the record has one.
    public var core: String? {
        guard case .parsed(let members) = self, case .string(let core)? = members["core"] else { return nil }
        return core
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

extension ReplayInput {
    /// What a core on the phone's side of a BLE link wants (messaging, session, a user's BLE
    /// core): API-call records raw; HCI and monitor-channel interfaces, described as `ble-hci` or
    /// `ble-monitor` or undescribed with a BLE link type, dissected; nothing else.
    public static func bleCore(for interface: ReplayInterface) -> ReplayInput {
        if interface.carriesAPICalls { return .raw }
        if let role = interface.role { return role == .bleHCI || role == .bleMonitor ? .dissected : .ignore }
        switch interface.linkType {
        case .bluetoothHCIH4WithPHDR, .bluetoothHCIH4, .bluetoothLinuxMonitor: return .dissected
        default: return .ignore
        }
    }
}

/// One captured frame handed to an adapter, at its virtual instant: everything about it but its
/// bytes.
///
/// A plain `Sendable` value an adapter may keep (a frame it answers later, a test's expected
/// input). The captured bytes travel beside it, as the `RawSpan` argument of
/// ``CoreAdapter/frame(_:bytes:now:)``: they borrow the reader's buffer, so the compiler, not a
/// comment, keeps them from outliving the call. Nothing in it is allocated per frame: the
/// interface is shared by every frame of its interface, and the dissection and the API-call
/// record are the engine's, moved in.
public struct ReplayFrame: Sendable, Hashable {
    /// 1-based frame number in the capture file, as Wireshark numbers it.
    public var number: Int
    /// Virtual nanoseconds since the capture's first frame (never less than the previous frame's).
    public var virtualTimeNs: Int64
    /// Capture timestamp, nanoseconds since the Unix epoch, as recorded.
    public var timestampNs: Int64
    /// The interface it was captured on.
    public var interface: ReplayInterface
    /// What the dissectors made of it; set only when some adapter asked for ``ReplayInput/dissected``
    /// on this interface.
    public var dissected: DissectedFrame?
    /// On an `api-calls` interface: the record, parsed once by the engine
    /// (``APICallRecord/init(parsing:frame:)`` for a frame built by hand).
    public var apiCall: APICallRecord?

    /// Describe one frame.
    public init(number: Int, virtualTimeNs: Int64, timestampNs: Int64, interface: ReplayInterface, dissected: DissectedFrame? = nil, apiCall: APICallRecord? = nil) {
        self.apiCall = apiCall
        self.number = number
        self.virtualTimeNs = virtualTimeNs
        self.timestampNs = timestampNs
        self.interface = interface
        self.dissected = dissected
    }
}

/// Connects one sans-I/O core to replay: turns frames into the core's inputs and the core's
/// outputs into trace events.
///
/// The engine calls, in virtual-time order: ``timeout(now:)`` at each ``nextDeadline`` that falls
/// due, ``frame(_:bytes:now:)`` for every frame of an interface the adapter wants, and ``finish(now:)``
/// once at the end. `now` never decreases. Every returned event should carry `timeNs` equal to
/// `now` in nanoseconds (``Swift/Duration/replayNanoseconds``).
public protocol CoreAdapter {
    /// The core's name in the trace (`ingest`, `messaging`, `session`, `widget`, or a user's own):
    /// the name of the ``CoreIntegration`` that made the adapter.
    var core: TraceName { get }
    /// `true` when ``input(for:)`` may answer ``ReplayInput/dissected`` for some interface.
    /// Defaults to `false`. The engine reads borrowed frames either way (their views carry the
    /// pcapng flags, which give HCI direction), so this is informational.
    var dissectsFrames: Bool { get }
    /// Whether and how this adapter wants the frames of `interface`. Asked once per interface,
    /// when its first frame arrives.
    func input(for interface: ReplayInterface) -> ReplayInput
    /// One frame of an interface for which ``input(for:)`` did not say ``ReplayInput/ignore``, with
    /// its captured bytes under `frame.interface.linkType` (valid only during the call; copy what
    /// must outlive it).
    mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent]
    /// When the core wants ``timeout(now:)`` next; `nil` when it has no timer running.
    var nextDeadline: Duration? { get }
    /// Time reached ``nextDeadline``.
    mutating func timeout(now: Duration) -> [TraceEvent]
    /// The capture is over: flush and report (a final `summary` event, say).
    mutating func finish(now: Duration) -> [TraceEvent]
    /// ``frame(_:bytes:now:)`` handing each event to `emit` as it is made, in the same order: what
    /// the engine calls, so an adapter that implements it makes no array per frame. Defaults to
    /// emitting what ``frame(_:bytes:now:)`` returns.
    mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration, emit: (TraceEvent) -> Void)
    /// ``timeout(now:)`` handing each event to `emit` as it is made, in the same order.
    /// Defaults to emitting what ``timeout(now:)`` returns.
    mutating func timeout(now: Duration, emit: (TraceEvent) -> Void)
    /// Takes `faults` in place of the faults it was made with (``IntegrationContext/faults``),
    /// for every decision from now on, and says whether it could.
    ///
    /// A fault sweep (``FaultSweep``) does not replay each variant from the first frame: it copies
    /// the run without the variant's fault at a point before anything asked about the faulted
    /// frame, and gives the copy the variant's faults. That is sound for an adapter that asks its
    /// faults only as it goes (``PeerFrameFaults/deliveries(ofFrame:kind:capturedAt:)`` for each
    /// frame or captured answer as it is scheduled), and keeps nothing it derived from the whole
    /// list when it was made. Such an adapter stores the new faults where it kept the old and
    /// returns `true`; an adapter that keeps no faults returns `true` too. The default, `false`,
    /// makes the sweep replay that set's variants in full, as it says in its report.
    mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool
    /// Whether `other`, an adapter of the same core replaying the same capture, is in the same
    /// state as this one: the same inputs from here on would make it do and emit exactly what this
    /// one does, but for its final summary. A fault sweep asks it of a variant and the run without
    /// its fault at the same frame, once the fault can no longer act, and stops the variant when
    /// the answer is `true` (its promises then end as the run without the fault's do).
    ///
    /// Compare everything that decides future behaviour; leave out counts that only the final
    /// `summary` event reports, caches, and the faults themselves. `false` when unsure: the
    /// default, which replays every variant to the end of the capture.
    func hasSameState(as other: any CoreAdapter) -> Bool
}

extension CoreAdapter {
    /// Raw-bytes adapters (the ingest adapter) need no dissection.
    public var dissectsFrames: Bool { false }

    /// `false`: a fault sweep replays each variant in full (see the requirement).
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool { false }

    /// `false`: a fault sweep runs every variant to the end of the capture (see the requirement).
    public func hasSameState(as other: any CoreAdapter) -> Bool { false }

    /// Emits what ``frame(_:bytes:now:)`` returns.
    public mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration, emit: (TraceEvent) -> Void) {
        for event in self.frame(frame, bytes: bytes, now: now) { emit(event) }
    }

    /// A frame built by hand (a test's), its bytes held in an array: as ``frame(_:bytes:now:)``.
    public mutating func frame(_ frame: ReplayFrame, bytes: [UInt8], now: Duration) -> [TraceEvent] {
        bytes.withUnsafeBytes { self.frame(frame, bytes: RawSpan(_unsafeBytes: $0), now: now) }
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
        // A time of at least zero (every replay time) by one 128-by-64-bit division; `components`
        // divides in a 128-bit software integer, and replay asks this several times per frame.
        // The same value: ⌊a / 10¹⁸⌋ × 10⁹ + ⌊(a mod 10¹⁸) / 10⁹⌋ = ⌊a / 10⁹⌋ for a ≥ 0.
        let atto = attoseconds
        let high = atto >> 64
        if high >= 0, high < 1_000_000_000 {
            return Int64(clamping: (1_000_000_000 as UInt64).dividingFullWidth((UInt64(high), UInt64(truncatingIfNeeded: atto))).quotient)
        }
        let (seconds, attoseconds) = components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = ns.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}

extension ReplayFrame {
    /// The frame's API-call record; on a frame that carries none (not an `api-calls` frame, or one
    /// built by hand without ``apiCall``), a malformed record that says so.
    public func apiCallRecord() -> APICallRecord {
        apiCall ?? .malformed("frame \(number): no API-call record was read for it (an api-calls frame built by hand "
            + "needs apiCall: APICallRecord(parsing: bytes, frame: number))")
    }
}

extension APICallRecord {
    /// `bytes`, the body of an `api-calls` frame (one JSON object), as the engine reads it: the
    /// object's members, or why it is not one, naming frame `number`.
    public init(parsing bytes: RawSpan, frame number: Int) {
        self = bytes.withUnsafeBytes { raw in
            do throws(TraceFormatError) {
                return .parsed(try JSONLiteral.parseObject(raw, label: "frame \(number)"))
            } catch {
                return .malformed(error.description)
            }
        }
    }

    /// As ``init(parsing:frame:)``, the bytes held in an array.
    public init(parsing bytes: [UInt8], frame number: Int) {
        self = bytes.withUnsafeBytes { APICallRecord(parsing: RawSpan(_unsafeBytes: $0), frame: number) }
    }
}

/// An API call delivered at a chosen virtual instant, as if the app had made it then: what a test
/// drives a core with instead of (or besides) the recorded calls.
public struct ScheduledAPICall: Sendable, Hashable {
    /// Virtual time since the capture's first frame.
    public var at: Duration
    /// The core it is for.
    public var core: String
    /// The call's name, as an `api-calls` record's `call` (`send`, `update_application_context`…).
    public var call: String
    /// Its arguments: the record's other members (docs/capture-set.md lists each core's).
    public var arguments: [String: TraceValue]

    /// A call of `core`'s API at `at`.
    public init(at: Duration, core: String, call: String, arguments: [String: TraceValue] = [:]) {
        self.at = at
        self.core = core
        self.call = call
        self.arguments = arguments
    }

    /// The call as an `api-calls` record.
    public var record: [String: TraceValue] {
        var record = arguments
        record["call"] = .string(call)
        record["core"] = .string(core)
        return record
    }
}
