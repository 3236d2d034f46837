import Durations
import Foundation

/// The schema of an integration's manifest section: every key it may hold and what each takes,
/// made by replay from an integration's settings (the keys a command line may also change) and
/// its other section fields, so a bound is written once and holds for `--set`, for a core's own
/// flag and for the manifest alike. It lives with the manifest because it is about the manifest:
/// the capture-set fuzzer checks it with no core compiled in.
///
/// A section is checked before any adapter is made (``validate(_:manifestPath:)``): a value out of
/// its range is refused naming the file, the line, the field, the value and what it takes; a key
/// the schema does not know is kept (a newer Tether may know it) and reported once as a warning.
/// An integration that declares no field at all is not checked (a user's core that has not yet
/// described its section).
public struct SectionSchema: Sendable {
    /// The section's top-level key.
    public var sectionName: String
    /// Every field, keyed by its dotted path below the section (`settings.window_size`,
    /// `api_calls[].t_ms`: `[]` stands for every item of a list, and `*` for any key not named
    /// beside it, as an API call's arguments are).
    public var fields: [SectionField]

    /// A schema of the given fields.
    public init(sectionName: String, fields: [SectionField]) {
        self.sectionName = sectionName
        self.fields = fields
    }

    /// What checking a section found.
    public struct Findings: Sendable, Equatable {
        /// Keys the schema does not know, one sentence each (file, line, field).
        public var warnings: [String] = []
    }

    /// Checks every value of `section` against its field, and lists the keys no field describes.
    /// - Throws: ``SectionSchemaViolation`` for the first value that is not what its field takes.
    public func validate(_ section: ManifestSection, manifestPath: String) throws(SectionSchemaViolation) -> Findings {
        var findings = Findings()
        let root = Node(fields: fields)
        try check(section.value, against: root, path: sectionName, line: section.line, manifestPath: manifestPath, findings: &findings)
        return findings
    }

    // MARK: Walking the tree

    /// A trie of field paths: a field's kind at a leaf, named children, or `[]` for list items.
    private final class Node {
        var field: SectionField?
        var children: [String: Node] = [:]

        init() {}

        convenience init(fields: [SectionField]) {
            self.init()
            for field in fields { insert(field) }
        }

        func insert(_ field: SectionField) {
            var node = self
            for component in Self.components(of: field.key) {
                if let next = node.children[component] {
                    node = next
                } else {
                    let next = Node()
                    node.children[component] = next
                    node = next
                }
            }
            node.field = field
        }

        /// `api_calls[].t_ms` → `api_calls`, `[]`, `t_ms`.
        static func components(of key: String) -> [String] {
            var out: [String] = []
            for part in key.split(separator: ".") {
                if part.hasSuffix("[]") {
                    out.append(String(part.dropLast(2)))
                    out.append("[]")
                } else {
                    out.append(String(part))
                }
            }
            return out
        }
    }

    private func check(_ tree: ManifestTree, against node: Node, path: String, line: Int?, manifestPath: String,
                       findings: inout Findings) throws(SectionSchemaViolation) {
        let here = tree.line ?? line
        if let field = node.field {
            try check(tree, field: field, path: path, line: here, manifestPath: manifestPath)
            return
        }
        switch tree {
        case .mapping(let pairs, _):
            guard !node.children.isEmpty, node.children["[]"] == nil else {
                throw mismatch(path: path, line: here, manifestPath: manifestPath, expected: node.children["[]"] != nil ? "a list" : "a value", found: "a mapping")
            }
            for (key, value) in pairs {
                let childPath = "\(path).\(key)"
                guard let child = node.children[key] ?? node.children["*"] else {
                    let at = (value.line ?? here).map { ":\($0)" } ?? ""
                    findings.warnings.append("\(manifestPath)\(at): `\(childPath)` is not a key this Tether knows; it is kept and ignored "
                        + "(check its spelling; docs/capture-set.md lists the keys of each section).")
                    continue
                }
                try check(value, against: child, path: childPath, line: value.line ?? here, manifestPath: manifestPath, findings: &findings)
            }
        case .sequence(let items, _):
            guard let item = node.children["[]"] else {
                throw mismatch(path: path, line: here, manifestPath: manifestPath, expected: "a mapping of keys", found: "a list")
            }
            for (index, value) in items.enumerated() {
                try check(value, against: item, path: "\(path)[\(index)]", line: value.line ?? here, manifestPath: manifestPath, findings: &findings)
            }
        case .scalar(_, .null, _):
            return  // an empty key: the same as leaving it out
        case .scalar(let text, _, _):
            throw mismatch(path: path, line: here, manifestPath: manifestPath,
                           expected: node.children["[]"] != nil ? "a list" : "a mapping of keys", found: "\"\(text)\"")
        }
    }

