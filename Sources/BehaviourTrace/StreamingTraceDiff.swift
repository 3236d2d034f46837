/// ``TraceDiff/compare(_:_:timingToleranceNs:ignoringFields:keyFields:)`` over two traces that
/// arrive an event at a time (a baseline file read alongside a replay), in memory bounded by a
/// window instead of the traces' length.
///
/// While the two traces agree, each pair is matched (and checked for timing) as it arrives and
/// forgotten: that is the common prefix `compare` trims first. From the first difference on, the
/// events of both sides are kept until the end, and then compared exactly as `compare` compares
/// them. So **the report is identical to `compare`'s whenever, from the first difference on,
/// neither trace has more than `window` events left** — every run that matches its baseline, and
/// every run that differs only near its end.
///
/// When a region of differences outgrows the window (a difference early in a long trace), the
/// buffered events are aligned as `compare` would align them, and everything up to the last
/// aligned pair is reported and dropped; the rest is kept and the comparison goes on (back to
/// pair-by-pair once the two sides agree again). An alignment that leaves more than three
/// quarters of the window unsettled is reported whole. The price of the bound: an event removed
/// in one place and inserted more than about `window` events away is reported as missing and
/// extra rather than as moved, and a run of more than three quarters of a window of differences
/// may align differently from `compare`'s.
///
/// The report keeps the first `keptDifferences` differences as entries; past that, the exact
/// count of each kind and the lines its rendering shows (up to `lineBudget`), so that
/// ``TraceDiffReport/render(maxLines:)``, ``TraceDiffReport/countsLine`` and
/// ``TraceDiffReport/isEmpty`` stay what `compare`'s report gives while memory stays bounded
/// however many differences there are.
public struct StreamingTraceDiff {
    /// Events kept per side from the first difference on before a region is settled.
    public static let defaultWindow = 8192
    /// Differences kept as entries of the report before only counts and lines are kept.
    public static let defaultKeptDifferences = 4096

    /// The bound on each side's kept events.
    public let window: Int
    /// Fields left out of identity and of change detection.
    public let ignoringFields: Set<String>
    /// Fields that pair a removed and an added event as one changed event.
    public let keyFields: [String]
    /// How many differences the report keeps as entries; past that, it keeps their counts and
    /// the first `lineBudget` lines of its rendering (``TraceDiffReport/digest``).
    public let keptDifferences: Int
    /// The lines of the rendering kept past `keptDifferences`: ``TraceDiffReport/render(maxLines:)``
    /// is exact for `maxLines` up to this + 1.
    public let lineBudget: Int
    /// Events of A (the baseline) received so far.
    public private(set) var countA = 0
    /// Events of B (the new run) received so far.
    public private(set) var countB = 0
    private var report: TraceDiffReport
    /// Events not settled yet, each side in order; `a[0]` is A's event number `countA - a.count`.
    private var a = PendingEvents()
    private var b = PendingEvents()
    private var differences = 0
    private var digest = TraceDiffReport.Digest()
    private var collector: TraceDiffReport.LineCollector

    /// A comparison that has seen no event yet; the first parameters are `compare`'s.
    public init(timingToleranceNs: Int64, ignoringFields: Set<String> = [],
                keyFields: [String] = TraceDiff.defaultKeyFields, window: Int = defaultWindow,
                keptDifferences: Int = defaultKeptDifferences, lineBudget: Int = 1000) {
        self.window = Swift.max(window, 4)
        self.ignoringFields = ignoringFields
        self.keyFields = keyFields
        self.keptDifferences = Swift.max(keptDifferences, 0)
        self.lineBudget = Swift.max(lineBudget, 1)
        collector = TraceDiffReport.LineCollector(keeping: self.lineBudget)
        report = TraceDiffReport(eventsA: 0, eventsB: 0, timingToleranceNs: timingToleranceNs)
    }

    /// Events held now, both sides together (at most about twice the window).
    public var heldEvents: Int { a.count + b.count }

    /// Whether the next event of A should be read before more of B: A is read as far as B has
    /// got (in kept events), no further. Feed the two traces in step this way (as
    /// ``StreamingBaselineComparison`` does): read ahead, A would fill the window with events B
    /// has not reached.
    public var wantsA: Bool { a.count < b.count }

