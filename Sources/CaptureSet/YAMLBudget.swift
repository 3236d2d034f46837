// libyaml's event parser: Yams builds and vendors libyaml as its `CYaml` module but offers no
// event-level API, and its composer is where the damage happens (aliases copied into every place
// they are used when a document is decoded, one Swift stack frame per level of nesting).
import CYaml
import Foundation
import Yams

/// How large a YAML document Tether accepts before it builds anything from it.
///
/// A manifest or a live script is read by people and written by tools, and both can be hostile:
/// 545 bytes of nested aliases expand to gigabytes when decoded ("billion laughs"), and a few
/// hundred thousand `[` overflow the composer's stack. The budget is checked on libyaml's event
/// stream, which costs one pass over the text and no tree: nodes are counted as they would be
/// after expanding every alias, so an alias of a large anchor costs what it expands to.
///
/// Each limit can be raised for one run through an environment variable (the error names it).
public struct YAMLLimits: Sendable, Hashable {
    /// The largest document, in bytes.
    public var maximumBytes: Int
    /// The most nodes (scalars, sequences, mappings) the document holds once every alias is expanded.
    public var maximumNodes: Int
    /// The deepest nesting of sequences and mappings, aliases expanded.
    public var maximumDepth: Int

    /// Limits as given.
    public init(maximumBytes: Int, maximumNodes: Int, maximumDepth: Int) {
        self.maximumBytes = maximumBytes
        self.maximumNodes = maximumNodes
        self.maximumDepth = maximumDepth
    }

    /// A manifest: 64 MiB, 4,000,000 expanded nodes, depth 64. A one-hour hand-annotated set with
    /// 100,000 API calls is about 12 MiB and 1,000,000 nodes.
    public static var manifest: YAMLLimits { YAMLLimits(maximumBytes: 64 << 20, maximumNodes: 4_000_000, maximumDepth: 64).fromEnvironment() }
    /// A live script: 4 MiB, 200,000 expanded nodes, depth 32.
    public static var liveScript: YAMLLimits { YAMLLimits(maximumBytes: 4 << 20, maximumNodes: 200_000, maximumDepth: 32).fromEnvironment() }

    /// The environment variables that raise each limit.
    public enum Variable {
        /// Raises ``YAMLLimits/maximumBytes``.
        public static let bytes = "TETHER_YAML_MAX_BYTES"
        /// Raises ``YAMLLimits/maximumNodes``.
        public static let nodes = "TETHER_YAML_MAX_NODES"
        /// Raises ``YAMLLimits/maximumDepth``.
        public static let depth = "TETHER_YAML_MAX_DEPTH"
    }

    /// These limits, each raised (never lowered below 1) where its environment variable holds a
    /// positive whole number.
    func fromEnvironment() -> YAMLLimits {
        func read(_ name: String) -> Int? {
            guard let text = ProcessInfo.processInfo.environment[name], let n = Int(text), n > 0 else { return nil }
            return n
        }
        var copy = self
        if let n = read(Variable.bytes) { copy.maximumBytes = n }
        if let n = read(Variable.nodes) { copy.maximumNodes = n }
        if let n = read(Variable.depth) { copy.maximumDepth = n }
        return copy
    }
}

/// A YAML document over one of its ``YAMLLimits``.
public struct YAMLLimitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which limit was hit.
    public enum Limit: String, Sendable, Hashable {
        case bytes, nodes, depth
        /// A plain scalar Yams would read as a base-60 integer that does not fit (see
        /// ``BudgetedYAML/isUnsafeSexagesimal(_:)``).
        case sexagesimal
    }
    /// The limit hit.
    public var limit: Limit
    /// Its value.
    public var maximum: Int
    /// The 1-based line where the count passed the limit (`nil` for the size of the whole document).
    public var line: Int?

    /// An error for `limit`, passed at `line` (`nil` for the whole document's size).
    public init(limit: Limit, maximum: Int, line: Int?) {
        self.limit = limit
        self.maximum = maximum
        self.line = line
    }

    /// `is larger than … (at line N); raise it with …`, without the file name (the caller's error names it).
    public var description: String {
        let at = line.map { " (passed at line \($0))" } ?? ""
        switch limit {
        case .bytes:
            return "is larger than \(maximum) bytes, the most Tether reads as YAML; if the file is really meant to be this large, "
                + "run with \(YAMLLimits.Variable.bytes) set higher"
        case .nodes:
            return "would expand to more than \(maximum) YAML nodes once its aliases (*name) are expanded\(at); "
                + "remove the aliases that repeat large anchors, or, if the document is really this large, run with \(YAMLLimits.Variable.nodes) set higher"
        case .depth:
            return "nests sequences and mappings more than \(maximum) levels deep\(at); "
                + "flatten it, or run with \(YAMLLimits.Variable.depth) set higher"
        case .sexagesimal:
            return "has a plain value\(line.map { " at line \($0)" } ?? "") that YAML 1.1 reads as a base-60 number (`1:30` is 90) and that is too large to read safely; "
                + "quote it if it is text (\"12:30:00\"), or write the number in base 10"
        }
    }
}

/// Reading YAML within a budget.
public enum BudgetedYAML {
    /// The root node of `text` (`nil` for an empty document), after checking it against `limits`.
    ///
    /// Syntax errors are left to Yams, which reports them with their line and column: the budget
    /// check stops at the first event libyaml cannot parse and lets the composer say why.
    /// - Throws: ``YAMLLimitError`` when a limit is passed; Yams' `YamlError` for bad syntax.
    public static func compose(_ text: String, limits: YAMLLimits) throws -> Node? {
        try check(text, limits: limits)
        return try Yams.compose(yaml: text)
    }