    private func check(_ tree: ManifestTree, field: SectionField, path: String, line: Int?, manifestPath: String) throws(SectionSchemaViolation) {
        if case .open = field.kind { return }
        guard case .scalar(let text, let kind, _) = tree else {
            let found = if case .sequence = tree { "a list" } else { "a mapping" }
            throw SectionSchemaViolation(path: manifestPath, line: line, field: path, problem: "takes \(field.kind.accepted), found \(found)",
                                         hint: "Write a single value.")
        }
        if kind == .null { return }
        if let refusal = field.kind.refusal(ofManifestValue: text, kind: kind) {
            throw SectionSchemaViolation(path: manifestPath, line: line, field: path, problem: "\"\(text)\" is refused: \(refusal)",
                                         hint: "Write a value it takes, or leave the key out for the default.")
        }
    }

    private func mismatch(path: String, line: Int?, manifestPath: String, expected: String, found: String) -> SectionSchemaViolation {
        SectionSchemaViolation(path: manifestPath, line: line, field: path, problem: "expected \(expected), found \(found)",
                               hint: "docs/capture-set.md shows the section's layout.")
    }
}

/// A value of a manifest section that its schema refuses: the file, the line, the field, what is
/// wrong and what to do.
public struct SectionSchemaViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// The manifest file.
    public var path: String
    /// The value's 1-based line, when known.
    public var line: Int?
    /// The dotted field path (`messaging.settings.window_size`, `messaging.api_calls[3].t_ms`).
    public var field: String
    /// What is wrong, with the value and what the field takes.
    public var problem: String
    /// What to do.
    public var hint: String

    /// A violation as described.
    public init(path: String, line: Int?, field: String, problem: String, hint: String) {
        self.path = path
        self.line = line
        self.field = field
        self.problem = problem
        self.hint = hint
    }

    /// `PATH:LINE: `FIELD`: PROBLEM. HINT`
    public var description: String {
        "\(path)\(line.map { ":\($0)" } ?? ""): `\(field)`: \(problem). \(hint)"
    }
}


extension SectionField.Kind {
    /// What values of this kind are, for a message (`a whole number from 1 to 15`).
    public var accepted: String {
        switch self {
        case .integer(let range): "a whole number from \(range.lowerBound) to \(range.upperBound)"
        case .milliseconds(let range): "a whole number of milliseconds from \(range.lowerBound) to \(range.upperBound)"
        case .number(let range): "a number from \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))"
        case .choice(let words): "one of \(words.joined(separator: ", "))"
        case .text: "text"
        case .uuid: "a UUID such as 0ff1ce00-0000-4000-8000-000000000001"
        case .boolean: "true or false"
        case .unsigned64: "a whole number from 0 to \(UInt64.max)"
        case .open: "anything"
        }
    }

    /// Why `text` (a scalar of YAML kind `kind`) is refused as a manifest value; `nil` when taken.
    func refusal(ofManifestValue text: String, kind: ManifestTree.ScalarKind) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        switch self {
        case .integer(let range), .milliseconds(let range):
            guard let n = Int64(trimmed) else { return "it takes \(accepted)" }
            return range.contains(n) ? nil : "it takes \(accepted)"
        case .number(let range):
            guard let n = Double(trimmed), n.isFinite else { return "it takes \(accepted) (a finite number)" }
            return range.contains(n) ? nil : "it takes \(accepted)"
        case .choice(let words):
            return words.contains(trimmed) ? nil : "it takes \(accepted)"
        case .text, .open:
            return nil
        case .uuid:
            return Self.isUUID(trimmed) ? nil : "it takes \(accepted)"
        case .boolean:
            return kind == .bool ? nil : "it takes \(accepted)"
        case .unsigned64:
            return UInt64(trimmed) != nil ? nil : "it takes \(accepted)"
        }
    }

    /// 8-4-4-4-12 hexadecimal digits.
    static func isUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return false }
        return groups.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// A key of a core's manifest section and what it takes; as an integration's setting
/// (`IntegrationSetting` in ReplayKit), a key the command line may also override for one replay,
/// checked with the same bounds.
///
/// `tether replay --set messaging.settings.window_size=4` sets it by its key; ``flag`` gives it a
/// long option of its own (`--messaging-window-size 4`).
public struct SectionField: Sendable, Hashable {
    /// The key below the section, dotted (`settings.window_size`).
    public var key: String
    /// A long option of its own, without the dashes (`messaging-window-size`); `nil` for none.
    public var flag: String?
    /// One line for `--help`.
    public var help: String
    /// What values it takes.
    public var kind: Kind

