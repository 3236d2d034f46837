import BehaviourTrace
import DequeModule

/// Compares what a core emits with what the capture holds from the same side: VCR for a link.
///
/// Each frame the core writes during replay is an *emitted* frame; each frame the recorded side
/// (the phone, when the core plays the phone) wrote in the capture is a *captured* frame. Both are
/// queued per channel (a device, a connection) and paired in order, whichever comes first: in a
/// live recording the write reaches HCI a little after the core decided it, so the emitted frame is
/// normally first; a core that decides later than the recorded one leaves the captured frame
/// waiting. A pair with equal bytes is `frame_matched`; unequal bytes, a captured frame the core
/// never emitted, or an emitted frame the capture never had is `frame_diverged`, with both sides'
/// bytes and their decoding. The first divergence is kept for the report.
///
/// Used by every BLE core adapter (messaging now, session next): the adapter says which channel a
/// frame belongs to and how to decode it; the matcher does the rest.
public struct FrameMatcher: Sendable {
    /// One divergence, as the report shows it.
    public struct Divergence: Sendable, Hashable {
        /// `different` (both sides wrote, bytes differ), `missing` (the capture has a frame the core
        /// did not emit), `extra` (the core emitted a frame the capture does not have).
        public var kind: String
        /// The channel (device) it happened on.
        public var channel: String
        /// The captured frame's number, when there is one.
        public var frame: Int?
        /// Virtual time of the later of the two sides.
        public var timeNs: Int64
        /// The captured bytes (empty for `extra`).
        public var expected: [UInt8]
        /// The emitted bytes (empty for `missing`).
        public var emitted: [UInt8]
        /// Both sides decoded.
        public var expectedText: String
        /// The emitted side decoded.
        public var emittedText: String

        /// One line for reports: where, what, both decodings.
        public var description: String {
            let at = frame.map { "frame \($0)" } ?? "after the last captured frame"
            switch kind {
            case "missing":
                return "\(at) (\(channel)): the capture has \(JSONLiteral.hex(expected)) [\(expectedText)] that the core did not emit"
            case "extra":
                return "\(at) (\(channel)): the core emitted \(JSONLiteral.hex(emitted)) [\(emittedText)] that the capture does not have"
            default:
                return "\(at) (\(channel)): expected \(JSONLiteral.hex(expected)) [\(expectedText)], emitted \(JSONLiteral.hex(emitted)) [\(emittedText)]"
            }
        }
    }

    private struct Pending: Sendable, Equatable {
        var bytes: [UInt8]
        var timeNs: Int64
        var frame: Int?
    }

    /// The trace's core name for the events.
    public let core: TraceName
    /// How many frames out of order a pair may be and still match (0: strictly in order). A link
    /// whose lanes run independently (the session link) needs a few: in a live run the host may
    /// write frame A before reacting to a frame that already crossed HCI, while replay, feeding that
    /// frame at its captured instant, writes the reaction first. Equal frames are then paired
    /// across the swap (`frame_matched` with `reordered: true`); a frame left unpaired once more
    /// than this many others wait behind it is a divergence.
    public let reorderWindow: Int
    /// Turns a frame's bytes into one readable line (the link's packet decoding).
    public let decode: @Sendable ([UInt8]) -> String
    /// Frames paired with equal bytes.
    /// Whether `other` will pair and report the frames to come exactly as this matcher does: the
    /// same frames waiting on each side. The counts and the first divergence, which only the
    /// summary reports, are left out.
    public func hasSameState(as other: FrameMatcher) -> Bool {
        emittedQueue == other.emittedQueue && capturedQueue == other.capturedQueue
    }

    public private(set) var matched = 0
    /// Pairs that differed, plus unpaired frames at the end.
    public private(set) var diverged = 0
    /// Emitted frames dropped at a link-down (``linkDown(channel:timeNs:)``).
    public private(set) var unsent = 0
    /// The first divergence, if any.
    public private(set) var firstDivergence: Divergence?

    private var emittedQueue: [String: Deque<Pending>] = [:]
    private var capturedQueue: [String: Deque<Pending>] = [:]

