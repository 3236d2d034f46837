/// The receiving side of Motion's plugin UDP protocol, without I/O: datagrams and time in, events out.
///
/// Give one input (``receive(_:from:now:)-(UnsafeRawBufferPointer,_,_)``, ``handleTimeout(now:)``,
/// ``finish(now:)``), carry out every returned `chunkReady`, record the other events, then ask
/// ``nextDeadline``. `now` is the caller's monotonic or virtual time and never decreases (a smaller
/// value is taken as the previous one). The core reads no clock.
///
/// Streams are keyed by source address and port. A stream starts with the first accepted message
/// from a source with no open stream, and ends with an end message, after ``IngestConfiguration/idleTimeout``
/// without an accepted message (at exactly the last one's `now` + idleTimeout), or at ``finish(now:)``.
/// A rejected datagram is counted and reported but touches no stream: it neither starts one nor
/// keeps one alive, because it is not a message.
///
/// Order of events in one call, always:
/// 1. Timers already due at `now` (``receive(_:from:now:)-(UnsafeRawBufferPointer,_,_)`` and
///    ``finish(now:)`` first do what ``handleTimeout(now:)`` would), in deadline order; at equal
///    deadlines a flush before an idle end, then by source. A flush gives `chunkReady`; an idle end
///    gives `chunkReady` (if points are pending) then `streamEnded(_, .idleTimeout)`.
/// 2. For a datagram: `rejected`; or `streamStarted` (if no stream was open), then for a data
///    message `timeWentBackwards`, `gap`, `rateLearned` (each if it applies), one `dataPoint` per
///    entry in entry order (unless ``reportsDataPoints`` is false), and `chunkReady` if the pending payload bytes reached
///    ``IngestConfiguration/flushBytes``; for a name `pluginName`; for a V1 message `legacyV1`;
///    for an end `endMessage`, `chunkReady` (if points are pending), `streamEnded(_, .endMessage)`.
/// 3. For ``finish(now:)``: per open stream in source order, `chunkReady` (if pending) then
///    `streamEnded(_, .finished)`.
///
/// A datagram's points always go into one chunk together, so a chunk may exceed `flushBytes` by
/// less than one datagram's payloads.
public struct IngestCore: Sendable {
    /// The limits this core was created with.
    public let configuration: IngestConfiguration
    /// Whether a chunk carries its points. When not, ``IngestChunk/dataPoints`` is empty and
    /// only counted (``IngestChunk/dataPointCount``, ``IngestChunk/byteCount``); every event,
    /// counter and deadline is the same. For a caller that records chunks but stores no points
    /// (replay's trace): keeping them was a copy of every point for nothing.
    public let keepsChunkPoints: Bool
    /// Whether each accepted point is reported as a `dataPoint` event. When not, those events are
    /// left out and every other event, counter, chunk and deadline is the same: for a caller that
    /// only stores chunks (the live server), making each point a value to throw it away was most
    /// of the core's cost per point.
    public let reportsDataPoints: Bool
    /// Running totals.
    public private(set) var counters = IngestCounters()

    private let idleNs: Int64
    private let flushNs: Int64
    private var streams: [DatagramSource: IngestStream] = [:]
    /// The last stream looked up and its index in `streams`: a replay or a plugin is mostly one
    /// stream, and hashing its source for every datagram cost more than the rest of the lookup.
    /// Inserting or removing a stream may move the others, so both forget it.
    private var lastLookup: (source: DatagramSource, index: Dictionary<DatagramSource, IngestStream>.Index)?
    private var lastNowNs: Int64 = .min
    private var lastStreamStartNs: Int64?
    /// No deadline of any stream is earlier than this (it may be earlier than the earliest one):
    /// lets a datagram skip the scan of all streams when nothing can be due.
    private var deadlineLowerBound: Int64?
    /// The earliest deadline of any open stream, exactly: what ``nextDeadline`` returns, worked
    /// out at the end of every call that changes a stream. Replay asks for it before every frame
    /// and after every timeout, more often than streams change, and working it out per question
    /// was a scan of the streams with a retain and release of their storage each time.
    private var earliestDeadline: Duration?
    /// The datagram parser, with what it reuses from one datagram to the next (entry names and
    /// types, the last data datagram's layout, the payload buffer).
    private var parser = DatagramParser()
    /// The room of the events one call hands to a caller's closure, kept from call to call.
    private var deferred: [IngestEvent] = []

