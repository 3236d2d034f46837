/// The per-frame part of a run's faults, stateless: whether a given peer frame is lost, late or
/// repeated. The engine applies it to the frames it feeds; a responder that delivers captured
/// answers itself (``FrameMatchingMode/responder``) applies it to each answer it takes from
/// frame N, so `drop:frame=N` loses that answer whoever delivers it.
///
/// The engine writes the `fault_injected` event for frame N at its captured instant; a responder
/// only follows the decision.
public struct PeerFrameFaults: Sendable, Hashable {
    /// The run's faults.
    public var faults: [Fault]
    /// Told the number of every frame a decision is asked about: what a fault sweep's probe run
    /// learns, for each peer frame, the first moment anything depends on its fate from
    /// (``FaultQueryProbe``). Not part of the value: two views of the same faults are equal.
    var probe: FaultQueryProbe?

    /// The per-frame view of `faults`.
    public init(_ faults: [Fault] = []) {
        self.faults = faults
    }

    /// The per-frame view of `faults`, telling `probe` each frame asked about.
    init(_ faults: [Fault], probe: FaultQueryProbe?) {
        self.faults = faults
        self.probe = probe
    }

    /// Equal when the faults are.
    public static func == (a: PeerFrameFaults, b: PeerFrameFaults) -> Bool { a.faults == b.faults }

    /// Hashes the faults.
    public func hash(into hasher: inout Hasher) { hasher.combine(faults) }

    /// No fault.
    public var isEmpty: Bool { faults.isEmpty }

    /// What one fault does to the timing of one peer frame.
    enum Timing {
        case lost
        case late(Duration)
        case repeated
    }

    /// The timing effect of `fault` on peer frame `number` of `kind` captured at `time`; `nil`
    /// when it leaves the frame's timing alone (another kind of fault, or not selected).
    static func timing(of fault: Fault, frame number: Int, kind: PeerFrameKind, at time: Duration) -> Timing? {
        guard let selector = fault.selector, selector.matches(number: number, at: time, kind: kind) else { return nil }
        switch fault {
        case .drop: return .lost
        case .randomDrop(_, let p, let seed): return unit(seed: seed, frame: number) < p ? .lost : nil
        case .delay(_, let by): return .late(by)
        case .duplicate: return .repeated
        case .jitter(_, let max, let seed):
            let ns = Int64(unit(seed: seed, frame: number) * Double(max.replayNanoseconds + 1))
            return .late(.nanoseconds(Swift.min(ns, max.replayNanoseconds)))
        case .disconnect, .reorder, .truncate, .attError, .mtu: return nil
        }
    }

    /// The delays after its captured (or answering) instant at which peer frame `number` reaches
    /// the core: `[]` lost, `[0]` untouched, `[0, 0]` duplicated, `[6 s]` late.
    ///
    /// Faults apply in the order given. Each `duplicate` that selects the frame adds **one** copy
    /// (of the last delivery so far, with its delay): n duplicates make n + 1 deliveries, not
    /// 2ⁿ, so the work a fault list can create grows with its length (at most
    /// ``Fault/maximumPerRun`` faults); a delay or jitter after it moves every copy.
    public func deliveries(ofFrame number: Int, kind: PeerFrameKind, capturedAt time: Duration) -> [Duration] {
        probe?.asked(about: number)
        var delays: [Duration] = [.zero]
        for fault in faults {
            switch Self.timing(of: fault, frame: number, kind: kind, at: time) {
            case .lost?: return []
            case .late(let by)?: delays = delays.map { $0 + by }
            case .repeated?: delays.append(delays[delays.count - 1])
            case nil: break
            }
        }
        return delays
    }

    /// A number in [0, 1) from a seed and a frame number, the same on every run and machine.
    static func unit(seed: UInt64, frame: Int) -> Double {
        var state = seed ^ (UInt64(truncatingIfNeeded: frame) &* 0xD6E8_FEB8_6659_FD93)
        // SplitMix64's output function, once: enough to decorrelate neighbouring frame numbers.
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}

/// Where a fault sweep's probe run (``FaultSweep``) notes, for every frame number, the first
/// position of the replay at which anything asked about that frame's fate: the engine when it
/// reads the frame, a responder when it schedules the captured answer ahead of it. Up to that
/// position a run with a fault on that frame is the run without it, so a variant may start from
/// a copy of the run without it taken there.
///
/// A class, because every copy of a ``PeerFrameFaults`` (one in each responder) must tell the one
/// probe. `@unchecked Sendable`: a probe belongs to one replay, which runs on one thread; it is
/// never shared between replays (the value it is reached through is `Sendable` for the faults'
/// sake).
final class FaultQueryProbe: @unchecked Sendable {
    /// The replay's position: the index of the frame being handled (set by the run that owns
    /// the probe before it hands each frame to the engine); -1 while the adapters are being made,
    /// before any frame, when a responder may ask about frames as it reads the capture ahead.
    var position = -1
    /// Frame number → the first position it was asked about at.
    private(set) var firstAsked: [Int: Int] = [:]
    /// Frame number → the last position it was asked about at: after it, a fault on that frame
    /// can no longer change what the run does.
    private(set) var lastAsked: [Int: Int] = [:]

    /// Notes that frame `number`'s fate was asked about now.
    func asked(about number: Int) {
        if firstAsked[number] == nil { firstAsked[number] = position }
        lastAsked[number] = position
    }
}
