import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import IngestCore

/// Replays captured UDP datagrams into ``IngestCore`` and writes what it does as `ingest` trace
/// events.
///
/// It takes the frames of every interface whose manifest role is `ingest-udp`, and of every
/// IP-carrying interface the manifest does not describe (a bare imported capture). Of those it
/// feeds each UDP datagram whose destination port is the ingest port — the interface's
/// `ingest_port`, else ``defaultPort`` (12345); ``portOverride`` replaces both — with the IP
/// source address and port as the ``DatagramSource``.
///
/// Trace events (every one has `source` but `summary` and `frame_malformed`):
/// `datapoint` {name, type, time_ns, value | bytes}, `rejected` {reason, detail}, `plugin_name`
/// {name}, `end_message`, `legacy_v1` {bytes, time_ns?}, `stream_start`, `stream_end` {cause},
/// `rate` {hz}, `time_backwards` {previous_ns, current_ns}, `gap` {gap_ns, expected_period_ns},
/// `chunk` {sequence, points, bytes}, `frame_malformed` {frame, detail}, and one `summary` at the end.
public struct IngestAdapter: CoreAdapter {
    /// The port Motion listens on unless configured otherwise.
    public static let standardPort: UInt16 = 12345

    /// Always `ingest`.
    public let core = IngestTrace.core
    /// The core under test.
    public private(set) var ingest: IngestCore
    /// The ingest port for an `ingest-udp` interface that names none, or an undescribed one.
    public var defaultPort: UInt16
    /// When set, the ingest port on every interface.
    public var portOverride: UInt16?

    private var extractor = UDPExtractor()
    private var otherPortDatagrams = 0
    private var notUDPFrames = 0
    private var malformedFrames = 0
    private var lastSource: DatagramSource?
    private var lastSourceAddress: IPAddress?
    private var eventCache = TraceEventCache()
    /// The ingest port of the interface the last frame came on. An interface's parameters are
    /// fixed for a run (the engine describes each interface once), and reading the port from them
    /// per frame (a dictionary lookup and a text parse) was 4 % of a plugin replay.
    private var lastPort: (interface: Int, port: UInt16)?

    /// An adapter around a fresh ``IngestCore``. The core keeps no points in its chunks: a
    /// `chunk` event records only their count and bytes.
    public init(configuration: IngestConfiguration = .init(), defaultPort: UInt16 = IngestAdapter.standardPort, portOverride: UInt16? = nil) {
        self.ingest = IngestCore(configuration: configuration, keepsChunkPoints: false)
        self.defaultPort = defaultPort
        self.portOverride = portOverride
    }

    /// The core's defaults with every field `overrides` sets replaced.
    public static func configuration(applying overrides: IngestOverrides?, to base: IngestConfiguration = .init()) -> IngestConfiguration {
        var configuration = base
        guard let overrides else { return configuration }
        if let ms = overrides.idleTimeoutMs { configuration.idleTimeout = .milliseconds(ms) }
        if let ms = overrides.flushIntervalMs { configuration.flushInterval = .milliseconds(ms) }
        if let bytes = overrides.flushBytes { configuration.flushBytes = bytes }
        return configuration
    }

    /// Link types that can carry IP, which an undescribed interface is taken to be UDP-capable by.
    static let ipLinkTypes: Set<LinkType> = [.ethernet, .linuxSLL, .linuxSLL2, .raw, .ipv4, .ipv6, .null, .loop]

    /// Raw bytes of `ingest-udp` interfaces and of undescribed IP interfaces; nothing else.
    public func input(for interface: ReplayInterface) -> ReplayInput {
        if let role = interface.role { return role == .ingestUDP ? .raw : .ignore }
        return Self.ipLinkTypes.contains(interface.linkType) ? .raw : .ignore
    }

