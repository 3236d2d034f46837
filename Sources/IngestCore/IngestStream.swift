/// The state of one open plugin stream (one source address and port), kept by ``IngestCore``.
///
/// Times are integer nanoseconds of the caller's `now`, so arithmetic on the hot path stays on
/// `Int64`; deadlines saturate instead of overflowing.
struct IngestStream: Sendable, Equatable {
    /// Number of inter-arrival intervals per learning window. The period is the median of a
    /// window, so one late datagram (a gap) does not skew it; windows do not overlap, so the
    /// median is computed once per window, not once per datagram.
    static let rateWindow = 8

    let source: DatagramSource
    let startNs: Int64
    var lastDatagramNs: Int64
    var lastSampleNs: Int64?
    /// What the stream knows of its sending rate, from its data datagrams' arrivals.
    var rate = RateLearning.noArrival
    /// Whether `pending` keeps the points or they are only counted (``IngestCore/keepsChunkPoints``).
    let keepsPoints: Bool
    /// Whether each point is reported as a `dataPoint` event (``IngestCore/reportsDataPoints``).
    let reportsPoints: Bool
    /// The chunk being filled, `nil` when none is: its flush deadline exists exactly when it does.
    var openChunk: OpenChunk?
    /// The open chunk's points when they are kept. A buffer rather than part of ``openChunk``: it
    /// outlives each chunk empty, with the room the last one had, so a steady stream's chunks are
    /// packed without growing (and, when points are not kept, one empty buffer serves every chunk).
    var pending = PackedDataPoints()
    var nextSequence = 1
    /// The key each entry of the last datagram packed into `pending` got there (valid for
    /// ``OpenChunk/packedLayout``): a buffer kept from datagram to datagram, not state.
    var packedKeys: [Int] = []

    init(source: DatagramSource, startNs: Int64, nowNs: Int64, keepsPoints: Bool = true, reportsPoints: Bool = true) {
        self.keepsPoints = keepsPoints
        self.reportsPoints = reportsPoints
        self.source = source
        self.startNs = startNs
        self.lastDatagramNs = nowNs
    }

    func idleDeadline(idleNs: Int64) -> Int64 {
        lastDatagramNs.addingSaturating(idleNs)
    }

    func flushDeadline(flushNs: Int64) -> Int64? {
        openChunk.map { $0.sinceNs.addingSaturating(flushNs) }
    }

    /// ``idleDeadline(idleNs:)`` and ``flushDeadline(flushNs:)``. Mutating though it changes
    /// nothing: the core asks a stream in its dictionary, where a non-mutating call copies the
    /// whole stream out (a retain and release of each of its arrays) and a mutating one reads it
    /// in place.
    mutating func deadlines(idleNs: Int64, flushNs: Int64) -> (idle: Int64, flush: Int64?) {
        (idleDeadline(idleNs: idleNs), flushDeadline(flushNs: flushNs))
    }

    /// Learns the period from a data datagram's arrival; returns a gap (the interval and the
    /// period it exceeded) and a newly learned period, if any.
    mutating func noteDataArrival(nowNs: Int64, gapFactor: Double) -> (gap: (Int64, Int64)?, learnedPeriodNs: Int64?) {
        let last: Int64
        var window: IntervalWindow
        var period: Int64?
        switch rate {
        case .noArrival:
            rate = .learning(lastArrivalNs: nowNs, window: IntervalWindow())
            return (nil, nil)
        case .learning(let lastArrivalNs, let current):
            (last, window, period) = (lastArrivalNs, current, nil)
        case .learned(let periodNs, let lastArrivalNs, let current):
            (last, window, period) = (lastArrivalNs, current, periodNs)
        }
        let interval = nowNs &- last
        var gap: (Int64, Int64)?
        if let period, Double(interval) > gapFactor * Double(period) {
            gap = (interval, period)
        }
        var learned: Int64?
        if let median = window.append(interval) {
            // Datagrams delivered in one batch share a `now`; a zero period says nothing about the rate.
            if median > 0, !(period.map { Double(abs(median - $0)) <= 0.2 * Double($0) } ?? false) {
                period = median
                learned = median
            }
        }
        if let period {
            rate = .learned(periodNs: period, lastArrivalNs: nowNs, window: window)
        } else {
            rate = .learning(lastArrivalNs: nowNs, window: window)
        }
        return (gap, learned)
    }

