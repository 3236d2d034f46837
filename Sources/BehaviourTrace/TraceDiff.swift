/// Compares two behaviour traces as sequences of events, not as text (`tether diff`).
///
/// An event's identity is its core, event name and every field except those ignored; `t_ns` never
/// counts. The sequences of identities are aligned with Myers' O(ND) difference algorithm after
/// trimming the common prefix and suffix; when a region differs by more than `maxEditDistance`
/// edits, it is split at events that occur exactly once on both sides (patience anchors) and each
/// piece aligned again, so time and memory stay bounded on 100k-event traces however unlike they
/// are. Unaligned events are then classified:
///
/// - **moved**: the same identity removed in one place and inserted in another (reported once);
/// - **changed**: within one region of differences, an event of A and one of B with the same core,
///   event and key fields (`source`, `name`, `sequence`, ... see `defaultKeyFields`) but other
///   fields different, or at the same virtual instant with key fields differing only in a
///   position counter (`renumberedFields`: a chunk renumbered because its stream did not restart;
///   paired before moves are looked for, so it is not taken for a look-alike moved);
/// - **missing** (only in A) and **extra** (only in B): the rest;
/// - **timing**: aligned events whose `t_ns` differ by more than the tolerance.
public enum TraceDiff {
    /// Fields that name *which* thing an event is about, so two events sharing them are the same
    /// event changed rather than one removed and another added.
    public static let defaultKeyFields: [String] = [
        "source", "name", "sequence", "app", "device", "id", "message_id", "transfer_id", "key",
    ]

    /// Key fields that count position rather than name a thing (a chunk's `sequence`). Two events at
    /// the same virtual instant whose key fields differ only in these are one event renumbered.
    public static let renumberedFields: Set<String> = ["sequence"]

    /// Beyond this many edits in one region, alignment falls back to patience anchors.
    public static let maxEditDistance = 1024

    /// Compares trace `a` (usually the baseline) with trace `b` (usually the new run).
    ///
    /// - Parameters:
    ///   - timingToleranceNs: aligned events whose times differ by more than this are reported.
    ///   - ignoringFields: fields left out of identity and of change detection (e.g. a wall-clock
    ///     stamp).
    ///   - keyFields: fields that pair a removed and an added event as one changed event.
    public static func compare(
        _ a: [TraceEvent], _ b: [TraceEvent], timingToleranceNs: Int64,
        ignoringFields: Set<String> = [], keyFields: [String] = defaultKeyFields
    ) -> TraceDiffReport {
        var interner = Interner(ignoring: ignoringFields)
        let idsA = a.map { interner.id(of: $0) }
        let idsB = b.map { interner.id(of: $0) }
        let script = Aligner(a: idsA, b: idsB, maxD: maxEditDistance).run()

        var report = TraceDiffReport(eventsA: a.count, eventsB: b.count, timingToleranceNs: timingToleranceNs)
        classify(script[...], a: a, b: b, idsA: idsA, idsB: idsB, offsetA: 0, offsetB: 0,
                 ignoringFields: ignoringFields, keyFields: keyFields, into: &report)
        return report
    }

