import Yams

/// One top-level section of a manifest that belongs to a core's integration (`ingest:`,
/// `messaging:`, `session:`, or a user's own, such as `heart_rate:`), kept as the YAML it was
/// written as.
///
/// The capture set layer does not know what a core's section means: the integration that claims
/// the section decodes it (``decode(_:manifestPath:)``), so adding a core adds no type here. The
/// section's line in `manifest.yaml` is kept, so an error names the file and the line.
public struct ManifestSection: Sendable, Equatable {
    /// The section's key at the top level of the manifest.
    public var name: String
    /// Its value, as parsed.
    public var value: ManifestTree
    /// The 1-based line of the key in `manifest.yaml`; `nil` for a section made in memory.
    public var line: Int?

    /// A section with the given YAML value.
    public init(name: String, value: ManifestTree, line: Int? = nil) {
        self.name = name
        self.value = value
        self.line = line
    }

    /// A section holding `value` encoded as YAML (what a recorder writes).
    /// - Throws: ``CaptureSetError/invalidManifest(path:field:problem:)`` when `value` cannot be
    ///   written as YAML.
    public init(name: String, encoding value: some Encodable) throws(CaptureSetError) {
        let node: Node?
        do {
            node = try Yams.compose(yaml: try YAMLEncoder().encode(value))
        } catch {
            throw .invalidManifest(path: "<memory>", field: name, problem: "cannot be written as YAML: \(error)")
        }
        guard let node else {
            throw .invalidManifest(path: "<memory>", field: name, problem: "encodes to an empty document")
        }
        self.init(name: name, value: ManifestTree(node))
    }

    /// Sections are equal when their names and values are: the line says where a section was
    /// written, not what it is.
    public static func == (lhs: ManifestSection, rhs: ManifestSection) -> Bool {
        lhs.name == rhs.name && lhs.value == rhs.value
    }

    /// The section decoded as `type`. `manifestPath` goes into the error, which names the field
    /// that failed below the section (`messaging.settings.window_size`) and its line.
    /// - Throws: ``CaptureSetError/invalidManifest(path:field:problem:)``.
    public func decode<T: Decodable>(_ type: T.Type, manifestPath: String) throws(CaptureSetError) -> T {
        do {
            return try YAMLDecoder().decode(type, from: value.node)
        } catch let error as DecodingError {
            let below = CaptureSetDirectory.fieldPath(of: error)
            let field = below.map { $0.isEmpty ? name : "\(name).\($0)" } ?? name
            let line = value.line(at: Self.codingPath(of: error)) ?? self.line
            let at = line.map { " (line \($0))" } ?? ""
            throw .invalidManifest(path: manifestPath, field: field, problem: CaptureSetDirectory.describe(error) + at)
        } catch {
            throw .invalidManifest(path: manifestPath, field: name, problem: "\(error)")
        }
    }

    /// The section with the scalar at `path` (keys below the section, e.g. `["settings",
    /// "window_size"]`) set to `value`, making the mappings on the way as needed: how a command
    /// line option overrides what the manifest says before the integration decodes the section.
    public func setting(_ path: [String], to value: ManifestTree) -> ManifestSection {
        var copy = self
        copy.value = self.value.setting(path[...], to: value)
        return copy
    }

    private static func codingPath(of error: DecodingError) -> [any CodingKey] {
        switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c): c.codingPath
        @unknown default: []
        }
    }
}

