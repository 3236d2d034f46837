import BehaviourTrace
import CaptureKit
import CaptureSet

/// The order in which a live host fed its core, kept in replay (docs/replay-engine.md, "Feed
/// order").
///
/// A live host records each API call (and each host fact) itself, on CLOCK_REALTIME, while the
/// peer's traffic is stamped by another path (the H4 tap, libpcap) with another delay. When the
/// app acts while the peer's traffic is in flight, the timestamps can put a call and a link input
/// in the other order than the one the live core saw. So every record a live host writes carries
/// `link_inputs`: how many link inputs (everything the core is fed from the link: a link coming up
/// or going down, a peer frame, an MQTT packet) the live core had been given before the call.
/// Replay feeds each core in that order, whatever the timestamps say:
/// - a call stamped **before** a link input the live core had already consumed (`link_inputs`
///   greater than what replay has fed) is held back until that many link inputs have been fed,
///   then applied at the instant of the last of them;
/// - a link input stamped **before** a call the live core had already been given (the call's
///   `link_inputs` not greater than what replay has fed) is held back until that call has been
///   applied, then fed at the call's instant. The calls ahead are known from
///   ``FeedOrderPrescan``.
///
/// Nothing is held longer than ``maximumHold`` of virtual time (a record whose count does not fit
/// the capture, say after a fault dropped a peer frame): it is then released as it is and counted
/// in ``forcedReleases``. Records without `link_inputs` (every set recorded before the field)
/// impose nothing: with no planned call, every input passes straight through.
public struct FeedOrderQueue<Link, Call> {
    /// What to feed the core next, in order.
    public enum Item {
        /// A link input.
        case link(Link)
        /// An API call or host fact.
        case call(Call)
    }

    /// How long replay holds an input back at most, in virtual time: far more than the few
    /// milliseconds between the live host's stamp and the tap's, far less than any timer a core
    /// keeps.
    public static var maximumHold: Duration { .seconds(1) }

    private let planned: [FeedOrderPrescan.PlannedCall]
    private var nextPlanned = 0
    private let holdNs: Int64
    private var heldCalls: [(call: Call, need: Int?, releaseNs: Int64)] = []
    private var heldLinks: [(link: Link, timestampNs: Int64, releaseNs: Int64)] = []

    /// Link inputs handed to the core so far.
    /// Whether `other` will hold and release what comes exactly as this queue does: the same
    /// planned call next, the same link inputs fed, the same calls and link inputs held (compared
    /// with `sameLink` and `sameCall`). The counts the summary reports are left out.
    public func hasSameState(as other: Self, sameLink: (Link, Link) -> Bool, sameCall: (Call, Call) -> Bool) -> Bool {
        nextPlanned == other.nextPlanned && linkInputsFed == other.linkInputsFed
            && heldCalls.count == other.heldCalls.count && heldLinks.count == other.heldLinks.count
            && zip(heldCalls, other.heldCalls).allSatisfy { $0.need == $1.need && $0.releaseNs == $1.releaseNs && sameCall($0.call, $1.call) }
            && zip(heldLinks, other.heldLinks).allSatisfy { $0.timestampNs == $1.timestampNs && $0.releaseNs == $1.releaseNs && sameLink($0.link, $1.link) }
    }

    public private(set) var linkInputsFed = 0
    /// Calls applied later than their captured instant, to wait for link inputs.
    public private(set) var callsHeld = 0
    /// Link inputs fed later than their captured instant, to wait for a call.
    public private(set) var linksHeld = 0
    /// Inputs released at ``maximumHold`` because what they waited for did not come.
    public private(set) var forcedReleases = 0

    /// A queue for the calls `planned` (a ``FeedOrderPrescan``'s, of the adapter's core).
    public init(planned: [FeedOrderPrescan.PlannedCall], maximumHold: Duration = Self.maximumHold) {
        self.planned = planned.sorted { $0.frame < $1.frame }
        self.holdNs = maximumHold.replayNanoseconds
    }

    /// The counts for an adapter's `summary`: `feed_order_calls_held`, `feed_order_links_held`,
    /// `feed_order_forced_releases`.
    public var summaryFields: [String: TraceValue] {
        ["feed_order_calls_held": .int(Int64(callsHeld)), "feed_order_links_held": .int(Int64(linksHeld)),
         "feed_order_forced_releases": .int(Int64(forcedReleases))]
    }

