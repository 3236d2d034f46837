// The script fuzzer compiles this file with BehaviourTrace's sources into one module (CI/fuzz/run).
#if canImport(BehaviourTrace)
import BehaviourTrace
#endif
import CaptureSet
import Foundation
import Yams
import Durations

/// A live host's script: the app's actions, in order (docs/live-hosts.md). Each host names the
/// calls it knows (``MessagingLiveHost/scriptCalls``, ``SessionLiveHost/scriptCalls``); other
/// top-level keys than `steps` are the host's settings (``settings``).
///
/// ```yaml
/// steps:
///   - register: {app: 0180E520-5F7E-11E4-9803-0800200C9A66}
///   - app_status: {app: 0180E520-5F7E-11E4-9803-0800200C9A66}
///   - send: {app: 0180E520-5F7E-11E4-9803-0800200C9A66, message: ["hello pi", 3.14159]}
///   - wait_for: completion        # the next event of that name
///   - open_app: {app: 0180E520-5F7E-11E4-9803-0800200C9A66}
///   - unregister: {app: 0180E520-5F7E-11E4-9803-0800200C9A66}
///   - wait: 2s
/// ```
public struct LiveScript: Sendable, Hashable {
    /// One step.
    public enum Step: Sendable, Hashable {
        /// An SDK call. `arguments` are the step's mapping (`app`, `device`, `message`, `url`…).
        case call(name: String, arguments: [String: TraceValue])
        /// Wait until the next trace event named `event` (after this step started), at most `timeout`.
        case waitFor(event: String, timeout: Duration)
        /// Let time pass, handling the link and timers meanwhile.
        case wait(Duration)
    }

    /// The steps in order.
    public var steps: [Step]
    /// Top-level keys other than `steps` (a host's settings, e.g. the session watch's `replies`).
    public var settings: [String: TraceValue]

    /// A script from its steps.
    public init(steps: [Step], settings: [String: TraceValue] = [:]) {
        self.steps = steps
        self.settings = settings
    }

    /// Parses script YAML whose call steps are among `callNames`. `file` names the script in errors.
    public init(yaml text: String, file: String, callNames: Set<String>) throws(LiveScriptError) {
        let root: Any?
        do {
            // Within the script budget first: a few hundred bytes of nested aliases would
            // otherwise expand to gigabytes as the steps are built.
            root = try BudgetedYAML.compose(text, limits: .liveScript).map(Self.plainValue)
        } catch let error as YAMLLimitError {
            throw LiveScriptError(file: file, step: nil, message: "\(error)")
        } catch let error as LiveScriptError {
            throw LiveScriptError(file: file, step: nil, message: error.message)
        } catch {
            throw LiveScriptError(file: file, step: nil, message: "is not valid YAML: \(error)")
        }
        guard let mapping = root as? [String: Any], let list = mapping["steps"] else {
            throw LiveScriptError(file: file, step: nil, message: "must be a mapping with a 'steps' list, e.g. `steps: [{wait: 1s}]`")
        }
        guard let items = list as? [Any] else {
            throw LiveScriptError(file: file, step: nil, message: "'steps' must be a list")
        }
        var steps: [Step] = []
        for (index, item) in items.enumerated() {
            let number = index + 1
            func fail(_ message: String) -> LiveScriptError { LiveScriptError(file: file, step: number, message: message) }
            // `- wait_for: completion` is a one-key mapping; a bare string step is a call without arguments.
            let name: String
            let argument: Any?
            if let single = item as? [String: Any], single.count == 1, let (key, value) = single.first {
                name = key
                argument = value
            } else if let bare = item as? String {
                name = bare
                argument = nil
            } else {
                throw fail("must be a one-key mapping such as `send: {app: …, message: …}` or `wait: 2s`")
            }
            switch name {
            case "wait":
                guard let duration = argument.flatMap(Self.duration(of:)) else {
                    throw fail("wait needs a duration such as 500ms, 2s, 1m or a number of seconds")
                }
                steps.append(.wait(duration))
            case "wait_for":
                if let event = argument as? String {
                    steps.append(.waitFor(event: event, timeout: .seconds(30)))
                } else if let options = argument as? [String: Any], let event = options["event"] as? String {
                    var timeout = Duration.seconds(30)
                    if let written = options["timeout"] {
                        guard let parsed = Self.duration(of: written) else { throw fail("wait_for's timeout must be a duration such as 10s") }
                        timeout = parsed
                    }
                    steps.append(.waitFor(event: event, timeout: timeout))
                } else {
                    throw fail("wait_for needs an event name, e.g. `wait_for: completion` or `wait_for: {event: completion, timeout: 10s}`")
                }
            default:
                guard callNames.contains(name) else {
                    throw fail("unknown step '\(name)'; known: \(callNames.sorted().joined(separator: ", ")), wait, wait_for")
                }
                var arguments: [String: TraceValue] = [:]
                if let argument {
                    guard let map = argument as? [String: Any] else { throw fail("\(name) takes a mapping, e.g. `\(name): {app: UUID}`") }
                    for (key, value) in map {
                        do throws(LiveScriptError) {
                            arguments[key] = try Self.traceValue(value, depth: 0)
                        } catch {
                            throw fail("\(name).\(key): \(error.message)")
                        }
                    }
                }
                steps.append(.call(name: name, arguments: arguments))
            }
        }
        self.steps = steps
        var settings: [String: TraceValue] = [:]
        for (key, value) in mapping where key != "steps" {
            do throws(LiveScriptError) {
                settings[key] = try Self.traceValue(value, depth: 0)
            } catch {
                throw LiveScriptError(file: file, step: nil, message: "\(key): \(error.message)")
            }
        }
        self.settings = settings
    }