    /// Turns an edit script (or a leading part of one) over `a` and `b` into the report's
    /// entries: matches are counted and checked for timing, the unaligned events are classified
    /// (changed at one instant, moved, changed, missing, extra). `offsetA` and `offsetB` are the
    /// positions of `a[0]` and `b[0]` in their whole traces, which the entries give. Moved and
    /// changed entries come sorted by their position in A; pieces of one comparison classified
    /// in order therefore append in order (``StreamingTraceDiff``).
    static func classify(
        _ script: ArraySlice<Op>, a: [TraceEvent], b: [TraceEvent], idsA: [Int32], idsB: [Int32],
        offsetA: Int, offsetB: Int, ignoringFields: Set<String>, keyFields: [String], into report: inout TraceDiffReport
    ) {
        let timingToleranceNs = report.timingToleranceNs
        // Group the unaligned events into hunks (maximal runs between aligned pairs).
        var hunks: [(deleted: [Int], inserted: [Int])] = []
        var currentDeleted: [Int] = [], currentInserted: [Int] = []
        func closeHunk() {
            if !currentDeleted.isEmpty || !currentInserted.isEmpty {
                hunks.append((currentDeleted, currentInserted))
                currentDeleted = []
                currentInserted = []
            }
        }
        for op in script {
            switch op {
            case .match(let i, let j):
                closeHunk()
                report.matched += 1
                let delta = TraceTimeDifference(from: a[i].timeNs, to: b[j].timeNs)
                if delta.magnitude > timingToleranceNs.magnitude {
                    report.timing.append(.init(indexA: offsetA + i, indexB: offsetB + j, a: a[i], b: b[j], deltaNs: delta.saturatingNanoseconds))
                }
            case .delete(let i): currentDeleted.append(i)
            case .insert(let j): currentInserted.append(j)
            }
        }
        closeHunk()
        var moved: [TraceDiffReport.Paired] = []
        var changed: [TraceDiffReport.Paired] = []

        // Same kind of event at the very same virtual instant, inside one region of differences:
        // the same event with a field changed (a chunk renumbered because its stream did not
        // restart). Paired first, so that such events are not mistaken for moves of look-alikes.
        var pairedA = Set<Int>(), pairedB = Set<Int>()
        let stableKeyFields = keyFields.filter { !renumberedFields.contains($0) }
        for hunk in hunks {
            var byInstant: [InstantKey: [Int]] = [:]
            for j in hunk.inserted {
                byInstant[InstantKey(b[j], keyFields: stableKeyFields), default: []].append(j)
            }
            for i in hunk.deleted {
                let key = InstantKey(a[i], keyFields: stableKeyFields)
                guard var candidates = byInstant[key], let slot = candidates.firstIndex(where: { idsB[$0] != idsA[i] }) else { continue }
                let j = candidates.remove(at: slot)
                byInstant[key] = candidates
                pairedA.insert(i)
                pairedB.insert(j)
                changed.append(.init(indexA: offsetA + i, indexB: offsetB + j, a: a[i], b: b[j], fields: changedFields(a[i], b[j], ignoring: ignoringFields)))
            }
        }

        // Moved: the same identity removed somewhere and inserted elsewhere, paired in order.
        var pendingInserts: [Int32: [Int]] = [:]
        for hunk in hunks { for j in hunk.inserted where !pairedB.contains(j) { pendingInserts[idsB[j], default: []].append(j) } }
        var insertCursor: [Int32: Int] = [:]
        for hunk in hunks {
            for i in hunk.deleted where !pairedA.contains(i) {
                let id = idsA[i]
                guard let candidates = pendingInserts[id] else { continue }
                let cursor = insertCursor[id, default: 0]
                guard cursor < candidates.count else { continue }
                let j = candidates[cursor]
                insertCursor[id] = cursor + 1
                pairedA.insert(i)
                pairedB.insert(j)
                moved.append(.init(indexA: offsetA + i, indexB: offsetB + j, a: a[i], b: b[j]))
            }
        }

        // Changed: within a hunk, pair what is left by core, event and key fields.
        for hunk in hunks {
            let deleted = hunk.deleted.filter { !pairedA.contains($0) }
            let inserted = hunk.inserted.filter { !pairedB.contains($0) }
            var byKey: [EventKey: [Int]] = [:]
            for j in inserted { byKey[EventKey(b[j], keyFields: keyFields), default: []].append(j) }
            for i in deleted {
                let key = EventKey(a[i], keyFields: keyFields)
                if var candidates = byKey[key], !candidates.isEmpty {
                    let j = candidates.removeFirst()
                    byKey[key] = candidates
                    pairedB.insert(j)
                    let fields = changedFields(a[i], b[j], ignoring: ignoringFields)
                    changed.append(.init(indexA: offsetA + i, indexB: offsetB + j, a: a[i], b: b[j], fields: fields))
                } else {
                    report.missing.append(.init(index: offsetA + i, event: a[i]))
                }
            }
            for j in inserted where !pairedB.contains(j) {
                report.extra.append(.init(index: offsetB + j, event: b[j]))
            }
        }
        moved.sort { $0.indexA < $1.indexA }
        changed.sort { $0.indexA < $1.indexA }
        report.moved += moved
        report.changed += changed
    }