    /// Whether `other` will do exactly what this core does from here on, given the same inputs:
    /// the same streams in the same state, and the same clock. Left out: the running totals
    /// (``counters``, which only the caller's summary reads), the parser's reused buffers, the
    /// last-lookup cache and the lower bound on deadlines (none changes an outcome, only how much
    /// work finding one takes), and the configuration (both cores are made from one). What a fault
    /// sweep asks of a variant and the run without its fault.
    public func hasSameState(as other: IngestCore) -> Bool {
        streams == other.streams && lastNowNs == other.lastNowNs && lastStreamStartNs == other.lastStreamStartNs
            && earliestDeadline == other.earliestDeadline && deferred == other.deferred
    }

    /// Creates a core with no open stream; `keepsChunkPoints` false leaves chunks without their
    /// points (see ``keepsChunkPoints``), `reportsDataPoints` false leaves out the `dataPoint`
    /// events (see ``reportsDataPoints``).
    public init(configuration: IngestConfiguration = .init(), keepsChunkPoints: Bool = true, reportsDataPoints: Bool = true) {
        self.configuration = configuration
        self.keepsChunkPoints = keepsChunkPoints
        self.reportsDataPoints = reportsDataPoints
        self.idleNs = configuration.idleTimeout.clampedNanoseconds
        self.flushNs = configuration.flushInterval.clampedNanoseconds
    }

    /// Takes one datagram (one message). The bytes are only read during the call.
    public mutating func receive(_ datagram: UnsafeRawBufferPointer, from source: DatagramSource, now: Duration) -> [IngestEvent] {
        var events: [IngestEvent] = []
        receive(datagram, from: source, now: now, into: &events)
        return events
    }

    /// Takes one datagram (one message), handing each event to `emit` in the documented order
    /// once the datagram is handled: a caller that handles events one by one (replay) then needs
    /// no array per datagram. `emit` must not use this core.
    public mutating func receive(_ datagram: UnsafeRawBufferPointer, from source: DatagramSource, now: Duration,
                                 emit: (IngestEvent) -> Void) {
        var sink = DeferredEventSink(events: takeDeferred())
        receive(datagram, from: source, now: now, into: &sink)
        handOver(&sink, point: { datagram, i, source, timeNs in
            emit(.dataPoint(DataPoint(source: source, timeNs: timeNs, name: datagram.entries[i].name, type: datagram.entries[i].type,
                                      value: datagram.entries[i].value, storedPayload: datagram.storedPayload(of: i))))
        }, emit: emit)
    }

    /// ``receive(_:from:now:emit:)`` with each accepted point handed to `dataPoint` as its parts
    /// (source, sample time, the entry's position, name, type, value) where `emit` would get a
    /// `dataPoint` event, in the same place in the order: for a caller that turns every point into
    /// something else (replay's trace event), making a ``DataPoint`` (its payload copied) and an
    /// event of it for each was most of the cost of a point. The payload is left out: the value
    /// holds it (``DataValue/bytes(_:)`` for a type without a decoding). Neither closure may use
    /// this core.
    public mutating func receive(
        _ datagram: UnsafeRawBufferPointer, from source: DatagramSource, now: Duration,
        dataPoint: (_ source: DatagramSource, _ timeNs: Int64, _ entry: EntryPosition, _ name: String, _ type: String,
                    _ value: DataValue) -> Void,
        emit: (IngestEvent) -> Void
    ) {
        var sink = DeferredEventSink(events: takeDeferred())
        receive(datagram, from: source, now: now, into: &sink)
        handOver(&sink, point: { datagram, i, source, timeNs in
            dataPoint(source, timeNs, EntryPosition(layout: datagram.layoutIdentity, index: i),
                      datagram.entries[i].name, datagram.entries[i].type, datagram.entries[i].value)
        }, emit: emit)
    }

    /// Hands one call's events over in their order, a data message's points in their place: each
    /// entry of the parsed datagram to `point` (with the points' source and sample time), every
    /// other event to `emit`; then keeps the sink's room for the next call.
    private mutating func handOver(_ sink: inout DeferredEventSink,
                                   point: (_ datagram: ParsedDatagram, _ entry: Int, _ source: DatagramSource, _ timeNs: Int64) -> Void,
                                   emit: (IngestEvent) -> Void) {
        // Events are read by index and entries in place, not copied out: a copy retains and
        // releases what it holds.
        for index in 0...sink.events.count {
            if index == sink.pointsAt, let points = sink.points {
                let datagram = parser.output
                for i in datagram.entries.indices { point(datagram, i, points.source, points.timeNs) }
            }
            if index < sink.events.count { emit(sink.events[index]) }
        }
        putBack(&sink.events)
    }

