import Foundation

/// The rules of the Chrome trace-event format that Perfetto's JSON importer relies on, checked on
/// a whole document: what the tests use in place of Perfetto's trace processor, which cannot be
/// installed here (its PyPI package downloads the binary from Google's storage on first use).
public struct ChromeTraceSchema {
    /// A rule an event broke.
    public struct Violation: Error, CustomStringConvertible {
        /// Which event, and the rule.
        public var description: String
    }

    /// A parsed document whose every event passed the checks.
    public struct Document {
        /// Every event, in document order.
        public var events: [[String: Any]]
        /// `pid/tid` → the track's name.
        public var threadNames: [String: String]

        /// The events of one phase (`i`, `X`, `b`, `e`, `C`, `M`).
        public func events(phase: String) -> [[String: Any]] { events.filter { $0["ph"] as? String == phase } }

        /// The name of the track `event` is on.
        public func threadName(of event: [String: Any]) -> String? {
            threadNames["\(event["pid"] as? Int ?? -1)/\(event["tid"] as? Int ?? -1)"]
        }
    }

    /// Parses `bytes` and checks every event: its phase is one Tether writes, `pid`/`tid` are
    /// integers, `ts` a number (all but metadata), `X` has a `dur` of 0 or more, instants a scope,
    /// every `b` has an `e` with the same category, id and name no earlier than it, counters
    /// carry numbers, metadata names a process or a thread, and every track used is named.
    public static func check(_ bytes: [UInt8]) throws -> Document {
        guard let root = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let events = root["traceEvents"] as? [[String: Any]] else {
            throw Violation(description: "the document is not an object with a traceEvents array")
        }
        var threadNames: [String: String] = [:]
        var processNames: Set<Int> = []
        var open: [String: Double] = [:]
        for (number, event) in events.enumerated() {
            func fail(_ why: String) -> Violation { Violation(description: "event \(number) \(event): \(why)") }
            guard let ph = event["ph"] as? String, ["i", "X", "b", "e", "C", "M"].contains(ph) else { throw fail("unknown ph") }
            guard let pid = event["pid"] as? Int, let tid = event["tid"] as? Int else { throw fail("pid and tid must be integers") }
            guard let name = event["name"] as? String else { throw fail("no name") }
            if ph == "M" {
                guard let args = event["args"] as? [String: Any] else { throw fail("metadata without args") }
                switch name {
                case "thread_name": threadNames["\(pid)/\(tid)"] = args["name"] as? String
                case "process_name": processNames.insert(pid)
                case "thread_sort_index", "process_sort_index":
                    guard args["sort_index"] is Int else { throw fail("sort_index must be an integer") }
                default: throw fail("unknown metadata \(name)")
                }
                continue
            }
            guard let ts = event["ts"] as? Double, ts.isFinite else { throw fail("ts must be a number") }
            guard processNames.contains(pid) else { throw fail("process \(pid) is not named before its first event") }
            switch ph {
            case "i":
                guard ["t", "p", "g"].contains(event["s"] as? String ?? "") else { throw fail("instant without scope") }
                guard threadNames["\(pid)/\(tid)"] != nil else { throw fail("thread \(pid)/\(tid) is not named") }
            case "X":
                guard let dur = event["dur"] as? Double, dur >= 0 else { throw fail("complete event without dur ≥ 0") }
                guard threadNames["\(pid)/\(tid)"] != nil else { throw fail("thread \(pid)/\(tid) is not named") }
            case "b", "e":
                guard let id = event["id"] as? Int else { throw fail("async event without an integer id") }
                let key = "\(event["cat"] as? String ?? "")/\(id)/\(name)"
                if ph == "b" {
                    guard open.updateValue(ts, forKey: key) == nil else { throw fail("async id \(key) begun twice") }
                } else {
                    guard let begin = open.removeValue(forKey: key) else { throw fail("async end without a begin") }
                    guard ts >= begin else { throw fail("async slice ends before it begins") }
                }
            case "C":
                guard let args = event["args"] as? [String: Any], !args.isEmpty,
                      args.values.allSatisfy({ $0 is Double || $0 is Int }) else { throw fail("counter without numeric args") }
            default: break
            }
        }
        guard open.isEmpty else { throw Violation(description: "async slices never ended: \(open.keys.sorted())") }
        return Document(events: events, threadNames: threadNames)
    }
}
