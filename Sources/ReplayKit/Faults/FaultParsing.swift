import Durations

/// Why a fault's text could not be read: the text, what is wrong with it, and what to write.
public struct FaultSpecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The fault as given.
    public var text: String
    /// What is wrong.
    public var problem: String

    /// An error about `text`.
    public init(text: String, problem: String) {
        self.text = text
        self.problem = problem
    }

    /// `fault "drop:frame=x": frame=x is not a frame number …; docs/faults.md lists the faults.`
    public var description: String {
        "fault \"\(text)\": \(problem). docs/faults.md lists the faults, e.g. drop:frame=412, delay:frame=412:by=6s, disconnect:at=1.5s, drop:p=0.05:seed=7."
    }
}

extension Fault {
    /// The most faults one run takes (`--fault` flags, or a scenario's `faults:`). Each fault adds
    /// at most one delivery per frame it selects, so this bounds a run's work at 65 times the
    /// capture's; sweeps and searches, which explore more, run many runs instead.
    public static let maximumPerRun = 64

    /// Refuses a fault list longer than ``maximumPerRun``.
    /// - Throws: ``FaultSpecError`` about the list, saying the limit.
    public static func checkCount(_ texts: [String]) throws(FaultSpecError) {
        guard texts.count > maximumPerRun else { return }
        throw FaultSpecError(text: "\(texts.count) faults",
                             problem: "a run takes at most \(maximumPerRun) faults (each adds work on every frame it selects); "
                                + "merge them with frames=A-B ranges, or use --sweep to try many faults one run at a time")
    }

    /// The fault kinds `--fault` takes.
    public static let kinds = ["drop", "delay", "duplicate", "disconnect", "reorder", "jitter", "truncate", "att-error", "mtu"]

    /// Reads a fault from its text form (`drop:frame=412`, `delay:frame=412:by=6s`,
    /// `disconnect:at=1.5s:reconnect=2s`, `drop:p=0.05:seed=7`, `reorder:window=3:seed=7`,
    /// `jitter:max=40ms:seed=7`, `truncate:kind=datagram:bytes=20`, `att-error:frame=88:code=0x0E`,
    /// `mtu:size=23`).
    /// Selector keys (`frame`, `frames=A-B`, `from`, `to`, `kind`) go with every kind but
    /// `disconnect`.
    /// - Throws: ``FaultSpecError`` naming the text and what to write instead.
    public init(parsing text: String) throws(FaultSpecError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let kind = parts[0].trimmingSpaces
        guard Self.kinds.contains(kind) else {
            throw FaultSpecError(text: text, problem: "\"\(kind)\" is not a fault kind (kinds: \(Self.kinds.joined(separator: ", ")))")
        }
        var values: [String: String] = [:]
        for part in parts.dropFirst() {
            guard let equals = part.firstIndex(of: "="), equals != part.startIndex else {
                throw FaultSpecError(text: text, problem: "\"\(part)\" is not KEY=VALUE")
            }
            let key = String(part[..<equals]).trimmingSpaces
            guard values[key] == nil else { throw FaultSpecError(text: text, problem: "\(key) is given twice") }
            values[key] = String(part[part.index(after: equals)...]).trimmingSpaces
        }
        var reader = FaultValues(text: text, values: values)
        switch kind {
        case "disconnect":
            let at = try reader.duration("at", required: true) ?? .zero
            let again = try reader.duration("reconnect")
            try reader.finish(allowed: ["at", "reconnect"])
            self = .disconnect(at: at, reconnectAfter: again)
            return
        default:
            break
        }
        let selector = try reader.selector()
        switch kind {
        case "drop":
            if let p = try reader.probability("p") {
                let seed = try reader.seed()
                try reader.finish(allowed: FaultValues.selectorKeys + ["p", "seed"])
                self = .randomDrop(selector, probability: p, seed: seed)
            } else {
                try reader.finish(allowed: FaultValues.selectorKeys)
                try Self.requireNarrowed(selector, text: text, kind: kind)
                self = .drop(selector)
            }
        case "delay":
            let by = try reader.duration("by", required: true) ?? .zero
            try reader.finish(allowed: FaultValues.selectorKeys + ["by"])
            self = .delay(selector, by: by)
        case "duplicate":
            try reader.finish(allowed: FaultValues.selectorKeys)
            self = .duplicate(selector)
        case "reorder":
            let window = try reader.integer("window", range: 2...1_000, required: true) ?? 2
            let hold = try reader.duration("hold") ?? .milliseconds(100)
            let seed = try reader.seed()
            try reader.finish(allowed: FaultValues.selectorKeys + ["window", "hold", "seed"])
            self = .reorder(selector, window: window, hold: hold, seed: seed)
        case "jitter":
            let max = try reader.duration("max", required: true) ?? .zero
            let seed = try reader.seed()
            try reader.finish(allowed: FaultValues.selectorKeys + ["max", "seed"])
            self = .jitter(selector, max: max, seed: seed)
        case "truncate":
            let bytes = try reader.integer("bytes", range: 0...65_535, required: true) ?? 0
            try reader.finish(allowed: FaultValues.selectorKeys + ["bytes"])
            self = .truncate(selector, bytes: bytes)
        case "mtu":
            // ATT_MTU is at least 23 on LE (Core Specification Vol 3 Part F 3.2.8) and at most 517
            // (a 512-byte attribute value plus its header).
            let size = try reader.integer("size", range: 23...517, required: true) ?? 23
            try reader.finish(allowed: FaultValues.selectorKeys + ["size"])
            self = .mtu(selector, size: UInt16(size))
        default: // att-error
            let code = try reader.integer("code", range: 1...255) ?? 0x0E
            try reader.finish(allowed: FaultValues.selectorKeys + ["code"])
            self = .attError(selector, code: UInt8(code))
        }
    }

