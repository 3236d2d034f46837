import BehaviourTrace
#if canImport(CaptureSet)
import CaptureSet
#endif

/// The selectors of one evaluator's expectations, each held once however many expectations name
/// it, and whether each matches the event being observed: worked out once per event, before the
/// checks are shown it, for the selectors that name its event name.
///
/// A manifest names the same selector in several expectations (`datapoint where name=v1/1/yaw`
/// is counted, timed for its rate, searched for gaps and range-checked); matching it anew in each
/// check, copying the selector out of the check every time, was most of the cost of checking a
/// plugin trace.
final class SharedSelectors {
    /// Each selector once, in the order first named, ready to match; a ``SharedSelector`` is an
    /// index here.
    private var compiledStore: [CompiledSelector] = []
    /// The same, matched unretained (``compiledStore`` holds them).
    private var compiled: [Unmanaged<CompiledSelector>] = []
    private var ids: [Expectation.Selector: Int] = [:]
    /// Whether each selector matches the event observed now (meaningful only for the selectors
    /// of its event name: the others do not match it). Unchecked: read and written only by the
    /// one evaluator, never while it is being changed.
    @exclusivity(unchecked) private var matched: UnsafeMutablePointer<Bool>
    private var capacity: Int

    init() {
        capacity = 8
        matched = .allocate(capacity: capacity)
        matched.initialize(repeating: false, count: capacity)
    }

    deinit { matched.deallocate() }

    /// `selector`, held once.
    func share(_ selector: Expectation.Selector) -> SharedSelector {
        if let id = ids[selector] { return SharedSelector(id: id, selector: selector, table: self) }
        let id = compiledStore.count
        let ready = CompiledSelector(selector)
        compiledStore.append(ready)
        compiled.append(Unmanaged.passUnretained(ready))
        ids[selector] = id
        if id >= capacity {
            let grown = UnsafeMutablePointer<Bool>.allocate(capacity: capacity * 2)
            grown.initialize(repeating: false, count: capacity * 2)
            grown.update(from: matched, count: capacity)
            matched.deallocate()
            matched = grown
            capacity *= 2
        }
        return SharedSelector(id: id, selector: selector, table: self)
    }

    /// The selectors that name each event name, by index.
    func idsByEvent() -> [TraceName: [Int]] {
        var byEvent: [TraceName: [Int]] = [:]
        for (id, selector) in compiledStore.enumerated() { byEvent[selector.event, default: []].append(id) }
        return byEvent
    }

    /// Works out, for `event`, whether each selector of `ids` (those naming its event name)
    /// matches it.
    @inline(__always)
    func observe(_ event: TraceEvent, selectors ids: UnsafeBufferPointer<Int>) {
        for id in ids { matched[id] = compiled[id]._withUnsafeGuaranteedRef { $0.matches(event) } }
    }

    /// Marks each selector of `ids` as matching nothing: done to the selectors of the previous event
    /// name when the event name changes, so a check that also names another event name (an
    /// `order`'s next step, a `max_gap`'s start) never reads an earlier event's verdict.
    func clear(_ ids: [Int]) {
        for id in ids { matched[id] = false }
    }

    /// Whether selector `id` matches the event observed now.
    @inline(__always)
    func matches(_ id: Int) -> Bool { matched[id] }
}

/// A selector laid out for matching: as ``Expectation/Selector/matches(_:)``, less the event name,
/// which the evaluator has matched already; the conditions in an array, not a dictionary.
private final class CompiledSelector {
    let event: TraceName
    let core: TraceName?
    let conditions: [(key: String, value: Expectation.Value)]

    init(_ selector: Expectation.Selector) {
        event = TraceName(selector.event)
        core = selector.core.map { TraceName($0) }
        conditions = selector.where.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
    }

    /// Whether `event`, whose event name is the selector's, is one it chooses.
    func matches(_ event: TraceEvent) -> Bool {
        if let core, event.core != core { return false }
        for condition in conditions where !condition.value.matches(event.field(condition.key)) { return false }
        return true
    }
}

/// A selector of an expectation, matched through the evaluator's ``SharedSelectors``.
struct SharedSelector {
    let id: Int
    /// The selector as the manifest gives it.
    let selector: Expectation.Selector
    /// Unretained: the evaluator that made the checks holding this holds the table for as long as
    /// they live, and a retain and release on every match was a large share of checking a trace.
    unowned(unsafe) let table: SharedSelectors

    /// Whether the event being observed is one this selector chooses (as
    /// ``Expectation/Selector/matches(_:)`` says of it).
    @inline(__always)
    func matches(_ event: TraceEvent) -> Bool { table.matches(id) }

    /// The event name it chooses.
    var event: TraceName { TraceName(selector.event) }
    /// As ``Expectation/Selector/summary``.
    var summary: String { selector.summary }
}