    /// One accepted data message, in the order ``IngestCore`` documents: `timeWentBackwards`, `gap`,
    /// `rateLearned`, one `dataPoint` per entry, then `chunkReady` when `flushBytes` is reached.
    /// `newPendingDeadline` is set when the points start a pending chunk (its flush deadline).
    mutating func receiveData(
        timeNs: Int64, datagram: ParsedDatagram, nowNs: Int64, configuration: IngestConfiguration, flushNs: Int64,
        counters: inout IngestCounters, sink: inout some IngestEventSink, newPendingDeadline: inout Int64?
    ) {
        if let previous = lastSampleNs, timeNs < previous {
            counters.timeWentBackwards += 1
            sink.append(.timeWentBackwards(source, previousNs: previous, currentNs: timeNs))
        }
        lastSampleNs = timeNs
        let (gap, learned) = noteDataArrival(nowNs: nowNs, gapFactor: configuration.gapFactor)
        if let (gapNs, periodNs) = gap {
            counters.gaps += 1
            sink.append(.gap(source, gapNs: gapNs, expectedPeriodNs: periodNs))
        }
        if let periodNs = learned {
            sink.append(.rateLearned(source, hertz: 1e9 / Double(periodNs)))
        }
        // Worked on as a local and stored back once: a few words, no allocation.
        var chunk: OpenChunk
        if let open = openChunk {
            chunk = open
        } else {
            chunk = OpenChunk(sinceNs: nowNs)
            newPendingDeadline = nowNs.addingSaturating(flushNs)
        }
        if reportsPoints { sink.appendDataPoints(of: datagram, source: source, timeNs: timeNs) }
        if !keepsPoints {
            // Each entry's range read in place: a copy of the entry retains and releases its texts.
            for i in datagram.entries.indices { chunk.bytes &+= datagram.entries[i].payload.count }
        } else if datagram.layoutIdentity != 0, datagram.layoutIdentity == chunk.packedLayout, packedKeys.count == datagram.entries.count {
            // Laid out as the datagram before it in this chunk: its keys are known.
            chunk.bytes &+= pending.append(timeNs: timeNs, definedKeys: packedKeys, entries: datagram.entries, payloads: datagram.payloadBytes)
        } else {
            packedKeys.removeAll(keepingCapacity: true)
            for i in datagram.entries.indices {
                // The entry is read in place: a copy of it would retain and release its two strings.
                chunk.bytes &+= datagram.withPayload(of: i) { payload in
                    packedKeys.append(pending.append(timeNs: timeNs, name: datagram.entries[i].name, type: datagram.entries[i].type,
                                                     payload: payload))
                    return payload.count
                }
            }
            chunk.packedLayout = datagram.layoutIdentity
        }
        chunk.count += datagram.entries.count
        openChunk = chunk
        counters.dataPoints += datagram.entries.count
        if chunk.bytes >= configuration.flushBytes, let ready = takeChunk() {
            counters.chunks += 1
            sink.append(.chunkReady(ready))
        }
    }

    /// Takes the pending points as the next chunk, or nil when nothing is pending.
    mutating func takeChunk() -> IngestChunk? {
        // A chunk opened by a data message without entries has nothing to hand on: it stays open.
        guard let open = openChunk, open.count > 0 else { return nil }
        let chunk: IngestChunk
        if keepsPoints {
            // The chunk takes the buffer; the next one starts with the room this one had, so a
            // steady stream's chunks are packed without growing.
            let room = pending.roomBytes
            pending.trimToSize()
            chunk = IngestChunk(source: source, streamStartNs: startNs, sequence: nextSequence,
                                packedPoints: pending, dataPointCount: open.count, byteCount: open.bytes)
            pending = PackedDataPoints()
            pending.reserveCapacity(room)
        } else {
            // Nothing was packed: the chunk shares the empty buffer, which stays for the next one
            // (a new empty buffer per chunk was an allocation per chunk).
            chunk = IngestChunk(source: source, streamStartNs: startNs, sequence: nextSequence,
                                packedPoints: pending, dataPointCount: open.count, byteCount: open.bytes)
        }
        nextSequence += 1
        openChunk = nil
        return chunk
    }
}

/// The chunk a stream is filling: from the first data message after the last chunk was taken
/// until the next is taken. One optional value, so a start time without a chunk (or points
/// without a start time) cannot be represented.
struct OpenChunk: Sendable, Equatable {
    /// Core time of its first data message: the flush deadline counts from here.
    let sinceNs: Int64
    /// Its points so far (0 only when its data messages had no entries).
    var count = 0
    /// The sum of its points' payload lengths.
    var bytes = 0
    /// The template layout (``ParsedDatagram/layoutIdentity``) of the last datagram packed into
    /// this chunk: a datagram of the same layout packs its points under the keys that one got
    /// (``IngestStream/packedKeys``) without comparing names (0: none packed yet).
    var packedLayout: UInt64 = 0