    /// Whether the two sides agree so far: nothing is held, so the next pair of events, if
    /// identical, is matched by ``addIdenticalPair()`` alone.
    public var inStep: Bool { a.isEmpty && b.isEmpty }

    /// The next event of A and the next of B, known to be identical (same identity, same time)
    /// while the sides are ``inStep``: what `addB` then `addA` of the two would do, without
    /// looking at them.
    public mutating func addIdenticalPair() {
        precondition(inStep, "an identical pair is only known while the sides agree")
        countA += 1
        countB += 1
        report.matched += 1
    }

    /// The next event of A, the baseline.
    public mutating func addA(_ event: TraceEvent) {
        countA += 1
        if a.isEmpty, let head = b.first, sameIdentity(head, event) {
            match(event, head, indexA: countA - 1, indexB: countB - b.count)
            b.removeFirst()
            return
        }
        a.append(event)
        if a.count > window { settle(final: false) }
    }

    /// The next event of B, the new run.
    public mutating func addB(_ event: TraceEvent) {
        countB += 1
        if b.isEmpty, let head = a.first, sameIdentity(head, event) {
            match(head, event, indexA: countA - a.count, indexB: countB - 1)
            a.removeFirst()
            return
        }
        b.append(event)
        if b.count > window { settle(final: false) }
    }

    /// Both traces are complete: compares what is left and returns the report.
    public mutating func finish() -> TraceDiffReport {
        settle(final: true)
        report.eventsA = countA
        report.eventsB = countB
        if differences > keptDifferences {
            (digest.lines, digest.totalLines) = collector.finish()
            digest.lineBudget = lineBudget
            report.digest = digest
        }
        return report
    }

    private func sameIdentity(_ x: TraceEvent, _ y: TraceEvent) -> Bool {
        guard x.core == y.core, x.event == y.event else { return false }
        if ignoringFields.isEmpty { return x.hasSameFields(as: y) }
        return x.fields.filter { !ignoringFields.contains($0.key) } == y.fields.filter { !ignoringFields.contains($0.key) }
    }

    private mutating func match(_ x: TraceEvent, _ y: TraceEvent, indexA: Int, indexB: Int) {
        report.matched += 1
        let delta = TraceTimeDifference(from: x.timeNs, to: y.timeNs)
        if delta.magnitude > report.timingToleranceNs.magnitude {
            record(timing: .init(indexA: indexA, indexB: indexB, a: x, b: y, deltaNs: delta.saturatingNanoseconds))
        }
    }

    // Each kind's differences arrive in order of position. The first `keptDifferences` are kept
    // as entries; from the one after, only counts and rendered lines (the kept ones are rendered
    // first, so each kind's lines still come in order).

    private mutating func countDifference() -> Bool {
        differences += 1
        if differences <= keptDifferences { return true }
        if differences == keptDifferences + 1 {
            for entry in report.missing { collector.add(missing: entry) }
            for entry in report.extra { collector.add(extra: entry) }
            for entry in report.moved { collector.add(moved: entry) }
            for entry in report.changed { collector.add(changed: entry) }
            for entry in report.timing { collector.add(timing: entry) }
        }
        return false
    }

    private mutating func record(missing entry: TraceDiffReport.Unpaired) {
        digest.missing += 1
        if countDifference() { report.missing.append(entry) } else { collector.add(missing: entry) }
    }

    private mutating func record(extra entry: TraceDiffReport.Unpaired) {
        digest.extra += 1
        if countDifference() { report.extra.append(entry) } else { collector.add(extra: entry) }
    }

    private mutating func record(moved entry: TraceDiffReport.Paired) {
        digest.moved += 1
        if countDifference() { report.moved.append(entry) } else { collector.add(moved: entry) }
    }

    private mutating func record(changed entry: TraceDiffReport.Paired) {
        digest.changed += 1
        if countDifference() { report.changed.append(entry) } else { collector.add(changed: entry) }
    }

    private mutating func record(timing entry: TraceDiffReport.Paired) {
        digest.timing += 1
        if countDifference() { report.timing.append(entry) } else { collector.add(timing: entry) }
    }