    /// Same virtual instant, same core and event, same key fields but for renumbered ones.
    struct InstantKey: Hashable {
        var timeNs: Int64
        var identity: EventKey
        init(_ e: TraceEvent, keyFields: [String]) {
            timeNs = e.timeNs
            identity = EventKey(e, keyFields: keyFields)
        }
    }

    static func changedFields(_ x: TraceEvent, _ y: TraceEvent, ignoring: Set<String>) -> [String] {
        // Once each: an inline datapoint's `fields` is built on every read.
        let fx = x.fields, fy = y.fields
        return Set(fx.keys).union(fy.keys).subtracting(ignoring)
            .filter { fx[$0] != fy[$0] }
            .sorted(by: TraceJSONWriter.keyOrder)
    }

    /// What pairs a removed and an added event as "changed".
    struct EventKey: Hashable {
        var core: TraceName
        var event: TraceName
        var keys: [String: TraceValue]
        init(_ e: TraceEvent, keyFields: [String]) {
            core = e.core
            event = e.event
            var keys: [String: TraceValue] = [:]
            for field in keyFields { if let v = e.field(field) { keys[field] = v } }
            self.keys = keys
        }
    }

    /// Maps each distinct identity to a small integer so alignment compares integers.
    struct Interner {
        struct Identity: Hashable {
            var core: TraceName
            var event: TraceName
            var fields: [String: TraceValue]
        }
        let ignoring: Set<String>
        var table: [Identity: Int32] = [:]
        init(ignoring: Set<String>) { self.ignoring = ignoring }
        mutating func id(of e: TraceEvent) -> Int32 {
            var fields = e.fields
            for key in ignoring { fields.removeValue(forKey: key) }
            let identity = Identity(core: e.core, event: e.event, fields: fields)
            if let id = table[identity] { return id }
            let id = Int32(truncatingIfNeeded: table.count)
            table[identity] = id
            return id
        }
    }

    /// One step of an edit script from A to B.
    enum Op: Equatable {
        case match(Int, Int)
        case delete(Int)
        case insert(Int)
    }

    /// Produces an edit script in order of A and B. Iterative (an explicit task stack), so no input
    /// can exhaust the call stack.
    struct Aligner {
        let a: [Int32]
        let b: [Int32]
        let maxD: Int

        enum Task {
            case region(aLo: Int, aHi: Int, bLo: Int, bHi: Int, allowMyers: Bool)
            case match(Int, Int)
        }

        func run() -> [Op] {
            var ops: [Op] = []
            ops.reserveCapacity(Swift.max(a.count, b.count))
            var stack: [Task] = [.region(aLo: 0, aHi: a.count, bLo: 0, bHi: b.count, allowMyers: true)]
            while let task = stack.popLast() {
                switch task {
                case .match(let i, let j):
                    ops.append(.match(i, j))
                case .region(var aLo, var aHi, var bLo, var bHi, let allowMyers):
                    var suffix: [Op] = []
                    while aLo < aHi && bLo < bHi && a[aLo] == b[bLo] {
                        ops.append(.match(aLo, bLo))
                        aLo += 1
                        bLo += 1
                    }
                    while aLo < aHi && bLo < bHi && a[aHi - 1] == b[bHi - 1] {
                        aHi -= 1
                        bHi -= 1
                        suffix.append(.match(aHi, bHi))
                    }
                    // The suffix must come after everything this region produces.
                    for op in suffix { if case .match(let i, let j) = op { stack.append(.match(i, j)) } }
                    if aLo == aHi || bLo == bHi {
                        for i in aLo..<aHi { ops.append(.delete(i)) }
                        for j in bLo..<bHi { ops.append(.insert(j)) }
                        continue
                    }
                    if allowMyers, let script = myers(aLo: aLo, aHi: aHi, bLo: bLo, bHi: bHi) {
                        ops.append(contentsOf: script)
                        continue
                    }
                    let anchors = patienceAnchors(aLo: aLo, aHi: aHi, bLo: bLo, bHi: bHi)
                    if anchors.isEmpty {
                        for i in aLo..<aHi { ops.append(.delete(i)) }
                        for j in bLo..<bHi { ops.append(.insert(j)) }
                        continue
                    }
                    // Push in reverse so the pieces come out in order.
                    var tasks: [Task] = []
                    var pa = aLo, pb = bLo
                    for (i, j) in anchors {
                        tasks.append(.region(aLo: pa, aHi: i, bLo: pb, bHi: j, allowMyers: true))
                        tasks.append(.match(i, j))
                        pa = i + 1
                        pb = j + 1
                    }
                    tasks.append(.region(aLo: pa, aHi: aHi, bLo: pb, bHi: bHi, allowMyers: true))
                    stack.append(contentsOf: tasks.reversed())
                }
            }
            return ops
        }