    private mutating func receive(_ datagram: UnsafeRawBufferPointer, from source: DatagramSource, now: Duration,
                                  into sink: inout some IngestEventSink) {
        defer { updateEarliestDeadline() }
        let nowNs = advance(to: now)
        counters.datagrams += 1
        guard datagram.count <= configuration.maxDatagramBytes else {
            fireDueTimers(nowNs: nowNs, into: &sink)
            reject(source, .oversize,
                   "\(datagram.count) bytes, more than the \(configuration.maxDatagramBytes)-byte limit; send one message per datagram",
                   into: &sink)
            return
        }
        // Parsing touches no stream, so it may go before the timers that are due (whose events
        // still come first).
        let rejection: MotionMessage.Rejection?
        do throws(MotionMessage.Rejection) {
            try parser.parse(datagram)
            rejection = nil
        } catch {
            rejection = error
        }
        let kind = parser.output.kind
        if rejection == nil, case .data = kind {
            // One dataPoint per entry plus a few stream and timer events: an array is sized once.
            sink.expect((reportsDataPoints ? parser.output.entries.count : 0) + 6)
        }
        fireDueTimers(nowNs: nowNs, into: &sink)
        if let rejection {
            reject(source, rejection.reason, rejection.detail, into: &sink)
            return
        }
        counters.accepted += 1

        let index: Dictionary<DatagramSource, IngestStream>.Index
        if let existing = streamIndex(of: source) {
            index = existing
        } else {
            index = startStream(source, nowNs: nowNs, into: &sink)
        }
        streams.values[index].lastDatagramNs = nowNs

        switch kind {
        case .data(let timeNs):
            receiveData(at: index, timeNs: timeNs, nowNs: nowNs, into: &sink)
        case .pluginName(let name):
            counters.nameMessages += 1
            sink.append(.pluginName(source, name))
        case .legacyV1(let timeNs, let payload):
            counters.legacyV1Messages += 1
            sink.append(.legacyV1(source, timeNs: timeNs, payload: payload))
        case .end:
            counters.endMessages += 1
            sink.append(.endMessage(source))
            endStream(at: index, cause: .endMessage, into: &sink)
        }
    }

    /// Takes one datagram (one message).
    public mutating func receive(_ datagram: [UInt8], from source: DatagramSource, now: Duration) -> [IngestEvent] {
        datagram.withUnsafeBytes { receive($0, from: source, now: now) }
    }

    /// Fires the timers due at `now`: flush deadlines and idle timeouts. An early call does nothing.
    public mutating func handleTimeout(now: Duration) -> [IngestEvent] {
        var events: [IngestEvent] = []
        fireDueTimers(nowNs: advance(to: now), into: &events)
        updateEarliestDeadline()
        return events
    }

    /// ``handleTimeout(now:)``, handing each event to `emit`. `emit` must not use this core.
    public mutating func handleTimeout(now: Duration, emit: (IngestEvent) -> Void) {
        var sink = DeferredEventSink(events: takeDeferred())
        fireDueTimers(nowNs: advance(to: now), into: &sink)
        updateEarliestDeadline()
        // Timers make no points.
        handOver(&sink, point: { _, _, _, _ in }, emit: emit)
    }

    /// When to call ``handleTimeout(now:)`` next: the earliest flush deadline or idle timeout of
    /// any open stream, exactly; nil when no stream is open.
    public var nextDeadline: Duration? {
        earliestDeadline
    }

    /// Fires due timers, then flushes every pending chunk and ends every open stream with
    /// ``StreamEndCause/finished``. The core stays usable: a later datagram starts a new stream.
    public mutating func finish(now: Duration) -> [IngestEvent] {
        let nowNs = advance(to: now)
        var events: [IngestEvent] = []
        fireDueTimers(nowNs: nowNs, into: &events)
        for source in streams.keys.sorted() {
            guard let index = streams.index(forKey: source) else { continue }
            endStream(at: index, cause: .finished, into: &events)
        }
        deadlineLowerBound = nil
        updateEarliestDeadline()
        return events
    }

    // MARK: Steps

