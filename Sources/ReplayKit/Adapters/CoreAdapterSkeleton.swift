import BehaviourTrace
import CaptureSet

/// What every adapter of a recorded core does the same way, whatever its core: reading the app's
/// `api-calls` records, keeping the live host's feed order, comparing what the core writes with
/// what the capture holds, merging deadlines, and the shared half of the final `summary`.
///
/// An adapter keeps one of these beside its core and its mapping (how a frame becomes the core's
/// input, how the core's actions become trace events), and asks it at each step:
///
/// ```swift
/// case .parsed(let call, let record) = skeleton.readCall(frame, now: now, decode: MyCall.init(record:))
/// for item in skeleton.route(call, frame: frame.number, record: record, now: now) { … apply item … }
/// ```
///
/// The skeleton never calls back into the adapter: everything it releases is handed back as
/// ``Routed`` items for the adapter to apply, in order. That keeps the order of effects in one
/// place (the adapter), where the byte-identical baselines were written, and keeps the skeleton a
/// plain value a sweep can copy and compare (``hasSameState(as:sameLink:sameCall:)``).
///
/// Why composition and not a generic adapter over a mapping protocol: a core's adapter feeds a
/// link input in the middle of reading a frame (a link going down before the frame's ATT records,
/// a peer frame between two of the core's own), and what it does with the next record can depend
/// on what that input made the core do. A generic adapter calling into its mapping while the
/// mapping called back to feed would need the mapping to give up its exclusive access mid-frame.
public struct CoreAdapterSkeleton<LinkInput, Call> {
    /// The core's name in the trace.
    public let core: TraceName
    /// How emitted frames are compared (`strict`, `responder` or `off`).
    public let matching: FrameMatchingMode
    /// The output comparison (read its counts; feed it through ``captured(_:channel:frame:now:)``
    /// and ``emitted(_:channel:now:)``).
    public private(set) var matcher: FrameMatcher
    /// The live host's feed order, when the capture's records carry one and the adapter keeps it.
    public private(set) var order: FeedOrderQueue<LinkInput, Call>?
    /// API calls (and host facts) the core was given.
    public private(set) var apiCalls = 0
    /// Records that did not read as the core's calls.
    public private(set) var malformedRecords = 0
    /// The capture timestamp of virtual time zero, learnt from every frame: what a responder's
    /// answers, which have no captured timestamp, are stamped from in the feed order.
    public private(set) var captureEpochNs: Int64 = 0
    /// Whether a record without a `core` member is this core's (the Connect IQ adapter's records
    /// predate the member).
    private let takesUnlabelledRecords: Bool

    /// A skeleton for `core`'s adapter.
    /// - Parameters:
    ///   - matcher: the comparison of the core's frames with the captured ones.
    ///   - feedOrder: the capture's planned calls; an empty plan (every set recorded before
    ///     `link_inputs`) orders nothing, and every input passes straight through.
    ///   - keepsFeedOrder: `false` where the adapter schedules the peer's answers itself
    ///     (a responder that follows the core's writes), so the live order does not apply.
    ///   - takesUnlabelledRecords: whether a record without `core` is this core's.
    public init(core: TraceName, matching: FrameMatchingMode, matcher: FrameMatcher, feedOrder: FeedOrderPrescan = .init(),
                keepsFeedOrder: Bool = true, takesUnlabelledRecords: Bool = false) {
        self.core = core
        self.matching = matching
        self.matcher = matcher
        self.takesUnlabelledRecords = takesUnlabelledRecords
        if keepsFeedOrder, !feedOrder.calls.isEmpty { order = FeedOrderQueue(planned: feedOrder.calls) }
    }

    /// Learns the capture time of virtual zero from `frame` (every frame tells it).
    public mutating func saw(_ frame: ReplayFrame) {
        captureEpochNs = frame.timestampNs &- frame.virtualTimeNs
    }

    // MARK: API-call records

    /// What an `api-calls` frame held for this core.
    public enum RecordReading {
        /// A record of another core: nothing to do.
        case otherCore
        /// Not a record, or not a call of this core: report the event (``malformedRecords`` counts it).
        case malformed(TraceEvent)
        /// This core's record, its members as read.
        case record([String: TraceValue])
        /// This core's call, decoded (``apiCalls`` counts it), with the record it came from.
        case parsed(Call, record: [String: TraceValue])
    }