    /// A plain `drop` of every peer frame would leave the core with nothing: refused, because it is
    /// almost always a forgotten `frame=`.
    private static func requireNarrowed(_ selector: FrameSelector, text: String, kind: String) throws(FaultSpecError) {
        if selector == .all {
            throw FaultSpecError(text: text, problem: "\(kind) needs a selector (frame=N, frames=A-B, from=/to=, kind=) or p=PROBABILITY")
        }
    }
}

/// The KEY=VALUE pairs of one fault, read and checked one by one.
private struct FaultValues {
    static let selectorKeys = ["frame", "frames", "from", "to", "kind"]
    let text: String
    var values: [String: String]
    var used: Set<String> = []

    init(text: String, values: [String: String]) {
        self.text = text
        self.values = values
    }

    mutating func take(_ key: String) -> String? {
        used.insert(key)
        return values[key]
    }

    mutating func duration(_ key: String, required: Bool = false) throws(FaultSpecError) -> Duration? {
        guard let value = take(key) else {
            if required { throw FaultSpecError(text: text, problem: "it needs \(key)=DURATION (e.g. \(key)=6s or \(key)=40ms)") }
            return nil
        }
        guard let duration = FaultValues.parseDuration(value) else {
            if DurationText.nanoseconds(value, bareNumber: .refused).map({ $0 > FaultValues.longestDurationNs }) == true {
                throw FaultSpecError(text: text, problem: "\(key)=\(value) is longer than a fault's longest duration, a day (86400s)")
            }
            throw FaultSpecError(text: text, problem: "\(key)=\(value) is not a duration; write a number with a unit: \(DurationText.unitList) (e.g. 1.5s, 40ms)")
        }
        return duration
    }

    /// The longest duration a fault takes: a day, in nanoseconds.
    static let longestDurationNs: Double = 86_400e9

    /// A non-negative decimal with a unit, at most a day.
    static func parseDuration(_ text: String) -> Duration? {
        // A unit is required: a fault's bare numbers are frame numbers.
        guard let ns = DurationText.nanoseconds(text, bareNumber: .refused), ns <= longestDurationNs else { return nil }
        return .nanoseconds(Int64(ns))
    }

    mutating func integer(_ key: String, range: ClosedRange<Int>, required: Bool = false) throws(FaultSpecError) -> Int? {
        guard let value = take(key) else {
            if required { throw FaultSpecError(text: text, problem: "it needs \(key)=N (\(range.lowerBound)…\(range.upperBound))") }
            return nil
        }
        let parsed = value.lowercased().hasPrefix("0x") ? Int(value.dropFirst(2), radix: 16) : Int(value)
        guard let number = parsed, range.contains(number) else {
            throw FaultSpecError(text: text, problem: "\(key)=\(value) is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    mutating func probability(_ key: String) throws(FaultSpecError) -> Double? {
        guard let value = take(key) else { return nil }
        guard let p = Double(value), p.isFinite, p >= 0, p <= 1 else {
            throw FaultSpecError(text: text, problem: "\(key)=\(value) is not a probability from 0 to 1 (e.g. p=0.05)")
        }
        return p
    }

    mutating func seed() throws(FaultSpecError) -> UInt64 {
        guard let value = take("seed") else {
            throw FaultSpecError(text: text, problem: "a random fault needs seed=N, so the run can be repeated exactly")
        }
        guard let seed = UInt64(value) else {
            throw FaultSpecError(text: text, problem: "seed=\(value) is not a whole number from 0 to 18446744073709551615")
        }
        return seed
    }

    mutating func selector() throws(FaultSpecError) -> FrameSelector {
        var selector = FrameSelector()
        if let frame = take("frame") {
            guard let n = Int(frame), n >= 1 else {
                throw FaultSpecError(text: text, problem: "frame=\(frame) is not a frame number (1 or more, as `tether inspect --frames` numbers them)")
            }
            selector.frames = n...n
        }
        if let frames = take("frames") {
            guard selector.frames == nil else { throw FaultSpecError(text: text, problem: "give frame= or frames=, not both") }
            let ends = frames.split(separator: "-", omittingEmptySubsequences: false)
            guard ends.count == 2, let a = Int(ends[0]), let b = Int(ends[1]), a >= 1, a <= b else {
                throw FaultSpecError(text: text, problem: "frames=\(frames) is not a range A-B of frame numbers with A ≤ B")
            }
            selector.frames = a...b
        }
        let from = try duration("from")
        let to = try duration("to")
        if from != nil || to != nil {
            let lower = from ?? .zero
            let upper = to ?? .nanoseconds(Int64.max)
            guard lower <= upper else { throw FaultSpecError(text: text, problem: "from= is later than to=") }
            selector.window = lower...upper
        }
        if let kind = take("kind") {
            guard let parsed = PeerFrameKind(rawValue: kind) else {
                throw FaultSpecError(text: text, problem: "kind=\(kind) is not a peer frame kind (kinds: \(PeerFrameKind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            selector.kind = parsed
        }
        return selector
    }

    func finish(allowed: [String]) throws(FaultSpecError) {
        for key in values.keys.sorted() where !allowed.contains(key) {
            throw FaultSpecError(text: text, problem: "\(key)= does not go with this fault (it takes: \(allowed.joined(separator: ", ")))")
        }
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}

extension Fault {
    /// A duration as a fault's keys take it: a unit required, at most a day; `nil` otherwise.
    static func duration(parsing text: String) -> Duration? { FaultValues.parseDuration(text) }
}