    /// Extracts the frame's UDP datagram and, if it is for the ingest port, feeds it to the core.
    public mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        self.frame(frame, bytes: bytes, now: now) { events.append($0) }
        return events
    }

    /// ``frame(_:bytes:now:)``, each event handed to `emit` as it is made.
    public mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration, emit: (TraceEvent) -> Void) {
        bytes.withUnsafeBytes { receive(frame, bytes: $0, now: now, emit: emit) }
    }

    /// The frame's datagram, read in place from `bytes`, to the core.
    private mutating func receive(_ frame: ReplayFrame, bytes: UnsafeRawBufferPointer, now: Duration, emit: (TraceEvent) -> Void) {
        let port = portOverride ?? ingestPort(of: frame.interface)
        // The payload is read where it lies in the frame, not copied out of it.
        let (extraction, payloadRange) = extractor.datagramInPlace(from: bytes, linkType: frame.interface.linkType)
        switch extraction {
        case .datagram(let datagram):
            guard datagram.destinationPort == port else {
                otherPortDatagrams += 1
                return
            }
            let source = datagramSource(datagram)
            if let payloadRange {
                receive(UnsafeRawBufferPointer(rebasing: bytes[payloadRange]), from: source, now: now, emit: emit)
            } else {
                datagram.payload.withUnsafeBytes { receive($0, from: source, now: now, emit: emit) }
            }
        case .fragmentPending:
            return
        case .notUDP:
            notUDPFrames += 1
        case .malformed(let problem):
            malformedFrames += 1
            emit(TraceEvent(timeNs: now.replayNanoseconds, core: core, event: IngestTrace.frameMalformed,
                            fields: ["frame": .int(Int64(frame.number)), "detail": .string(problem.description)]))
        }
    }

    /// One datagram's payload into the core, its events made trace events.
    private mutating func receive(_ payload: UnsafeRawBufferPointer, from source: DatagramSource, now: Duration, emit: (TraceEvent) -> Void) {
        // The cache is taken out for the call: the closures may not touch `self` while the
        // core (part of `self`) is being changed. The datagram's points are all from `source`,
        // so its text is looked up once for them.
        let t = now.replayNanoseconds
        let sourceName = eventCache.sourceName(source)
        // Read once here, not per point inside the closure (a static's accessor is a call).
        let core = IngestTrace.core, dataPoint = IngestTrace.dataPoint
        var cache = takeEventCache()
        ingest.receive(payload, from: source, now: now, dataPoint: { pointSource, timeNs, entry, name, type, value in
            // Made in the call to `emit`, not returned from a function with two ways out: the
            // event was then copied whole into the call, stalling on the stores that made it.
            if pointSource == source, let sourceName, let traced = Self.traceValue(value),
               let texts = cache.entryNames(entry, name: name, type: type) {
                emit(TraceEvent(timeNs: t, core: core, event: dataPoint, dataPoint: DataPointFields(
                    source: sourceName, name: texts.name, type: texts.type, timeNs: timeNs, value: traced)))
            } else {
                emit(Self.dataPointEvent(source: cache.sourceText(pointSource), timeNs: timeNs, name: name, type: type, value: value, at: t))
            }
        }, emit: { emit(Self.traceEvent($0, timeNs: t, cache: &cache)) })
        eventCache = consume cache
    }

    /// ``eventCache``, left empty in its place: moved out, not copied (a copy retains and releases
    /// what it holds, per frame).
    private mutating func takeEventCache() -> TraceEventCache {
        var cache = TraceEventCache()
        swap(&cache, &eventCache)
        return cache
    }

    /// The interface's `ingest_port`, else ``defaultPort``; see ``lastPort``.
    private mutating func ingestPort(of interface: ReplayInterface) -> UInt16 {
        if let lastPort, lastPort.interface == interface.index { return lastPort.port }
        let port = interface.parameter("ingest_port", as: UInt16.self) ?? defaultPort
        lastPort = (interface.index, port)
        return port
    }

    /// The datagram's sender as the core keys it. The address text is made once per sender, not
    /// once per datagram: a replay is mostly one stream.
    private mutating func datagramSource(_ datagram: UDPDatagram) -> DatagramSource {
        if let last = lastSource, last.port == datagram.sourcePort, lastSourceAddress == datagram.sourceAddress {
            return last
        }
        let source = DatagramSource(address: datagram.sourceAddress.description, port: datagram.sourcePort)
        lastSource = source
        lastSourceAddress = datagram.sourceAddress
        return source
    }

    /// The core's next flush or idle deadline.
    public var nextDeadline: Duration? { ingest.nextDeadline }

    /// Faults reach the ingest core only through the frames the engine feeds it: a copy takes a
    /// variant's faults with nothing to change (``CoreAdapter/adoptFaults(_:)``).
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool { true }

    /// The core's state and the adapter's own: its fragments, the port and source it last saw.
    /// Left out: the counts of frames it did not take, which only its summary reports, and the
    /// events' text cache.
    public func hasSameState(as other: any CoreAdapter) -> Bool {
        guard let other = other as? IngestAdapter else { return false }
        return ingest.hasSameState(as: other.ingest) && extractor.hasSameState(as: other.extractor)
            && defaultPort == other.defaultPort && portOverride == other.portOverride
            && lastSource == other.lastSource && lastSourceAddress == other.lastSourceAddress
            && lastPort?.interface == other.lastPort?.interface && lastPort?.port == other.lastPort?.port
    }

    /// Lets the core flush and end idle streams.
    public mutating func timeout(now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        timeout(now: now) { events.append($0) }
        return events
    }

    /// ``timeout(now:)``, each event handed to `emit` as it is made.
    public mutating func timeout(now: Duration, emit: (TraceEvent) -> Void) {
        let t = now.replayNanoseconds
        var cache = takeEventCache()
        ingest.handleTimeout(now: now) { emit(Self.traceEvent($0, timeNs: t, cache: &cache)) }
        eventCache = consume cache
    }

    /// Ends every open stream, then writes the `summary` event.
    public mutating func finish(now: Duration) -> [TraceEvent] {
        var events = trace(ingest.finish(now: now), now: now)
        events.append(summaryEvent(now: now))
        return events
    }

    /// The closing `summary` event: the core's counters and what the adapter skipped.
    func summaryEvent(now: Duration) -> TraceEvent {
        let c = ingest.counters
        var byReason: [String: TraceValue] = [:]
        for (reason, count) in c.rejectedByReason where count > 0 { byReason[reason.rawValue] = .int(Int64(count)) }
        return TraceEvent(timeNs: now.replayNanoseconds, core: core, event: .summary, fields: [
            "datagrams": .int(Int64(c.datagrams)),
            "accepted": .int(Int64(c.accepted)),
            "rejected": .int(Int64(c.rejected)),
            "rejected_by_reason": .object(byReason),
            "datapoints": .int(Int64(c.dataPoints)),
            "legacy_v1": .int(Int64(c.legacyV1Messages)),
            "name_messages": .int(Int64(c.nameMessages)),
            "end_messages": .int(Int64(c.endMessages)),
            "streams": .int(Int64(c.streamsStarted)),
            "streams_ended": .int(Int64(c.streamsEnded)),
            "chunks": .int(Int64(c.chunks)),
            "time_backwards": .int(Int64(c.timeWentBackwards)),
            "gaps": .int(Int64(c.gaps)),
            "other_port_datagrams": .int(Int64(otherPortDatagrams)),
            "not_udp_frames": .int(Int64(notUDPFrames)),
            "malformed_frames": .int(Int64(malformedFrames)),
        ])
    }

    /// Maps core events to trace events, in the order the core returned them.
    mutating func trace(_ events: [IngestEvent], now: Duration) -> [TraceEvent] {
        let t = now.replayNanoseconds
        var out: [TraceEvent] = []
        out.reserveCapacity(events.count)
        for event in events { out.append(Self.traceEvent(event, timeNs: t, cache: &eventCache)) }
        return out
    }

    /// One core event as a trace event at `timeNs`.
    public static func traceEvent(_ event: IngestEvent, timeNs t: Int64) -> TraceEvent {
        var cache = TraceEventCache()
        return traceEvent(event, timeNs: t, cache: &cache)
    }

    /// What makes the events of nearly every line cheap: the last source's `description`
    /// (formatting the address per event cost more than the rest of the event), and the interned
    /// texts of the entries of the last few layouts the core read (three strings a point were six
    /// reference counts as its event was made and dropped).
    struct TraceEventCache {
        private var source: DatagramSource?
        private var text = ""
        /// `text` interned; `nil` when the name table took no more field texts.
        private var name: TraceName?
        /// The entries' texts of up to ``layoutCapacity`` layouts (``EntryPosition/layout``),
        /// each filled as its entries are first seen; `nil` for an entry not seen yet (a refused text is not kept).
        private var layouts: [(layout: UInt64, entries: [(name: TraceName, type: TraceName)?])] = []
        /// The slot of `layouts` used last, tried first; the next one replaced when full.
        private var lastLayout = 0
        private var nextReplaced = 0
        /// As many as the parser keeps (a plugin interleaving a few kinds of message).
        static let layoutCapacity = 4

        mutating func sourceText(_ source: DatagramSource) -> String {
            if source != self.source {
                self.source = source
                text = source.description
                name = TraceName(fieldText: text)
            }
            return text
        }

        /// The source's text interned, `nil` when the name table took no more.
        mutating func sourceName(_ source: DatagramSource) -> TraceName? {
            _ = sourceText(source)
            return name
        }

        /// The interned name and type of the entry at `entry`, which are `name` and `type`;
        /// `nil` when the name table took no more field texts.
        @inline(__always)
        mutating func entryNames(_ entry: EntryPosition, name: String, type: String) -> (name: TraceName, type: TraceName)? {
            if entry.layout != 0, lastLayout < layouts.count, layouts[lastLayout].layout == entry.layout,
               entry.index < layouts[lastLayout].entries.count, let texts = layouts[lastLayout].entries[entry.index] {
                return texts
            }
            return enterNames(entry, name: name, type: type)
        }

        /// ``entryNames(_:name:type:)`` when the last layout does not hold them: found in another
        /// slot, or interned and kept.
        private mutating func enterNames(_ entry: EntryPosition, name: String, type: String) -> (name: TraceName, type: TraceName)? {
            var slot = entry.layout == 0 ? -1 : layouts.firstIndex { $0.layout == entry.layout } ?? -1
            if slot >= 0, entry.index < layouts[slot].entries.count, let texts = layouts[slot].entries[entry.index] {
                lastLayout = slot
                return texts
            }
            guard let interned = TraceName(fieldText: name), let internedType = TraceName(fieldText: type) else { return nil }
            let texts = (name: interned, type: internedType)
            guard entry.layout != 0 else { return texts }
            if slot < 0 {
                if layouts.count < Self.layoutCapacity {
                    layouts.append((entry.layout, []))
                    slot = layouts.count - 1
                } else {
                    slot = nextReplaced
                    nextReplaced = (nextReplaced + 1) % Self.layoutCapacity
                    layouts[slot] = (entry.layout, [])
                }
            }
            lastLayout = slot
            if layouts[slot].entries.count <= entry.index {
                layouts[slot].entries.append(contentsOf: repeatElement(nil, count: entry.index + 1 - layouts[slot].entries.count))
            }
            layouts[slot].entries[entry.index] = texts
            return texts
        }
    }

    /// A datapoint's and a chunk's fields are held inline; every other event holds the core's own
    /// event and its source's text (``IngestEventFields``), so no event builds a dictionary.
    static func traceEvent(_ event: IngestEvent, timeNs t: Int64, cache: inout TraceEventCache) -> TraceEvent {
        func make(_ name: TraceName, _ source: DatagramSource, _ fields: IngestEventFields.Event) -> TraceEvent {
            TraceEvent(timeNs: t, core: IngestTrace.core, event: name,
                       payload: IngestEventFields(event: fields, source: cache.sourceText(source)))
        }
        switch event {
        case .dataPoint(let point):
            return dataPointEvent(source: cache.sourceText(point.source), timeNs: point.timeNs, name: point.name, type: point.type,
                                  value: point.value, at: t)
        case let .pluginName(source, name): return make(IngestTrace.pluginName, source, .pluginName(name))
        case .endMessage(let source): return make(IngestTrace.endMessage, source, .endMessage)
        case let .legacyV1(source, timeNs, payload): return make(IngestTrace.legacyV1, source, .legacyV1(timeNs: timeNs, payload: payload))
        case let .rejected(source, reason, detail): return make(IngestTrace.rejected, source, .rejected(reason, detail: detail))
        case .streamStarted(let source): return make(IngestTrace.streamStart, source, .streamStarted)
        case let .streamEnded(source, cause): return make(IngestTrace.streamEnd, source, .streamEnded(cause))
        case let .rateLearned(source, hertz): return make(IngestTrace.rate, source, .rateLearned(hertz: hertz))
        case let .timeWentBackwards(source, previousNs, currentNs):
            return make(IngestTrace.timeBackwards, source, .timeWentBackwards(previousNs: previousNs, currentNs: currentNs))
        case let .gap(source, gapNs, expectedPeriodNs):
            return make(IngestTrace.gap, source, .gap(gapNs: gapNs, expectedPeriodNs: expectedPeriodNs))
        case .chunkReady(let chunk):
            return TraceEvent(timeNs: t, core: IngestTrace.core, event: IngestTrace.chunk, chunk: ChunkFields(
                source: cache.sourceText(chunk.source), sequence: Int64(chunk.sequence), points: Int64(chunk.dataPointCount),
                bytes: Int64(chunk.byteCount)))
        }
    }

    /// The `datapoint` event at `t` of a point from the source whose text is `source`: its fields
    /// held inline, but for an opaque value (`bytes` instead of `value`) and for texts the name
    /// table no longer takes, built by key.
    static func dataPointEvent(source: String, timeNs: Int64, name: String, type: String, value: DataValue, at t: Int64) -> TraceEvent {
        if let traced = traceValue(value),
           let point = DataPointFields(interningSource: source, name: name, type: type, timeNs: timeNs, value: traced) {
            return TraceEvent(timeNs: t, core: IngestTrace.core, event: IngestTrace.dataPoint, dataPoint: point)
        }
        var fields = [String: TraceValue](minimumCapacity: 5)
        fields["source"] = .string(source)
        fields["name"] = .string(name)
        fields["type"] = .string(type)
        fields["time_ns"] = .int(timeNs)
        if let traced = traceValue(value) {
            fields["value"] = traced
        } else if case .bytes(let b) = value {
            fields["bytes"] = .string(hex(b))
        }
        return TraceEvent(timeNs: t, core: IngestTrace.core, event: IngestTrace.dataPoint, fields: fields)
    }

    /// A point's `value` field; `nil` for an opaque value, which is written as `bytes` instead.
    @inline(__always)
    static func traceValue(_ value: DataValue) -> TraceValue? {
        switch value {
        case .float64(let x): return .double(x)
        case .int64(let i): return .int(i)
        case .vector2D(let x, let y): return .array([.double(x), .double(y)])
        case .vector3D(let x, let y, let z): return .array([.double(x), .double(y), .double(z)])
        case .string(let s): return .string(s)
        case .bytes: return nil
        }
    }

    /// Rounded to 3 decimals, so float noise in a learned rate does not churn baselines.
    static func roundedToMillis(_ x: Double) -> Double {
        guard x.isFinite else { return x }
        return (x * 1000).rounded(.toNearestOrAwayFromZero) / 1000
    }

    static func hex(_ bytes: [UInt8]) -> String { JSONLiteral.hex(bytes) }
}