    /// A YAML node as plain Swift values (`[String: Any]`, `[Any]`, scalars as Yams constructs
    /// them). Not Yams' own `Node.any`: given a mapping used as a key (`{context, {mode: dark}}`)
    /// it traps, and the script fuzzer found that in under a minute. A script's keys are words, so
    /// a key that is not a scalar is refused with its line.
    static func plainValue(_ node: Node) throws -> Any {
        switch node {
        case .scalar(let scalar):
            let value = Constructor.default.any(from: node)
            // Only a plain scalar is a number; a quoted one is text whatever it spells. A plain
            // number that does not fit what YAML's loader makes of it is kept apart, so the
            // message check refuses it rather than sending text or infinity.
            guard scalar.style == .plain || scalar.style == .any else { return value }
            switch Resolver.default.resolveTag(of: node) {
            case .int where value is String:
                return OutOfRangeNumber(text: scalar.string, kind: .integer)
            case .float:
                let text = scalar.string.lowercased()
                if let double = value as? Double, !double.isFinite, !text.hasSuffix("inf"), !text.hasSuffix("nan") {
                    return OutOfRangeNumber(text: scalar.string, kind: .float)
                }
                return value
            default:
                return value
            }
        case .sequence(let sequence):
            return try sequence.map(plainValue)
        case .mapping(let mapping):
            var out: [String: Any] = [:]
            for (key, value) in mapping {
                guard case .scalar(let scalar) = key else {
                    let line = key.mark.map { " (line \($0.line))" } ?? ""
                    throw LiveScriptError(file: "", step: nil, message: "has a list or a mapping where a key should be\(line); keys are words such as `send` or `app`")
                }
                out[scalar.string] = try plainValue(value)
            }
            return out
        case .alias:
            // Yams resolves aliases while composing; an alias node left over stands for nothing.
            return NSNull()
        }
    }