    /// Whether any record of the capture carries `link_inputs`; when not, the queue changes nothing.
    public var ordersAnything: Bool { !planned.isEmpty }

    /// A link input at its captured instant. `timestampNs` is the frame's capture timestamp (the
    /// clock ``FeedOrderPrescan`` reads calls with), `nowNs` the virtual time.
    /// - Returns: what to feed now, in order (maybe nothing: the input is held).
    public mutating func link(_ link: Link, timestampNs: Int64, nowNs: Int64) -> [Item] {
        if !heldLinks.isEmpty || awaitsCall(linkStampedAt: timestampNs) {
            linksHeld += 1
            heldLinks.append((link, timestampNs, nowNs &+ holdNs))
            return []
        }
        return feed(link)
    }

    /// A call (or host fact) from the `api-calls` frame `frame`, carrying `linkInputs` (`nil`: the
    /// record has no `link_inputs`).
    /// - Returns: what to feed now, in order (maybe nothing: the call is held).
    public mutating func call(_ call: Call, frame: Int, linkInputs: Int?, nowNs: Int64) -> [Item] {
        while nextPlanned < planned.count, planned[nextPlanned].frame <= frame { nextPlanned += 1 }
        let mustWait = linkInputs.map { $0 > linkInputsFed } ?? false
        if !heldCalls.isEmpty || mustWait {
            callsHeld += 1
            heldCalls.append((call, linkInputs, nowNs &+ holdNs))
            return []
        }
        return [.call(call)] + releaseLinks()
    }

    /// When a held input must be released at the latest; `nil` when nothing is held.
    public var nextReleaseNs: Int64? {
        switch (heldCalls.first?.releaseNs, heldLinks.first?.releaseNs) {
        case let (a?, b?): min(a, b)
        case let (a?, nil): a
        case let (nil, b?): b
        case (nil, nil): nil
        }
    }

    /// Releases what has been held for ``maximumHold`` by `nowNs`, and what that unblocks.
    public mutating func releaseDue(nowNs: Int64) -> [Item] {
        var items: [Item] = []
        while true {
            if let first = heldCalls.first, first.releaseNs <= nowNs {
                heldCalls.removeFirst()
                forcedReleases += 1
                items.append(.call(first.call))
                items += drainCalls()
                items += releaseLinks()
            } else if let first = heldLinks.first, first.releaseNs <= nowNs {
                heldLinks.removeFirst()
                forcedReleases += 1
                items += feed(first.link)
                items += releaseLinks()
            } else {
                return items
            }
        }
    }

    /// Everything still held, in order (the capture is over).
    public mutating func releaseAll() -> [Item] {
        var items: [Item] = []
        forcedReleases += heldCalls.count + heldLinks.count
        for held in heldCalls { items.append(.call(held.call)) }
        for held in heldLinks { items.append(.link(held.link)) }
        heldCalls.removeAll()
        heldLinks.removeAll()
        return items
    }

    /// Whether the next call still to come was given to the live core before the link input that
    /// would be number `linkInputsFed + 1`, and comes soon enough to wait for.
    private func awaitsCall(linkStampedAt timestampNs: Int64) -> Bool {
        guard nextPlanned < planned.count else { return false }
        let next = planned[nextPlanned]
        return next.linkInputs <= linkInputsFed && next.timestampNs &- timestampNs <= holdNs
    }

    private mutating func feed(_ link: Link) -> [Item] {
        linkInputsFed += 1
        return [.link(link)] + drainCalls()
    }

    /// Held calls whose link inputs have all been fed, in order.
    private mutating func drainCalls() -> [Item] {
        var items: [Item] = []
        while let first = heldCalls.first, (first.need ?? 0) <= linkInputsFed {
            heldCalls.removeFirst()
            items.append(.call(first.call))
        }
        return items
    }

    /// Held link inputs no longer waiting for a call.
    private mutating func releaseLinks() -> [Item] {
        var items: [Item] = []
        while heldCalls.isEmpty, let first = heldLinks.first, !awaitsCall(linkStampedAt: first.timestampNs) {
            heldLinks.removeFirst()
            items += feed(first.link)
        }
        return items
    }
}

extension FeedOrderQueue: Sendable where Link: Sendable, Call: Sendable {}
extension FeedOrderQueue.Item: Sendable where Link: Sendable, Call: Sendable {}

