/// The state of one open plugin stream (one source address and port), kept by ``IngestCore``.
///
/// Times are integer nanoseconds of the caller's `now`, so arithmetic on the hot path stays on
/// `Int64`; deadlines saturate instead of overflowing.
struct IngestStream: Sendable {
    /// Number of inter-arrival intervals per learning window. The period is the median of a
    /// window, so one late datagram (a gap) does not skew it; windows do not overlap, so the
    /// median is computed once per window, not once per datagram.
    static let rateWindow = 8

    let source: DatagramSource
    let startNs: Int64
    var lastDatagramNs: Int64
    var lastDataArrivalNs: Int64?
    var lastSampleNs: Int64?
    var intervals: [Int64] = []
    var periodNs: Int64?
    /// Whether `pending` keeps the points or they are only counted (``IngestCore/keepsChunkPoints``).
    let keepsPoints: Bool
    /// Whether each point is reported as a `dataPoint` event (``IngestCore/reportsDataPoints``).
    let reportsPoints: Bool
    var pending = PackedDataPoints()
    var pendingCount = 0
    var pendingBytes = 0
    var pendingSinceNs: Int64?
    var nextSequence = 1
    /// The template layout (``ParsedDatagram/layoutIdentity``) of the last datagram packed into
    /// `pending`, and the key each of its entries got there: a datagram of the same layout packs
    /// its points under those keys without comparing names (0: none yet in this buffer).
    var packedLayout: UInt64 = 0
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
        pendingSinceNs.map { $0.addingSaturating(flushNs) }
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
        defer { lastDataArrivalNs = nowNs }
        guard let last = lastDataArrivalNs else { return (nil, nil) }
        let interval = nowNs &- last
        var gap: (Int64, Int64)?
        if let period = periodNs, Double(interval) > gapFactor * Double(period) {
            gap = (interval, period)
        }
        intervals.append(interval)
        guard intervals.count >= Self.rateWindow else { return (gap, nil) }
        Self.insertionSort(&intervals)
        let middle = Self.rateWindow / 2
        let median = intervals[middle - 1] / 2 + intervals[middle] / 2
        intervals.removeAll(keepingCapacity: true)
        // Datagrams delivered in one batch share a `now`; a zero period says nothing about the rate.
        guard median > 0 else { return (gap, nil) }
        if let period = periodNs, Double(abs(median - period)) <= 0.2 * Double(period) {
            return (gap, nil)
        }
        periodNs = median
        return (gap, median)
    }

    /// Sorts a learning window in place, ascending: for eight values an insertion sort costs a
    /// fraction of the general sort's setup.
    static func insertionSort(_ values: inout [Int64]) {
        values.withUnsafeMutableBufferPointer { values in
            for i in values.indices.dropFirst() {
                let value = values[i]
                var j = i
                while j > 0, values[j - 1] > value {
                    values[j] = values[j - 1]
                    j -= 1
                }
                values[j] = value
            }
        }
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
        if pendingSinceNs == nil {
            pendingSinceNs = nowNs
            newPendingDeadline = nowNs.addingSaturating(flushNs)
        }
        if reportsPoints { sink.appendDataPoints(of: datagram, source: source, timeNs: timeNs) }
        if !keepsPoints {
            // Each entry's range read in place: a copy of the entry retains and releases its texts.
            for i in datagram.entries.indices { pendingBytes &+= datagram.entries[i].payload.count }
        } else if datagram.layoutIdentity != 0, datagram.layoutIdentity == packedLayout, packedKeys.count == datagram.entries.count {
            // Laid out as the datagram before it in this chunk: its keys are known.
            pendingBytes &+= pending.append(timeNs: timeNs, definedKeys: packedKeys, entries: datagram.entries, payloads: datagram.payloadBytes)
        } else {
            packedKeys.removeAll(keepingCapacity: true)
            for i in datagram.entries.indices {
                // The entry is read in place: a copy of it would retain and release its two strings.
                pendingBytes &+= datagram.withPayload(of: i) { payload in
                    packedKeys.append(pending.append(timeNs: timeNs, name: datagram.entries[i].name, type: datagram.entries[i].type,
                                                     payload: payload))
                    return payload.count
                }
            }
            packedLayout = datagram.layoutIdentity
        }
        pendingCount += datagram.entries.count
        counters.dataPoints += datagram.entries.count
        if pendingBytes >= configuration.flushBytes, let chunk = takeChunk() {
            counters.chunks += 1
            sink.append(.chunkReady(chunk))
        }
    }

    /// Takes the pending points as the next chunk, or nil when nothing is pending.
    mutating func takeChunk() -> IngestChunk? {
        guard pendingCount > 0 else { return nil }
        let chunk: IngestChunk
        if keepsPoints {
            // The chunk takes the buffer; the next one starts with the room this one had, so a
            // steady stream's chunks are packed without growing.
            let room = pending.roomBytes
            pending.trimToSize()
            chunk = IngestChunk(source: source, streamStartNs: startNs, sequence: nextSequence,
                                packedPoints: pending, dataPointCount: pendingCount, byteCount: pendingBytes)
            pending = PackedDataPoints()
            pending.reserveCapacity(room)
        } else {
            // Nothing was packed: the chunk shares the empty buffer, which stays for the next one
            // (a new empty buffer per chunk was an allocation per chunk).
            chunk = IngestChunk(source: source, streamStartNs: startNs, sequence: nextSequence,
                                packedPoints: pending, dataPointCount: pendingCount, byteCount: pendingBytes)
        }
        nextSequence += 1
        packedLayout = 0
        pendingCount = 0
        pendingBytes = 0
        pendingSinceNs = nil
        return chunk
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