    /// Aligns the kept events as `compare` does and reports them: all of them when `final`,
    /// else up to the last aligned pair (all of them when that would leave more than three
    /// quarters of a window). Then matches what agrees at the front of what is left.
    private mutating func settle(final: Bool) {
        guard !a.isEmpty || !b.isEmpty else { return }
        let eventsA = a.elements, eventsB = b.elements
        let offsetA = countA - eventsA.count, offsetB = countB - eventsB.count
        var interner = TraceDiff.Interner(ignoring: ignoringFields)
        let idsA = eventsA.map { interner.id(of: $0) }
        let idsB = eventsB.map { interner.id(of: $0) }
        let script = TraceDiff.Aligner(a: idsA, b: idsB, maxD: TraceDiff.maxEditDistance).run()

        var settled = script.count
        var settledA = eventsA.count, settledB = eventsB.count
        if !final, let last = script.lastIndex(where: { if case .match = $0 { true } else { false } }),
           case .match(let i, let j) = script[last],
           Swift.max(eventsA.count - (i + 1), eventsB.count - (j + 1)) <= window * 3 / 4 {
            settled = last + 1
            settledA = i + 1
            settledB = j + 1
        }
        var segment = TraceDiffReport(eventsA: 0, eventsB: 0, timingToleranceNs: report.timingToleranceNs)
        TraceDiff.classify(script[..<settled], a: eventsA, b: eventsB, idsA: idsA, idsB: idsB,
                           offsetA: offsetA, offsetB: offsetB, ignoringFields: ignoringFields, keyFields: keyFields,
                           into: &segment)
        report.matched += segment.matched
        for entry in segment.timing { record(timing: entry) }
        for entry in segment.missing { record(missing: entry) }
        for entry in segment.extra { record(extra: entry) }
        for entry in segment.moved { record(moved: entry) }
        for entry in segment.changed { record(changed: entry) }
        a.removeFirst(settledA)
        b.removeFirst(settledB)
        while let x = a.first, let y = b.first, sameIdentity(x, y) {
            match(x, y, indexA: countA - a.count, indexB: countB - b.count)
            a.removeFirst()
            b.removeFirst()
        }
    }
}

/// A FIFO of events: appended at the back, dropped from the front without moving the rest
/// each time.
struct PendingEvents {
    private var storage: [TraceEvent] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: TraceEvent? { isEmpty ? nil : storage[head] }
    var elements: [TraceEvent] { Array(storage[head...]) }

    mutating func append(_ event: TraceEvent) { storage.append(event) }

    mutating func removeFirst(_ n: Int = 1) {
        head += n
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 4 * StreamingTraceDiff.defaultWindow)
            head = 0
        } else if head >= 1024, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}

/// One core's replayed events compared with its baseline trace file, read alongside as the
/// replay streams (``StreamingTraceDiff``): the baseline is read only as far as the replay has
/// got, so neither trace is held. `tether diff` feeds it a second trace file the same way.
public final class StreamingBaselineComparison {
    /// The core compared, e.g. `ingest`.
    public let name: String
    private var reader: TraceFileReader?
    private var diff: StreamingTraceDiff
    private var failure: (any Error)?
    /// Event names left out of both sides.
    private let ignoringEvents: Set<TraceName>

    /// Opens the baseline trace file at `baselinePath`.
    /// - Throws: ``TraceFileError`` when it cannot be read.
    /// `lineBudget` is the longest rendering of the report that must be exact, in lines
    /// (`tether replay`'s `--max-diff-lines`). Fields in `ignoringFields` count for nothing, and
    /// events named in `ignoringEvents` are left out of both sides (`tether diff`'s options).
    ///
    /// With `usingIndex` and no field or event ignored, a current ``BaselineIndex`` beside the
    /// baseline (``indexLookup`` tells what was found) lets agreeing events be checked by their
    /// digests alone; the report is the same either way.
    public init(name: String, baselinePath: String, timingToleranceNs: Int64,
                ignoringFields: Set<String> = [], ignoringEvents: Set<TraceName> = [],
                window: Int = StreamingTraceDiff.defaultWindow, lineBudget: Int = 1000, usingIndex: Bool = true) throws(TraceFileError) {
        self.name = name
        self.ignoringEvents = ignoringEvents
        self.baselinePath = baselinePath
        diff = StreamingTraceDiff(timingToleranceNs: timingToleranceNs, ignoringFields: ignoringFields,
                                  window: window, lineBudget: lineBudget)
        if usingIndex, ignoringFields.isEmpty, ignoringEvents.isEmpty {
            let (lookup, entries) = BaselineIndex.lookUp(forTrace: baselinePath)
            indexLookup = lookup
            if let entries {
                index = entries
                // The file must open now, as it does without an index; it is read from where
                // the index leaves off.
                if let error = TraceFileError.unreadable(baselinePath) { throw error }
                return
            }
        } else {
            indexLookup = .absent
        }
        reader = try TraceFileReader(path: baselinePath)
    }