    /// The buffer of ``deferred``, left empty in its place.
    private mutating func takeDeferred() -> [IngestEvent] {
        var events: [IngestEvent] = []
        swap(&events, &deferred)
        return events
    }

    /// Empties `events` and keeps its room as ``deferred`` for the next call.
    private mutating func putBack(_ events: inout [IngestEvent]) {
        // One by one: a call holds a handful, and `removeAll(keepingCapacity:)` went through the
        // general `replaceSubrange`, which cost more than the items.
        while !events.isEmpty { events.removeLast() }
        swap(&events, &deferred)
    }

    private mutating func advance(to now: Duration) -> Int64 {
        lastNowNs = max(lastNowNs, now.clampedNanoseconds)
        return lastNowNs
    }

    private mutating func reject(_ source: DatagramSource, _ reason: RejectionReason, _ detail: String, into sink: inout some IngestEventSink) {
        counters.rejectedByReason[reason, default: 0] += 1
        sink.append(.rejected(source, reason, detail: detail))
    }

    /// The index of the open stream of `source`, if any.
    private mutating func streamIndex(of source: DatagramSource) -> Dictionary<DatagramSource, IngestStream>.Index? {
        if let last = lastLookup, last.source == source { return last.index }
        guard let index = streams.index(forKey: source) else { return nil }
        lastLookup = (source, index)
        return index
    }

    private mutating func startStream(_ source: DatagramSource, nowNs: Int64, into sink: inout some IngestEventSink) -> Dictionary<DatagramSource, IngestStream>.Index {
        // Two streams of one source may start in the same nanosecond (an end, then a new message
        // in one batch); the start time identifies a stream, so it must differ.
        let startNs = lastStreamStartNs.map { max(nowNs, $0.addingSaturating(1)) } ?? nowNs
        lastStreamStartNs = startNs
        lastLookup = nil
        streams[source] = IngestStream(source: source, startNs: startNs, nowNs: nowNs, keepsPoints: keepsChunkPoints,
                                       reportsPoints: reportsDataPoints)
        lowerDeadlineBound(to: nowNs.addingSaturating(idleNs))
        counters.streamsStarted += 1
        sink.append(.streamStarted(source))
        guard let index = streams.index(forKey: source) else {
            preconditionFailure("IngestCore: stream \(source) vanished right after it was inserted")
        }
        return index
    }

    private mutating func receiveData(at index: Dictionary<DatagramSource, IngestStream>.Index, timeNs: Int64,
                                      nowNs: Int64, into sink: inout some IngestEventSink) {
        // The stream is worked on in place: reading `streams.values[index].x` copies the whole
        // stream (its pending points included) for every field read.
        var lowerBound: Int64?
        streams.values[index].receiveData(
            timeNs: timeNs, datagram: parser.output, nowNs: nowNs, configuration: configuration, flushNs: flushNs,
            counters: &counters, sink: &sink, newPendingDeadline: &lowerBound)
        if let lowerBound { lowerDeadlineBound(to: lowerBound) }
    }

    private mutating func endStream(at index: Dictionary<DatagramSource, IngestStream>.Index, cause: StreamEndCause, into sink: inout some IngestEventSink) {
        if let chunk = streams.values[index].takeChunk() {
            counters.chunks += 1
            sink.append(.chunkReady(chunk))
        }
        let source = streams.values[index].source
        lastLookup = nil
        streams.remove(at: index)
        counters.streamsEnded += 1
        sink.append(.streamEnded(source, cause))
    }

    /// Sets ``earliestDeadline`` from the streams as they are now.
    private mutating func updateEarliestDeadline() {
        // Walked by index, not over `streams.indices`: that view holds the dictionary's storage,
        // and changing a stream in place while it does copies the whole dictionary.
        var earliest: Int64?
        var index = streams.startIndex
        while index != streams.endIndex {
            let (idle, flush) = streams.values[index].deadlines(idleNs: idleNs, flushNs: flushNs)
            let deadline = flush.map { min($0, idle) } ?? idle
            earliest = min(earliest ?? deadline, deadline)
            index = streams.index(after: index)
        }
        // Made a `Duration` here, once per change, rather than per question: it multiplies in 128 bits.
        earliestDeadline = earliest.map { Duration(exactNanoseconds: $0) }
    }

    private mutating func lowerDeadlineBound(to deadline: Int64) {
        deadlineLowerBound = min(deadlineLowerBound ?? deadline, deadline)
    }