    /// What values a setting takes, and how the command line's text becomes the section's value.
    public enum Kind: Sendable, Hashable {
        /// A whole number within the range.
        case integer(ClosedRange<Int64>)
        /// A duration written as seconds or with a unit (`500ms`, `8s`, `2m`, `1h`), stored in
        /// the section as whole milliseconds; the range is in milliseconds.
        case milliseconds(ClosedRange<Int64>)
        /// One of the listed words.
        case choice([String])
        /// Any text.
        case text
        /// A finite number within the range (fractions allowed).
        case number(ClosedRange<Double>)
        /// A UUID in its 8-4-4-4-12 hexadecimal form.
        case uuid
        /// `true` or `false`.
        case boolean
        /// A whole number from 0 to 2⁶⁴−1 (a random seed).
        case unsigned64
        /// Anything: a part of the section whose keys are the user's own (an API call's arguments).
        case open
    }

    /// Describe one setting.
    public init(key: String, flag: String? = nil, help: String, kind: Kind) {
        self.key = key
        self.flag = flag
        self.help = help
        self.kind = kind
    }

    /// `text` as the section's value, or why it is refused (naming `option` and the range).
    public func value(from text: String, option: String) -> Result<ManifestTree, SettingValueError> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        switch kind {
        case .integer(let range):
            guard let n = Int64(trimmed), range.contains(n) else {
                return .failure(SettingValueError(message: "\(option) takes a whole number from \(range.lowerBound) to \(range.upperBound); got \"\(text)\"."))
            }
            return .success(.scalar(String(n), .int))
        case .milliseconds(let range):
            // `--set …_timeout_ms=1000` read as seconds would be a 1000 s timeout: a key whose name
            // says milliseconds takes its unit written out.
            if key.hasSuffix("_ms"), option.hasPrefix("--set"), DurationText.seconds(trimmed) != nil,
               DurationText.nanoseconds(trimmed, bareNumber: .refused) == nil {
                return .failure(SettingValueError(message: "\(option) takes a duration with its unit (\(trimmed)ms or \(trimmed)s), "
                    + "so a bare \(trimmed) is not taken for seconds in a key that names milliseconds; got \"\(text)\"."))
            }
            guard let ms = Self.milliseconds(trimmed), range.contains(ms) else {
                return .failure(SettingValueError(message: "\(option) takes a duration from \(Self.durationText(range.lowerBound)) to "
                    + "\(Self.durationText(range.upperBound)), in seconds or with a unit (500ms, 8s, 2m, 1h); got \"\(text)\"."))
            }
            return .success(.scalar(String(ms), .int))
        case .choice(let words):
            guard words.contains(trimmed) else {
                return .failure(SettingValueError(message: "\(option) takes one of \(words.joined(separator: ", ")); got \"\(text)\"."))
            }
            return .success(.scalar(trimmed, .string))
        case .text:
            return .success(.scalar(text, .string))
        case .number(let range):
            guard let n = Double(trimmed), n.isFinite, range.contains(n) else {
                return .failure(SettingValueError(message: "\(option) takes \(kind.accepted); got \"\(text)\"."))
            }
            return .success(.scalar(trimmed, .float))
        case .uuid:
            guard Kind.isUUID(trimmed) else { return .failure(SettingValueError(message: "\(option) takes \(kind.accepted); got \"\(text)\".")) }
            return .success(.scalar(trimmed, .string))
        case .boolean:
            guard trimmed == "true" || trimmed == "false" else {
                return .failure(SettingValueError(message: "\(option) takes true or false; got \"\(text)\"."))
            }
            return .success(.scalar(trimmed, .bool))
        case .unsigned64:
            guard UInt64(trimmed) != nil else { return .failure(SettingValueError(message: "\(option) takes \(kind.accepted); got \"\(text)\".")) }
            return .success(.scalar(trimmed, .int))
        case .open:
            return .failure(SettingValueError(message: "\(option) cannot be set from the command line; write it in the manifest."))
        }
    }

    /// Seconds (`1.5`) or a number with a unit of ``DurationText`` (`500ms`, `2m`), as whole
    /// milliseconds; `nil` when it is not one or does not fit.
    package static func milliseconds(_ text: String) -> Int64? {
        guard let ns = DurationText.nanoseconds(text, bareNumber: .seconds) else { return nil }
        let ms = (ns / 1e6).rounded()
        guard ms < 9.2e18 else { return nil }
        return Int64(ms)
    }

    package static func durationText(_ ms: Int64) -> String {
        if ms % 3_600_000 == 0 && ms > 0 { return "\(ms / 3_600_000)h" }
        if ms % 1000 == 0 && ms > 0 { return "\(ms / 1000)s" }
        return "\(ms)ms"
    }
}

/// Why the command line's value for a setting was refused.
public struct SettingValueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The sentence to print.
    public var message: String

    /// An error with this sentence.
    public init(message: String) { self.message = message }
    /// The sentence.
    public var description: String { message }
}
