import CaptureSet

/// The schema of an integration's manifest section: every key it may hold and what each takes,
/// made from the integration's ``CoreIntegration/settings`` (the keys a command line may also
/// change) and its ``CoreIntegration/sectionFields`` (the others), so a bound is written once and
/// holds for `--set`, for a core's own flag and for the manifest alike.
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
    public var fields: [IntegrationSetting]

    /// A schema of the given fields.
    public init(sectionName: String, fields: [IntegrationSetting]) {
        self.sectionName = sectionName
        self.fields = fields
    }

    /// The schema of `integration`'s section; `nil` when it has no section or declares no field.
    public init?(of integration: any CoreIntegration) {
        guard let name = integration.sectionName else { return nil }
        let fields = integration.settings + integration.sectionFields
        guard !fields.isEmpty else { return nil }
        self.init(sectionName: name, fields: fields)
    }

    /// What checking a section found.
    public struct Findings: Sendable, Equatable {
        /// Keys the schema does not know, one sentence each (file, line, field).
        public var warnings: [String] = []
    }

    /// Checks every value of `section` against its field, and lists the keys no field describes.
    /// - Throws: ``ReplayError/manifest(path:line:field:problem:hint:)`` for the first value that is
    ///   not what its field takes.
    public func validate(_ section: ManifestSection, manifestPath: String) throws(ReplayError) -> Findings {
        var findings = Findings()
        let root = Node(fields: fields)
        try check(section.value, against: root, path: sectionName, line: section.line, manifestPath: manifestPath, findings: &findings)
        return findings
    }

    // MARK: Walking the tree

    /// A trie of field paths: a field's kind at a leaf, named children, or `[]` for list items.
    private final class Node {
        var field: IntegrationSetting?
        var children: [String: Node] = [:]

        init() {}

        convenience init(fields: [IntegrationSetting]) {
            self.init()
            for field in fields { insert(field) }
        }

        func insert(_ field: IntegrationSetting) {
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
                       findings: inout Findings) throws(ReplayError) {
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

    private func check(_ tree: ManifestTree, field: IntegrationSetting, path: String, line: Int?, manifestPath: String) throws(ReplayError) {
        if case .open = field.kind { return }
        guard case .scalar(let text, let kind, _) = tree else {
            let found = if case .sequence = tree { "a list" } else { "a mapping" }
            throw ReplayError.manifest(path: manifestPath, line: line, field: path, problem: "takes \(field.kind.accepted), found \(found)",
                                       hint: "Write a single value.")
        }
        if kind == .null { return }
        if let refusal = field.kind.refusal(ofManifestValue: text, kind: kind) {
            throw ReplayError.manifest(path: manifestPath, line: line, field: path, problem: "\"\(text)\" is refused: \(refusal)",
                                       hint: "Write a value it takes, or leave the key out for the default.")
        }
    }

    private func mismatch(path: String, line: Int?, manifestPath: String, expected: String, found: String) -> ReplayError {
        .manifest(path: manifestPath, line: line, field: path, problem: "expected \(expected), found \(found)",
                  hint: "docs/capture-set.md shows the section's layout.")
    }
}

extension ManifestTree {
    /// The node's own line.
    var line: Int? {
        switch self {
        case .scalar(_, _, let line), .sequence(_, let line), .mapping(_, let line): line
        }
    }
}

extension IntegrationSetting.Kind {
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