/// A YAML value as a manifest holds it, in a form that is `Sendable` and keeps what writing it
/// back needs: the order of a mapping's keys, whether a scalar was quoted, and each node's line.
public indirect enum ManifestTree: Sendable, Equatable {
    /// A scalar: its text, what it resolves to, and its 1-based line.
    case scalar(String, ScalarKind, line: Int?)
    /// A sequence and its line.
    case sequence([ManifestTree], line: Int?)
    /// A mapping, keys in written order, and its line.
    case mapping([(key: String, value: ManifestTree)], line: Int?)

    /// What a scalar resolves to under YAML 1.1's core schema (a quoted scalar is a string).
    public enum ScalarKind: Sendable, Equatable {
        case null, bool, int, float, string
    }

    /// A plain scalar of the given kind.
    public static func scalar(_ text: String, _ kind: ScalarKind) -> ManifestTree { .scalar(text, kind, line: nil) }

    /// The tree of a parsed YAML node (aliases are already resolved by the parser).
    public init(_ node: Node) {
        let line = node.mark.map { $0.line }
        switch node {
        case .scalar(let scalar):
            let kind: ScalarKind
            if scalar.style != .plain && scalar.style != .any {
                kind = .string
            } else {
                switch Tag.Name(rawValue: node.tag.rawValue) {
                case .null: kind = .null
                case .bool: kind = .bool
                case .int: kind = .int
                case .float: kind = .float
                default: kind = .string
                }
            }
            self = .scalar(scalar.string, kind, line: line)
        case .sequence(let sequence):
            self = .sequence(sequence.map(ManifestTree.init), line: line)
        case .mapping(let mapping):
            self = .mapping(mapping.map { (key: $0.key.string ?? "\($0.key)", value: ManifestTree($0.value)) }, line: line)
        case .alias:
            self = .scalar("", .null, line: line)
        }
    }

    /// The YAML node, for decoding.
    public var node: Node {
        switch self {
        case let .scalar(text, kind, _):
            switch kind {
            case .string: return Node(text, Tag(.str), .doubleQuoted)
            case .null: return Node(text, Tag(.null))
            case .bool: return Node(text, Tag(.bool))
            case .int: return Node(text, Tag(.int))
            case .float: return Node(text, Tag(.float))
            }
        case let .sequence(items, _):
            return Node(items.map(\.node))
        case let .mapping(pairs, _):
            return Node(pairs.map { (Node($0.key), $0.value.node) })
        }
    }

    /// The value under `key`, when this is a mapping that has it.
    public subscript(key: String) -> ManifestTree? {
        guard case .mapping(let pairs, _) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    /// The keys of a mapping in written order (empty for anything else).
    public var keys: [String] {
        guard case .mapping(let pairs, _) = self else { return [] }
        return pairs.map(\.key)
    }

    /// The scalar's text, when this is a scalar.
    public var scalarText: String? {
        guard case .scalar(let text, _, _) = self else { return nil }
        return text
    }

    /// This node's 1-based line in the file it was read from.
    public var line: Int? {
        switch self {
        case .scalar(_, _, let line), .sequence(_, let line), .mapping(_, let line): line
        }
    }

    /// The line of the node a coding path leads to, as far as it can be followed.
    public func line(at path: [any CodingKey]) -> Int? {
        var node = self
        var found = line
        for key in path {
            if let index = key.intValue, case .sequence(let items, _) = node, items.indices.contains(index) {
                node = items[index]
            } else if let child = node[key.stringValue] {
                node = child
            } else {
                break
            }
            found = node.line ?? found
        }
        return found
    }

    func setting(_ path: ArraySlice<String>, to value: ManifestTree) -> ManifestTree {
        guard let key = path.first else { return value }
        var pairs: [(key: String, value: ManifestTree)] = []
        var line: Int?
        if case .mapping(let existing, let l) = self { pairs = existing; line = l }
        if let i = pairs.firstIndex(where: { $0.key == key }) {
            pairs[i].value = pairs[i].value.setting(path.dropFirst(), to: value)
        } else {
            pairs.append((key, ManifestTree.mapping([], line: nil).setting(path.dropFirst(), to: value)))
        }
        return .mapping(pairs, line: line)
    }

    public static func == (a: ManifestTree, b: ManifestTree) -> Bool {
        switch (a, b) {
        case let (.scalar(t1, k1, _), .scalar(t2, k2, _)): t1 == t2 && k1 == k2
        case let (.sequence(i1, _), .sequence(i2, _)): i1 == i2
        case let (.mapping(p1, _), .mapping(p2, _)):
            p1.count == p2.count && zip(p1, p2).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }
}

/// A ``ManifestTree`` written back as it was read: mappings keep their key order, scalars their
/// kind (an integer stays an integer, a quoted string a string). Lets ``CaptureSetManifest``
/// write a section it does not understand without losing anything.
///
/// Written through Yams' encoder it is handed over as one finished node (``box()``): Yams copies a
/// list's whole array each time an item encoded through it is stored, so a section of 20,000 API
/// calls took minutes to write; building the node directly is linear.
struct ManifestTreeValue: YAMLEncodable {
    var tree: ManifestTree

    func box() -> Node { tree.yamlNode }

    func encode(to encoder: any Encoder) throws {
        switch tree {
        case .mapping(let pairs, _):
            var c = encoder.container(keyedBy: ManifestKey.self)
            for pair in pairs { try c.encode(ManifestTreeValue(tree: pair.value), forKey: ManifestKey(stringValue: pair.key)) }
        case .sequence(let items, _):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(ManifestTreeValue(tree: item)) }
        case let .scalar(text, kind, _):
            var c = encoder.singleValueContainer()
            switch kind {
            case .null: try c.encodeNil()
            case .bool: try c.encode(Node(text).bool ?? false)
            case .int: if let i = Int64(text) { try c.encode(i) } else { try c.encode(text) }
            case .float: if let d = Node(text).float { try c.encode(d) } else { try c.encode(text) }
            case .string: try c.encode(text)
            }
        }
    }
}

extension ManifestTree {
    /// The tree as a Yams node, each scalar represented as Yams represents the Swift value of its
    /// kind (a string that would read as another type is quoted).
    var yamlNode: Node {
        switch self {
        case .mapping(let pairs, _):
            return Node(pairs.map { (Node.scalar($0.key.represented()), $0.value.yamlNode) }, Tag(.map))
        case .sequence(let items, _):
            return Node(items.map(\.yamlNode), Tag(.seq))
        case let .scalar(text, kind, _):
            switch kind {
            case .null: return Node("null", Tag(.null))
            case .bool: return .scalar((Node(text).bool ?? false).represented())
            case .int: return .scalar(Int64(text).map { $0.represented() } ?? text.represented())
            case .float: return .scalar(Node(text).float.map { $0.represented() } ?? text.represented())
            case .string: return .scalar(text.represented())
            }
        }
    }
}

/// A list written into a YAML manifest as one finished node: each item is encoded on its own and
/// the items are joined, which is linear, where letting Yams' encoder store item after item into
/// one list copies the list each time (quadratic: minutes for a few thousand annotations). Any
/// other encoder gets the items as a plain list.
struct LinearYAMLList<Element: Encodable>: YAMLEncodable {
    let items: [Element]
    let node: Node

    /// Encodes every item now, so an item that cannot be written fails here, with its error.
    init(_ items: [Element]) throws {
        self.items = items
        let encoder = YAMLEncoder()
        node = Node(try items.map { item -> Node in
            guard let node = try Yams.compose(yaml: try encoder.encode(item)) else { return Node("null", Tag(.null)) }
            return node
        }, Tag(.seq))
    }

    func box() -> Node { node }

    func encode(to encoder: any Encoder) throws { try items.encode(to: encoder) }
}

/// A coding key made from any string.
struct ManifestKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