    /// The frame's record, when it is this core's; a record that does not read is reported.
    public mutating func readRecord(_ frame: ReplayFrame, now: Duration) -> RecordReading {
        let record: [String: TraceValue]
        switch frame.apiCallRecord() {
        case .parsed(let members): record = members
        case .malformed(let detail): return .malformed(malformedRecord(frame: frame.number, detail: detail, now: now))
        }
        switch record["core"] {
        case .string(let named)?: guard named == core.text else { return .otherCore }
        case nil: guard takesUnlabelledRecords else { return .otherCore }
        case _?: guard takesUnlabelledRecords else { return .otherCore }
        }
        return .record(record)
    }

    /// The frame's call, when it is this core's: read by ``readRecord(_:now:)``, then decoded by
    /// `decode`, whose error is reported in words.
    public mutating func readCall<Failure: Error & CustomStringConvertible>(
        _ frame: ReplayFrame, now: Duration, decode: ([String: TraceValue]) throws(Failure) -> Call
    ) -> RecordReading {
        let reading = readRecord(frame, now: now)
        guard case .record(let record) = reading else { return reading }
        do throws(Failure) {
            let call = try decode(record)
            apiCalls += 1
            return .parsed(call, record: record)
        } catch {
            return .malformed(malformedRecord(frame: frame.number, detail: error.description, now: now))
        }
    }

    /// Counts a call decoded by the adapter itself (one it decodes only when it applies it).
    public mutating func countCall() { apiCalls += 1 }

    /// An `api_record_malformed` event for frame `frame`, counted.
    public mutating func malformedRecord(frame: Int, detail: String, now: Duration) -> TraceEvent {
        malformedRecords += 1
        return TraceEvent(timeNs: now.replayNanoseconds, core: core, event: .apiRecordMalformed, fields: [
            "frame": .int(Int64(frame)), "detail": .string(detail),
        ])
    }

    /// An `api_record_malformed` event for a record that came from `source` (a manifest's
    /// hand-written call, say), counted.
    public mutating func malformedRecord(source: String, detail: String, now: Duration) -> TraceEvent {
        malformedRecords += 1
        return TraceEvent(timeNs: now.replayNanoseconds, core: core, event: .apiRecordMalformed, fields: [
            "source": .string(source), "detail": .string(detail),
        ])
    }

    // MARK: feed order

    /// What to apply now, in order: the item routed when nothing is held, or what the feed order
    /// released. One item makes no array.
    public enum Routed: Sequence {
        /// Nothing to apply yet.
        case none
        /// Exactly one item.
        case one(FeedOrderQueue<LinkInput, Call>.Item)
        /// What the feed order released.
        case many([FeedOrderQueue<LinkInput, Call>.Item])

        /// Walks the items in order. Inlinable, with `makeIterator()`: an adapter walks one per
        /// frame from another module, and unspecialized, each walk looked up its generic metadata.
        public struct Iterator: IteratorProtocol {
            @usableFromInline var routed: Routed
            @usableFromInline var index = 0
            @inlinable init(routed: Routed) { self.routed = routed }
            /// The next item.
            @inlinable
            public mutating func next() -> FeedOrderQueue<LinkInput, Call>.Item? {
                defer { index += 1 }
                switch routed {
                case .none: return nil
                case .one(let item): return index == 0 ? item : nil
                case .many(let items): return index < items.count ? items[index] : nil
                }
            }
        }

        /// Walks the items in order.
        @inlinable public func makeIterator() -> Iterator { Iterator(routed: self) }
    }

    /// A call from the capture's frame `frame`: at once, or when the link inputs the live core had
    /// been given before it (the record's `link_inputs`) have been fed.
    public mutating func route(_ call: Call, frame: Int, record: [String: TraceValue], now: Duration) -> Routed {
        guard order != nil else { return .one(.call(call)) }
        return .many(order!.call(call, frame: frame, linkInputs: FeedOrderPrescan.linkInputs(of: record), nowNs: now.replayNanoseconds))
    }

    /// A link input captured at `timestampNs`: at once, or after the calls the live core had been
    /// given before it.
    public mutating func route(_ input: LinkInput, timestampNs: Int64, now: Duration) -> Routed {
        guard order != nil else { return .one(.link(input)) }
        return .many(order!.link(input, timestampNs: timestampNs, nowNs: now.replayNanoseconds))
    }

    /// A responder's answer, a link input like a captured one (so the count of link inputs the
    /// captured calls name stays the live one), stamped at `now` on the capture's clock.
    public mutating func routeAnswer(_ input: LinkInput, now: Duration) -> Routed {
        route(input, timestampNs: captureEpochNs &+ now.replayNanoseconds, now: now)
    }