    /// A matcher writing `core` events, decoding frames with `decode`.
    public init(core: TraceName, reorderWindow: Int = 0, decode: @escaping @Sendable ([UInt8]) -> String) {
        self.core = core
        self.reorderWindow = max(0, reorderWindow)
        self.decode = decode
    }

    /// The core wrote `bytes` on `channel` at `timeNs`. Returns `frame_emitted` and, when a
    /// captured frame was waiting, its `frame_matched` or `frame_diverged`.
    public mutating func emitted(_ bytes: [UInt8], channel: String, timeNs: Int64) -> [TraceEvent] {
        var events = [Self.emittedEvent(core: core, channel: channel, bytes: bytes, packet: decode(bytes), timeNs: timeNs)]
        if reorderWindow > 0 {
            if let index = capturedQueue[channel]?.prefix(reorderWindow + 1).firstIndex(where: { $0.bytes == bytes }) {
                let captured = capturedQueue[channel]!.remove(at: index)
                events.append(matchedEvent(channel: channel, frame: captured.frame, reordered: index > 0, timeNs: timeNs))
            } else {
                emittedQueue[channel, default: []].append(Pending(bytes: bytes, timeNs: timeNs))
                events += overflow(channel: channel, timeNs: timeNs)
            }
            return events
        }
        // Mutated in place through the dictionary: taking the queue out would copy it per frame.
        if capturedQueue[channel]?.isEmpty == false {
            let captured = capturedQueue[channel]!.removeFirst()
            events.append(compare(captured: captured, emitted: Pending(bytes: bytes, timeNs: timeNs), channel: channel, timeNs: timeNs))
        } else {
            emittedQueue[channel, default: []].append(Pending(bytes: bytes, timeNs: timeNs))
        }
        return events
    }

    /// The `frame_emitted` event: what every core's trace says when the core writes a frame, with
    /// or without a matcher comparing it (live hosts, `--frame-matching off`).
    public static func emittedEvent(core: TraceName, channel: String, bytes: [UInt8], packet: String, timeNs: Int64) -> TraceEvent {
        TraceEvent(timeNs: timeNs, core: core, event: .frameEmitted, payload: FrameBytesFields(device: channel, bytes: bytes, packet: packet))
    }

    /// The capture holds `bytes` written on `channel` in frame `frame` at `timeNs`. Returns its
    /// `frame_matched` or `frame_diverged` when an emitted frame was waiting; otherwise nothing yet.
    public mutating func captured(_ bytes: [UInt8], channel: String, frame: Int, timeNs: Int64) -> [TraceEvent] {
        let captured = Pending(bytes: bytes, timeNs: timeNs, frame: frame)
        if reorderWindow > 0 {
            if let index = emittedQueue[channel]?.prefix(reorderWindow + 1).firstIndex(where: { $0.bytes == bytes }) {
                emittedQueue[channel]!.remove(at: index)
                return [matchedEvent(channel: channel, frame: frame, reordered: index > 0, timeNs: timeNs)]
            }
            capturedQueue[channel, default: []].append(captured)
            return overflow(channel: channel, timeNs: timeNs)
        }
        if emittedQueue[channel]?.isEmpty == false {
            let emitted = emittedQueue[channel]!.removeFirst()
            return [compare(captured: captured, emitted: emitted, channel: channel, timeNs: timeNs)]
        }
        capturedQueue[channel, default: []].append(captured)
        return []
    }

    /// The link of `channel` went down in the capture: frames the core emitted that the capture
    /// never had by then never left the host's BLE stack (the live stack dropped them with the
    /// link), so they are `frame_unsent`, not divergences. Captured frames still waiting stay.
    public mutating func linkDown(channel: String, timeNs: Int64) -> [TraceEvent] {
        guard let waiting = emittedQueue.removeValue(forKey: channel), !waiting.isEmpty else { return [] }
        unsent += waiting.count
        return waiting.map {
            TraceEvent(timeNs: timeNs, core: core, event: .frameUnsent, payload: FrameBytesFields(device: channel, bytes: $0.bytes, packet: decode($0.bytes)))
        }
    }