    private mutating func fireDueTimers(nowNs: Int64, into sink: inout some IngestEventSink) {
        guard let bound = deadlineLowerBound, bound <= nowNs else { return }
        if streams.count == 1 {
            // One stream, the usual case: nothing to sort. When its flush and its idle end are
            // both due, the end alone gives the same events in either order (it takes the chunk
            // the flush would have taken, then ends the stream).
            let index = streams.startIndex
            let (idle, flush) = streams.values[index].deadlines(idleNs: idleNs, flushNs: flushNs)
            var earliestLeft: Int64?
            if let flush, flush > nowNs { earliestLeft = flush }
            if idle > nowNs { earliestLeft = min(earliestLeft ?? idle, idle) }
            if idle <= nowNs {
                endStream(at: index, cause: .idleTimeout, into: &sink)
            } else if let flush, flush <= nowNs, let chunk = streams.values[index].takeChunk() {
                counters.chunks += 1
                sink.append(.chunkReady(chunk))
            }
            deadlineLowerBound = earliestLeft
            return
        }
        // Kind 0 (flush) sorts before kind 1 (idle end) at equal deadlines.
        var due: [(deadline: Int64, kind: Int, source: DatagramSource)] = []
        var earliestLeft: Int64?
        for stream in streams.values {
            let idle = stream.idleDeadline(idleNs: idleNs)
            if let flush = stream.flushDeadline(flushNs: flushNs) {
                if flush <= nowNs {
                    due.append((flush, 0, stream.source))
                } else {
                    earliestLeft = min(earliestLeft ?? flush, flush)
                }
            }
            if idle <= nowNs {
                due.append((idle, 1, stream.source))
            } else {
                earliestLeft = min(earliestLeft ?? idle, idle)
            }
        }
        due.sort { ($0.deadline, $0.kind, $0.source) < ($1.deadline, $1.kind, $1.source) }
        for item in due {
            guard let index = streams.index(forKey: item.source) else { continue }
            if item.kind == 0 {
                if let chunk = streams.values[index].takeChunk() {
                    counters.chunks += 1
                    sink.append(.chunkReady(chunk))
                }
            } else {
                endStream(at: index, cause: .idleTimeout, into: &sink)
            }
        }
        deadlineLowerBound = earliestLeft
    }
}

/// Where the core's internals put events: an array (the array-returning API) or a caller's
/// closure. Generic rather than a closure throughout, so the array form is appended to directly
/// and sized once per datagram.
protocol IngestEventSink {
    /// About `count` more events are coming.
    mutating func expect(_ count: Int)
    mutating func append(_ event: IngestEvent)
    /// The points of the data message `datagram` from `source`, one per entry in entry order.
    mutating func appendDataPoints(of datagram: ParsedDatagram, source: DatagramSource, timeNs: Int64)
}

extension IngestEventSink {
    /// One `dataPoint` event per entry.
    mutating func appendDataPoints(of datagram: ParsedDatagram, source: DatagramSource, timeNs: Int64) {
        for i in datagram.entries.indices {
            let point = DataPoint(source: source, timeNs: timeNs, name: datagram.entries[i].name, type: datagram.entries[i].type,
                                  value: datagram.entries[i].value, storedPayload: datagram.storedPayload(of: i))
            append(.dataPoint(point))
        }
    }
}

extension Array: IngestEventSink where Element == IngestEvent {
    mutating func expect(_ count: Int) { reserveCapacity(self.count + count) }
}

/// Holds one call's events until the core is done with them, for the forms that hand events to a
/// caller's closures: a sink that held the closures themselves needed `withoutActuallyEscaping`,
/// an allocation (and a check) per call. A data message's points are not held as events: the sink
/// notes where in the order they go, and they are handed over from the parser's entries
/// (``DatagramParser/output``), so the usual datagram, points alone, puts nothing in the array.
struct DeferredEventSink: IngestEventSink {
    var events: [IngestEvent]
    /// The source and sample time of the data message's points, when it had any.
    var points: (source: DatagramSource, timeNs: Int64)?
    /// The points go before `events[pointsAt]` (after every event, when it is `events.count`).
    var pointsAt = 0

    func expect(_ count: Int) {}
    mutating func append(_ event: IngestEvent) { events.append(event) }
    mutating func appendDataPoints(of datagram: ParsedDatagram, source: DatagramSource, timeNs: Int64) {
        points = (source, timeNs)
        pointsAt = events.count
    }
}