        /// Myers 1986, forward greedy search with one saved frontier per edit distance so the path
        /// can be traced back; gives up (nil) past `maxD` edits so memory stays O(maxD²).
        func myers(aLo: Int, aHi: Int, bLo: Int, bHi: Int) -> [Op]? {
            let n = aHi - aLo, m = bHi - bLo
            let limit = Swift.min(maxD, n + m)
            let offset = limit + 1
            var v = [Int32](repeating: 0, count: 2 * limit + 3)
            var frontiers: [[Int32]] = []  // frontiers[d] = v[-d-1 ... d+1] before round d
            var found: Int?
            search: for d in 0...limit {
                frontiers.append(Array(v[(offset - d - 1)...(offset + d + 1)]))
                for k in stride(from: -d, through: d, by: 2) {
                    var x: Int
                    if k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]) {
                        x = Int(v[offset + k + 1])
                    } else {
                        x = Int(v[offset + k - 1]) + 1
                    }
                    var y = x - k
                    while x < n && y < m && a[aLo + x] == b[bLo + y] {
                        x += 1
                        y += 1
                    }
                    v[offset + k] = Int32(x)
                    if x >= n && y >= m {
                        found = d
                        break search
                    }
                }
            }
            guard let distance = found else { return nil }

            var reversed: [Op] = []
            var x = n, y = m
            for d in stride(from: distance, through: 0, by: -1) {
                let frontier = frontiers[d]
                func at(_ k: Int) -> Int { Int(frontier[k + d + 1]) }
                let k = x - y
                let previousK = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1
                let previousX = at(previousK)
                let previousY = previousX - previousK
                while x > previousX && y > previousY {
                    x -= 1
                    y -= 1
                    reversed.append(.match(aLo + x, bLo + y))
                }
                if d > 0 {
                    if x == previousX {
                        reversed.append(.insert(bLo + previousY))
                    } else {
                        reversed.append(.delete(aLo + previousX))
                    }
                }
                x = previousX
                y = previousY
            }
            return reversed.reversed()
        }

        /// Events unique on both sides, in an order increasing on both (longest increasing
        /// subsequence by patience sorting).
        func patienceAnchors(aLo: Int, aHi: Int, bLo: Int, bHi: Int) -> [(Int, Int)] {
            var countA: [Int32: Int] = [:], countB: [Int32: Int] = [:]
            var positionB: [Int32: Int] = [:]
            for i in aLo..<aHi { countA[a[i], default: 0] += 1 }
            for j in bLo..<bHi {
                countB[b[j], default: 0] += 1
                positionB[b[j]] = j
            }
            var pairs: [(Int, Int)] = []
            for i in aLo..<aHi where countA[a[i]] == 1 && countB[a[i]] == 1 {
                if let j = positionB[a[i]] { pairs.append((i, j)) }
            }
            guard !pairs.isEmpty else { return [] }
            // LIS on j: tails[k] = index into pairs of the smallest tail of a length-(k+1) run.
            var tails: [Int] = []
            var previous = [Int](repeating: -1, count: pairs.count)
            for (index, pair) in pairs.enumerated() {
                var lo = 0, hi = tails.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if pairs[tails[mid]].1 < pair.1 { lo = mid + 1 } else { hi = mid }
                }
                if lo > 0 { previous[index] = tails[lo - 1] }
                if lo == tails.count { tails.append(index) } else { tails[lo] = index }
            }
            var result: [(Int, Int)] = []
            var cursor = tails.last ?? -1
            while cursor >= 0 {
                result.append(pairs[cursor])
                cursor = previous[cursor]
            }
            return result.reversed()
        }
    }
}