    init(sinceNs: Int64) {
        self.sinceNs = sinceNs
    }
}

/// What a stream knows of its sending rate. The period is re-learned, not only learned once: every
/// full window's median replaces it when it differs by more than 20 %.
enum RateLearning: Sendable, Equatable {
    /// No data message yet: no arrival to measure an interval from.
    case noArrival
    /// Arrivals measured, no period yet (no full window, or only windows with a zero median): no
    /// gap can be reported.
    case learning(lastArrivalNs: Int64, window: IntervalWindow)
    /// A period is known: longer intervals are gaps, and the window goes on measuring to re-learn it.
    case learned(periodNs: Int64, lastArrivalNs: Int64, window: IntervalWindow)

    /// The period learned, if any.
    var periodNs: Int64? {
        if case .learned(let periodNs, _, _) = self { return periodNs }
        return nil
    }
}

/// The intervals of one learning window (``IngestStream/rateWindow`` of them), held inline: the
/// window is carried in ``RateLearning``'s cases, and an inline value costs no heap buffer to keep
/// or to copy from case to case.
struct IntervalWindow: Sendable, Equatable {
    private var values = InlineArray<8, Int64>(repeating: 0)

    /// The same intervals so far (`InlineArray` has no `==` of its own; the slots past `count`
    /// are leftovers and do not count).
    static func == (a: IntervalWindow, b: IntervalWindow) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a.values[i] != b.values[i] { return false }
        return true
    }
    /// How many of `values` are filled.
    private(set) var count = 0

    init() {
        precondition(values.count == IngestStream.rateWindow, "IntervalWindow: holds \(values.count), a window is \(IngestStream.rateWindow)")
    }

    /// Adds an interval; when that fills the window, empties it and returns its median (the mean
    /// of the two middle values, each halved first so the sum cannot overflow).
    mutating func append(_ interval: Int64) -> Int64? {
        values[count] = interval
        count += 1
        guard count == IngestStream.rateWindow else { return nil }
        count = 0
        // An insertion sort: for eight values it costs a fraction of the general sort's setup.
        for i in 1..<IngestStream.rateWindow {
            let value = values[i]
            var j = i
            while j > 0, values[j - 1] > value {
                values[j] = values[j - 1]
                j -= 1
            }
            values[j] = value
        }
        let middle = IngestStream.rateWindow / 2
        return values[middle - 1] / 2 + values[middle] / 2
    }
}

extension Int64 {
    /// `self + other`, clamped to the representable range: deadlines far in the future stay far.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}

extension Duration {
    /// A time of at least zero as whole nanoseconds, clamped to `Int64`, by one 128-by-64-bit
    /// division of its attoseconds; `nil` for a negative one, or one of more than 2⁶⁴ ns
    /// (584 years). `components` divides in a 128-bit software integer, and it was asked
    /// several times per datagram. Equal to what `components` gives: ⌊a / 10¹⁸⌋ × 10⁹ +
    /// ⌊(a mod 10¹⁸) / 10⁹⌋ = ⌊a / 10⁹⌋ for a ≥ 0.
    package var nonNegativeNanoseconds: Int64? {
        let attoseconds = self.attoseconds
        let high = attoseconds >> 64
        guard high >= 0, high < 1_000_000_000 else { return nil }
        let quotient = (1_000_000_000 as UInt64).dividingFullWidth((UInt64(high), UInt64(truncatingIfNeeded: attoseconds))).quotient
        return Int64(clamping: quotient)
    }

    /// `.nanoseconds(nanoseconds)`, the same value, multiplied in the native 128-bit integer
    /// instead of the software one `.nanoseconds` uses (it cannot overflow: |ns| < 2⁶³, 10⁹ < 2³⁰).
    package init(exactNanoseconds nanoseconds: Int64) {
        self.init(attoseconds: Int128(nanoseconds) * 1_000_000_000)
    }

    /// Whole nanoseconds, clamped to `Int64`; attoseconds below a nanosecond are dropped.
    package var clampedNanoseconds: Int64 {
        if let nanoseconds = nonNegativeNanoseconds { return nanoseconds }
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds > 0 ? .max : .min }
        return scaled.addingSaturating(attoseconds / 1_000_000_000)
    }
}