    /// Checks `text` against `limits` in one pass over libyaml's events, building nothing.
    /// - Throws: ``YAMLLimitError``.
    public static func check(_ text: String, limits: YAMLLimits) throws(YAMLLimitError) {
        var text = text
        let bytes = text.utf8.count
        guard bytes <= limits.maximumBytes else { throw YAMLLimitError(limit: .bytes, maximum: limits.maximumBytes, line: nil) }
        let outcome: YAMLLimitError? = text.withUTF8 { buffer in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else { return nil }
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var counter = ExpansionCounter(limits: limits)
            while true {
                var event = yaml_event_t()
                // A syntax error: Yams' composer, run next, reports it with its place.
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_SCALAR_EVENT:
                    if let error = counter.leaf(size: 1, depth: 0, anchor: anchorName(event.data.scalar.anchor), line: line) { return error }
                    if event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE, let value = event.data.scalar.value,
                       memchr(value, 0x3A, event.data.scalar.length) != nil,
                       isUnsafeSexagesimal(String(decoding: UnsafeBufferPointer(start: value, count: event.data.scalar.length), as: UTF8.self)) {
                        return YAMLLimitError(limit: .sexagesimal, maximum: 0xFFFF, line: line)
                    }
                case YAML_ALIAS_EVENT:
                    let expanded = counter.anchors[anchorName(event.data.alias.anchor) ?? ""] ?? (size: 1, depth: 0)
                    if let error = counter.leaf(size: expanded.size, depth: expanded.depth, anchor: nil, line: line) { return error }
                case YAML_SEQUENCE_START_EVENT:
                    if let error = counter.open(anchor: anchorName(event.data.sequence_start.anchor), line: line) { return error }
                case YAML_MAPPING_START_EVENT:
                    if let error = counter.open(anchor: anchorName(event.data.mapping_start.anchor), line: line) { return error }
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    counter.close()
                default:
                    continue
                }
            }
        }
        if let outcome { throw outcome }
    }

    /// Whether Yams would read `text` (a plain scalar) as a base-60 integer whose reading traps:
    /// Yams multiplies its base by 60 once per component without checking for overflow, so three
    /// components overflow a 16-bit field (60³) and eleven a 64-bit one, and a large value
    /// overflows whatever it is read into. Two components worth at most 65,535 are safe for every
    /// integer field a manifest has (none is narrower than 16 bits), and are allowed.
    static func isUnsafeSexagesimal(_ text: String) -> Bool {
        var body = Substring(text.replacingOccurrences(of: "_", with: ""))
        if body.hasPrefix("-") || body.hasPrefix("+") { body = body.dropFirst() }
        let components = body.split(separator: ":", omittingEmptySubsequences: false)
        guard components.count >= 2, components.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && Int64($0) != nil }) else { return false }
        guard components.count == 2, let high = Int64(components[0]), let low = Int64(components[1]) else { return true }
        let (scaled, overflow) = high.multipliedReportingOverflow(by: 60)
        guard !overflow else { return true }
        let (value, overflowAgain) = scaled.addingReportingOverflow(low)
        return overflowAgain || abs(value) > 0xFFFF || abs(low) > 0xFFFF
    }

    private static func anchorName(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let pointer else { return nil }
        return String(cString: pointer)
    }
}

/// Counts nodes and depth as they would be with every alias expanded, from the event stream.
private struct ExpansionCounter {
    let limits: YAMLLimits
    /// Open sequences and mappings: their anchor, expanded size so far, and deepest nesting below them.
    var open: [(anchor: String?, size: Int, depthBelow: Int)] = []
    /// Each anchor's expanded size and depth (a later anchor of the same name replaces it, as in YAML).
    var anchors: [String: (size: Int, depth: Int)] = [:]
    /// Expanded nodes counted so far: finished top-level nodes and everything inside open ones.
    var total = 0

    init(limits: YAMLLimits) { self.limits = limits }

    /// A finished node of `size` expanded nodes and `depth` levels is added to its parent.
    mutating func leaf(size: Int, depth: Int, anchor: String?, line: Int) -> YAMLLimitError? {
        if let anchor { anchors[anchor] = (size, depth) }
        if open.count + depth > limits.maximumDepth { return YAMLLimitError(limit: .depth, maximum: limits.maximumDepth, line: line) }
        let (sum, overflow) = total.addingReportingOverflow(size)
        if overflow || sum > limits.maximumNodes { return YAMLLimitError(limit: .nodes, maximum: limits.maximumNodes, line: line) }
        total = sum
        if !open.isEmpty {
            open[open.count - 1].size += size
            open[open.count - 1].depthBelow = max(open[open.count - 1].depthBelow, depth)
        }
        return nil
    }

    mutating func open(anchor: String?, line: Int) -> YAMLLimitError? {
        open.append((anchor, 1, 0))
        total += 1
        if total > limits.maximumNodes { return YAMLLimitError(limit: .nodes, maximum: limits.maximumNodes, line: line) }
        if open.count > limits.maximumDepth { return YAMLLimitError(limit: .depth, maximum: limits.maximumDepth, line: line) }
        return nil
    }

    mutating func close() {
        guard let finished = open.popLast() else { return }
        // Its nodes were counted as they came; only its parent's size and depth learn of it now.
        if let anchor = finished.anchor { anchors[anchor] = (finished.size, finished.depthBelow + 1) }
        if !open.isEmpty {
            open[open.count - 1].size += finished.size
            open[open.count - 1].depthBelow = max(open[open.count - 1].depthBelow, finished.depthBelow + 1)
        }
    }
}