    /// Reads a script file whose call steps are among `callNames`.
    public static func load(_ path: String, callNames: Set<String>) throws(LiveScriptError) -> LiveScript {
        let limits = YAMLLimits.liveScript
        if let size = FileIO.size(path), size > UInt64(limits.maximumBytes) {
            throw LiveScriptError(file: path, step: nil, message: "\(YAMLLimitError(limit: .bytes, maximum: limits.maximumBytes, line: nil))")
        }
        let bytes: [UInt8]
        do {
            // A regular file only: a FIFO given as the script would block the run before it starts.
            bytes = try FileIO.readAll(path)
        } catch {
            throw LiveScriptError(file: path, step: nil, message: "cannot be read: \(error.ioReason ?? error.description)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw LiveScriptError(file: path, step: nil, message: "is not UTF-8 text")
        }
        return try LiveScript(yaml: text, file: path, callNames: callNames)
    }

    /// `500ms`, `2s`, `1.5s`, `2m`, `1h`, or a plain number of seconds (``DurationText``), from 0
    /// to a year.
    public static func duration(_ text: String) -> Duration? {
        guard let seconds = DurationText.seconds(text), seconds >= 0, seconds <= 86_400 * 365 else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// A duration as YAML gave it: text (``duration(_:)``), or a number of seconds, read as the
    /// number it is (its text could be `1e-05`, which is not a duration as written).
    static func duration(of value: Any) -> Duration? {
        if let text = value as? String { return duration(text) }
        guard !(value is Bool) else { return nil }
        let seconds: Double
        if let number = value as? Int {
            seconds = Double(number)
        } else if let number = value as? Double {
            seconds = number
        } else {
            return nil
        }
        guard seconds.isFinite, seconds >= 0, seconds <= 86_400 * 365 else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    static func traceValue(_ value: Any, depth: Int) throws(LiveScriptError) -> TraceValue {
        guard depth < 64 else { throw LiveScriptError(file: "", step: nil, message: "nested more than 64 levels deep") }
        switch value {
        case let b as Bool: return .bool(b)
        case let i as Int: return .int(Int64(i))
        case let d as Double: return .double(d)
        case let number as OutOfRangeNumber:
            // Monkey C's widest integer is a 64-bit Long and its widest float a Double: a plain
            // number beyond them would otherwise go out as text or as infinity.
            switch number.kind {
            case .integer:
                throw LiveScriptError(file: "", step: nil, message: "\(number.text) is an integer outside Monkey C's range (a Long holds \(Int64.min) to \(Int64.max)); "
                    + "write one in that range, or a float such as 1.0e+23 to send a Double")
            case .float:
                throw LiveScriptError(file: "", step: nil, message: "\(number.text) is beyond a Double's range (about ±1.8e+308); "
                    + "write a smaller number, or .inf on purpose")
            }
        case let s as String:
            // Quoted text stays text, whatever it spells ("100000000000000000000000" included).
            return .string(s)
        case is NSNull: return .null
        case let list as [Any]:
            var out: [TraceValue] = []
            for item in list { out.append(try traceValue(item, depth: depth + 1)) }
            return .array(out)
        case let map as [String: Any]:
            var out: [String: TraceValue] = [:]
            for (key, item) in map { out[key] = try traceValue(item, depth: depth + 1) }
            return .object(out)
        default:
            throw LiveScriptError(file: "", step: nil, message: "a value of type \(type(of: value)) is not a message value")
        }
    }
}

/// A plain YAML number of a script that does not fit the value YAML's loader makes of it: an
/// integer beyond 64 bits (which the loader would leave as text) or a float beyond a Double
/// (which it would make infinite).
struct OutOfRangeNumber {
    enum Kind { case integer, float }
    var text: String
    var kind: Kind
}

/// A script that cannot be read: which file, which step, what is wrong.
public struct LiveScriptError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The script file.
    public var file: String
    /// The 1-based step, when the error is in one.
    public var step: Int?
    /// What is wrong.
    public var message: String

    /// `script.yaml: step 3: …`.
    public var description: String {
        "\(file): " + (step.map { "step \($0): " } ?? "") + message
    }
}