    private let baselinePath: String
    /// What was found beside the baseline: an index in use, none, or one that could not be used.
    public let indexLookup: BaselineIndex.Lookup
    /// The index's entries while the comparison goes by them; `nil` once it has left them (or
    /// never had an index).
    private var index: BaselineIndex.EntryReader?
    /// The index entry of the baseline's next line (read, not yet matched), its number, and
    /// where that line starts.
    private var nextEntry: (lineLength: UInt32, digest: UInt64)?
    private var indexPosition = 0
    private var indexOffset: UInt64 = 0
    /// Baseline lines checked by their digests alone.
    public private(set) var linesCheckedByIndex = 0

    /// Leaves the index: the baseline is read from the line the index got to.
    private func leaveIndex() {
        guard index != nil else { return }
        index = nil
        do {
            reader = try TraceFileReader(path: baselinePath, offset: indexOffset, lineNumber: indexPosition + 1)
        } catch {
            fail(error)
        }
    }

    /// The next event the replay made for this core.
    ///
    /// While the two sides agree, the baseline's next line is checked against the event: when it
    /// is exactly the line the trace writer writes for it (walked against a datapoint's values,
    /// else compared with the written line byte for byte), it is the same event at the same
    /// instant (a trace's encoding is canonical), so the line is not parsed. Only a line that
    /// differs is parsed and goes through the comparison; the report is the same either way.
    public func replayed(_ event: TraceEvent) {
        guard failure == nil, !ignoringEvents.contains(event.event) else { return }
        if let index {
            if nextEntry == nil { nextEntry = index.next() }
            if diff.inStep, let entry = nextEntry, entry.digest == event.stableDigest {
                indexOffset &+= UInt64(entry.lineLength)
                indexPosition &+= 1
                nextEntry = nil
                linesCheckedByIndex &+= 1
                diff.addIdenticalPair()
                return
            }
            leaveIndex()
            guard failure == nil else { return }
        }
        if diff.inStep, let reader {
            do {
                while true {
                    switch try reader.next(comparingWith: event, scratch: &expectedLine) {
                    case .identical:
                        diff.addIdenticalPair()
                        return
                    case .event(let baseline):
                        if ignoringEvents.contains(baseline.event) { continue }
                        diff.addB(event)
                        diff.addA(baseline)
                        while diff.wantsA, readBaseline() {}
                        return
                    case .end:
                        self.reader = nil
                        diff.addB(event)
                        return
                    }
                }
            } catch {
                fail(error)
                return
            }
        }
        diff.addB(event)
        while diff.wantsA, readBaseline() {}
    }

    /// Where ``replayed(_:)`` writes an event's line to compare it; kept to reuse its storage.
    private var expectedLine: [UInt8] = []

    private func fail(_ error: any Error) {
        failure = error
        reader = nil
        diff = StreamingTraceDiff(timingToleranceNs: 0, window: diff.window)  // what it held is of no use now
    }

    /// Reads one baseline event into the comparison; `false` at the end or on an error.
    private func readBaseline() -> Bool {
        guard let reader else { return false }
        do {
            while let event = try reader.next() {
                if ignoringEvents.contains(event.event) { continue }
                diff.addA(event)
                return true
            }
            self.reader = nil
            return false
        } catch {
            fail(error)
            return false
        }
    }

    /// The replay is over: reads the rest of the baseline and returns the differences.
    /// - Throws: the baseline's first malformed line (``TraceFormatError``) or read error.
    public func finish() throws -> TraceDiffReport {
        // Lines the index did not reach are the baseline's events the replay did not make.
        leaveIndex()
        while failure == nil, readBaseline() {}
        if let failure { throw failure }
        return diff.finish()
    }
}