    /// The capture is over: every frame still unpaired is a divergence (`missing` or `extra`).
    public mutating func finish(timeNs: Int64) -> [TraceEvent] {
        var events: [TraceEvent] = []
        for channel in capturedQueue.keys.sorted() {
            for captured in capturedQueue[channel] ?? [] {
                events.append(diverge(Divergence(
                    kind: "missing", channel: channel, frame: captured.frame, timeNs: timeNs,
                    expected: captured.bytes, emitted: [], expectedText: decode(captured.bytes), emittedText: "")))
            }
        }
        for channel in emittedQueue.keys.sorted() {
            for emitted in emittedQueue[channel] ?? [] {
                events.append(diverge(Divergence(
                    kind: "extra", channel: channel, frame: nil, timeNs: timeNs,
                    expected: [], emitted: emitted.bytes, expectedText: "", emittedText: decode(emitted.bytes))))
            }
        }
        capturedQueue = [:]
        emittedQueue = [:]
        return events
    }

    /// With a reorder window: once more frames wait on one side than the window allows, the oldest
    /// waiting pair is compared (a difference), or the oldest frame alone is missing or extra.
    private mutating func overflow(channel: String, timeNs: Int64) -> [TraceEvent] {
        var events: [TraceEvent] = []
        while (capturedQueue[channel]?.count ?? 0) > reorderWindow || (emittedQueue[channel]?.count ?? 0) > reorderWindow {
            let captured = capturedQueue[channel]?.isEmpty == false ? capturedQueue[channel]!.removeFirst() : nil
            let emitted = emittedQueue[channel]?.isEmpty == false ? emittedQueue[channel]!.removeFirst() : nil
            switch (captured, emitted) {
            case let (captured?, emitted?):
                events.append(compare(captured: captured, emitted: emitted, channel: channel, timeNs: timeNs))
            case let (captured?, nil):
                events.append(diverge(Divergence(kind: "missing", channel: channel, frame: captured.frame, timeNs: timeNs,
                                                 expected: captured.bytes, emitted: [], expectedText: decode(captured.bytes), emittedText: "")))
            case let (nil, emitted?):
                events.append(diverge(Divergence(kind: "extra", channel: channel, frame: nil, timeNs: timeNs,
                                                 expected: [], emitted: emitted.bytes, expectedText: "", emittedText: decode(emitted.bytes))))
            case (nil, nil):
                return events
            }
        }
        return events
    }

    private mutating func matchedEvent(channel: String, frame: Int?, reordered: Bool, timeNs: Int64) -> TraceEvent {
        matched += 1
        return TraceEvent(timeNs: timeNs, core: core, event: .frameMatched,
                          payload: FrameMatchedFields(device: channel, frame: Int64(frame ?? 0), reordered: reordered))
    }

    private mutating func compare(captured: Pending, emitted: Pending, channel: String, timeNs: Int64) -> TraceEvent {
        if captured.bytes == emitted.bytes {
            return matchedEvent(channel: channel, frame: captured.frame, reordered: false, timeNs: timeNs)
        }
        return diverge(Divergence(
            kind: "different", channel: channel, frame: captured.frame, timeNs: timeNs,
            expected: captured.bytes, emitted: emitted.bytes,
            expectedText: decode(captured.bytes), emittedText: decode(emitted.bytes)))
    }

    private mutating func diverge(_ divergence: Divergence) -> TraceEvent {
        diverged += 1
        if firstDivergence == nil { firstDivergence = divergence }
        var fields: [String: TraceValue] = [
            "device": .string(divergence.channel), "kind": .string(divergence.kind),
            "expected": .string(JSONLiteral.hex(divergence.expected)), "emitted": .string(JSONLiteral.hex(divergence.emitted)),
            "expected_packet": .string(divergence.expectedText), "emitted_packet": .string(divergence.emittedText),
        ]
        if let frame = divergence.frame { fields["frame"] = .int(Int64(frame)) }
        return TraceEvent(timeNs: divergence.timeNs, core: core, event: .frameDiverged, fields: fields)
    }
}