    /// What the feed order held too long, released now.
    public mutating func releaseDue(now: Duration) -> Routed {
        guard order != nil else { return .none }
        return .many(order!.releaseDue(nowNs: now.replayNanoseconds))
    }

    /// Everything still held: the capture is over.
    public mutating func releaseAll() -> Routed {
        guard order != nil else { return .none }
        return .many(order!.releaseAll())
    }

    /// The earliest of the core's deadline, the feed order's next release, and `first` and
    /// `second` (virtual nanoseconds: a responder's next answer, a hand-written call).
    ///
    /// Two named candidates rather than a variadic list: the engine asks every adapter's deadline
    /// after every frame, and a variadic list is an array.
    public func nextDeadline(core deadline: Duration?, _ first: Int64? = nil, _ second: Int64? = nil) -> Duration? {
        func earlier(_ earliest: Duration?, _ ns: Int64?) -> Duration? {
            guard let ns else { return earliest }
            let at = Duration.nanoseconds(ns)
            return earliest.map { min($0, at) } ?? at
        }
        return earlier(earlier(earlier(deadline, first), second), order?.nextReleaseNs)
    }

    // MARK: frame matching

    /// A frame the recorded side wrote, captured in frame `frame`, for the comparison (nothing
    /// when matching is `off`).
    public mutating func captured(_ bytes: [UInt8], channel: String, frame: Int, now: Duration) -> [TraceEvent] {
        guard matching != .off else { return [] }
        return matcher.captured(bytes, channel: channel, frame: frame, timeNs: now.replayNanoseconds)
    }

    /// A frame the core wrote, for the comparison. Call it only when matching is not `off`: an
    /// adapter reports the write in its own words then.
    public mutating func emitted(_ bytes: [UInt8], channel: String, now: Duration) -> [TraceEvent] {
        matcher.emitted(bytes, channel: channel, timeNs: now.replayNanoseconds)
    }

    /// The capture's link of `channel` went down (nothing when matching is `off`).
    public mutating func linkDown(channel: String, now: Duration) -> [TraceEvent] {
        guard matching != .off else { return [] }
        return matcher.linkDown(channel: channel, timeNs: now.replayNanoseconds)
    }

    // MARK: the end

    /// Unpaired frames as divergences, then the `summary` event: `fields` (the core's own counts)
    /// with what every adapter reports — `api_calls`, `frame_matching`, `frames_matched`,
    /// `frames_diverged`, `frames_unsent` (when `reportsUnsent`), `malformed_api_records` (when
    /// any), `responder_made` (when there is a responder), `first_divergence`, and the feed
    /// order's counts. Apply ``releaseAll()``'s items first.
    public mutating func finish(now: Duration, fields: [String: TraceValue], responderMade: Int? = nil, reportsUnsent: Bool = false) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events = matching == .off ? [] : matcher.finish(timeNs: timeNs)
        var summary = fields
        summary["api_calls"] = .int(Int64(apiCalls))
        summary["frame_matching"] = .string(matching.rawValue)
        summary["frames_matched"] = .int(Int64(matcher.matched))
        summary["frames_diverged"] = .int(Int64(matcher.diverged))
        if reportsUnsent { summary["frames_unsent"] = .int(Int64(matcher.unsent)) }
        if malformedRecords > 0 { summary["malformed_api_records"] = .int(Int64(malformedRecords)) }
        if let responderMade { summary["responder_made"] = .int(Int64(responderMade)) }
        if let first = matcher.firstDivergence { summary["first_divergence"] = .string(first.description) }
        if let order { summary.merge(order.summaryFields) { a, _ in a } }
        events.append(TraceEvent(timeNs: timeNs, core: core, event: .summary, fields: summary))
        return events
    }

    /// Whether `other` will route, compare and count the same from here on: the same comparison
    /// state and the same feed order (held items compared with `sameLink` and `sameCall`). The
    /// counts only the summary reports are left out.
    public func hasSameState(as other: Self, sameLink: (LinkInput, LinkInput) -> Bool, sameCall: (Call, Call) -> Bool) -> Bool {
        guard matcher.hasSameState(as: other.matcher) else { return false }
        switch (order, other.order) {
        case (nil, nil): return true
        case let (a?, b?): return a.hasSameState(as: b, sameLink: sameLink, sameCall: sameCall)
        default: return false
        }
    }
}

extension CoreAdapterSkeleton: Sendable where LinkInput: Sendable, Call: Sendable {}