/// The calls of one core that carry `link_inputs`, read from a capture before replay, so replay
/// knows when a link input must wait for a call that comes later in the file
/// (``FeedOrderQueue``).
public struct FeedOrderPrescan: Sendable {
    /// The record key a live host writes (docs/capture-set.md).
    public static let recordKey = "link_inputs"

    /// One call a live host recorded with its feed order.
    public struct PlannedCall: Sendable, Hashable {
        /// Its frame number in the capture.
        public var frame: Int
        /// Its capture timestamp, nanoseconds since the Unix epoch.
        public var timestampNs: Int64
        /// Link inputs the live core had been given before it.
        public var linkInputs: Int

        /// A planned call.
        public init(frame: Int, timestampNs: Int64, linkInputs: Int) {
            self.frame = frame
            self.timestampNs = timestampNs
            self.linkInputs = linkInputs
        }
    }

    /// `core`'s calls with `link_inputs`, in capture order.
    public var calls: [PlannedCall] = []

    /// An empty prescan: no call is ordered.
    public init(calls: [PlannedCall] = []) { self.calls = calls }

    /// What an integration's `makeAdapter` reads: `core`'s planned calls when the set has an
    /// `api-calls` interface, its captured calls are delivered (not replaced by scheduled ones)
    /// and `honoured` (else none, and the adapter feeds in capture order).
    /// - Throws: ``ReplayError/capture(_:)`` when the capture cannot be read.
    public static func scan(for context: IntegrationContext, core: String, takesUnlabelled: Bool = false, honoured: Bool = true) throws(ReplayError) -> FeedOrderPrescan {
        let interfaces = context.manifest.interfaces
        guard honoured, !context.capturedCallsReplaced, interfaces.contains(where: { $0.role == .apiCalls }) else { return FeedOrderPrescan() }
        do throws(CaptureError) {
            return try scan(capturePath: context.capturePath, interfaces: interfaces, core: core, takesUnlabelled: takesUnlabelled)
        } catch {
            throw .capture(error)
        }
    }

    /// The `link_inputs` of a record: a whole number from 0 up, else `nil`.
    public static func linkInputs(of record: [String: TraceValue]) -> Int? {
        guard case .int(let n)? = record[recordKey], n >= 0 else { return nil }
        return Int(exactly: n)
    }

    /// Reads the `api-calls` frames of `capturePath` (an interface whose role is `api-calls`, or
    /// an undescribed LINKTYPE_USER0 one) and keeps `core`'s records that carry `link_inputs`.
    /// `takesUnlabelled`: records without `core` are this core's (messaging). Only frames whose
    /// bytes contain `"link_inputs"` are parsed, so a capture recorded before the field costs one
    /// pass over its frames.
    public static func scan(capturePath: String, interfaces: [ManifestInterface], core: String, takesUnlabelled: Bool = false) throws(CaptureError) -> FeedOrderPrescan {
        let reader = try CaptureFile.open(path: capturePath)
        let described = Dictionary(interfaces.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        let needle = Array("\"\(recordKey)\"".utf8)
        var result = FeedOrderPrescan()
        var readsInterface = PerInterface<Bool>()
        // Frames are borrowed from the reader: only a record holding the key is copied and parsed.
        try reader.forEachFrameView { view in
            guard view.interfaceIndex < reader.interfaces.count else { return }
            let isAPICalls = readsInterface.value(for: view.interfaceIndex) {
                if let role = described[view.interfaceIndex]?.role { return role == .apiCalls }
                return reader.interfaces[view.interfaceIndex].linkType == .user0
            }
            guard isAPICalls, contains(view.data, needle) else { return }
            // A record that is not JSON is the adapter's to report when it meets it.
            guard let record = try? JSONLiteral.parseObject(Array(view.data), label: "frame \(view.number)") else { return }
            switch record["core"] {
            case .string(let named)? where named == core: break
            case nil where takesUnlabelled: break
            default: return
            }
            guard let count = linkInputs(of: record) else { return }
            result.calls.append(PlannedCall(frame: view.number, timestampNs: view.timestampNs, linkInputs: count))
        }
        return result
    }

    private static func contains(_ bytes: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count, let first = needle.first else { return false }
        var i = 0
        let last = bytes.count - needle.count
        while i <= last {
            if bytes[i] == first, bytes[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}
