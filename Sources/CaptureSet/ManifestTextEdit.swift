import Yams

/// Rewrites a manifest's text so that it says what a changed manifest says, touching only the
/// top-level keys whose values changed.
///
/// `tether seal`, `tether annotate` and `replay --update-baseline` change one or two keys of a
/// manifest a person may have edited by hand: comments, keys this Tether does not know (written
/// by a newer one), the order and quoting chosen. Encoding the whole manifest again would drop
/// the comments and rewrite every line; instead each top-level key keeps its original lines,
/// comments included, unless its value changed:
/// - a key whose value is unchanged (compared as values: `8.215e+0` and `8.215` are one number)
///   keeps its text byte for byte;
/// - a list that only grew (an annotation appended) keeps its text and gets the new items after
///   its last item, indented as its items are;
/// - a changed key gets the encoder's lines for it, in its old place; a new key goes after the key
///   it follows in the new manifest; a removed key goes, with the comment lines just above it.
///
/// Every step is one pass over the text, so the time is linear in the manifest's size.
enum ManifestTextEdit {
    /// `original` edited to say what `encoded` (the encoder's text of the changed manifest) says.
    /// `nil` when `original` is not a block mapping this editor can take apart (a flow mapping
    /// `{…}` at the top), in which case the caller writes `encoded` as it is.
    static func edit(_ original: String, toSay encoded: String) -> String? {
        guard let old = Blocks(original), let new = Blocks(encoded) else { return nil }
        var output: [Substring] = Array(old.prefix)
        // Old keys in their order; a new key after the key it follows in the new text.
        var order: [String] = old.keys.filter { new.index[$0] != nil }
        for (position, key) in new.keys.enumerated() where old.index[key] == nil {
            let after = new.keys[..<position].last { order.contains($0) }
            let at = after.flatMap { order.firstIndex(of: $0) }.map { $0 + 1 } ?? order.count
            order.insert(key, at: at)
        }
        for key in order {
            guard let newBlock = new.block(key) else { continue }
            guard let oldBlock = old.block(key) else {
                output.append(contentsOf: newBlock.lines)
                continue
            }
            if semanticallyEqual(oldBlock.value, newBlock.value) {
                output.append(contentsOf: oldBlock.leading + oldBlock.lines)
            } else if let appended = appendedItems(old: oldBlock, new: newBlock) {
                output.append(contentsOf: oldBlock.leading + oldBlock.lines + appended)
            } else {
                output.append(contentsOf: oldBlock.leading + newBlock.lines)
            }
        }
        output.append(contentsOf: old.suffix)
        var text = output.joined(separator: "\n")
        if !text.hasSuffix("\n") { text += "\n" }
        // The edit is kept only when it reads back as the very values the encoder wrote: a
        // construct this editor misjudged costs the comments, never a value.
        guard let editedRoot = try? Yams.compose(yaml: text, .basic), semanticallyEqual(Blocks.Value(editedRoot), new.root) else { return nil }
        return text
    }

    /// The lines of the items `new` has beyond `old`'s, indented as `old`'s items, when `new`'s
    /// list starts with every item of `old`'s block list; `nil` otherwise.
    private static func appendedItems(old: Blocks.Block, new: Blocks.Block) -> [Substring]? {
        guard case .sequence(let oldItems) = old.value, case .sequence(let newItems) = new.value,
              newItems.count > oldItems.count, let oldColumn = old.itemColumn, let newColumn = new.itemColumn,
              zip(oldItems, newItems).allSatisfy({ semanticallyEqual($0.0, $0.1) }),
              let firstNewLine = new.itemLines.dropFirst(oldItems.count).first
        else { return nil }
        // Block line slices keep the text's own line numbers.
        let lines = new.lines[firstNewLine...].map { line -> Substring in
            if oldColumn > newColumn { return Substring(String(repeating: " ", count: oldColumn - newColumn) + line) }
            if oldColumn < newColumn { return line.dropFirst(min(newColumn - oldColumn, line.prefix { $0 == " " }.count)) }
            return line
        }
        return lines
    }

    /// Equal as values: mappings whatever their key order, numbers by value, text by text.
    static func semanticallyEqual(_ a: Blocks.Value, _ b: Blocks.Value) -> Bool {
        switch (a, b) {
        case let (.scalar(x, kx), .scalar(y, ky)):
            if kx == .number, ky == .number, let dx = Double(x), let dy = Double(y) { return dx == dy || x == y }
            return kx == ky && x == y
        case let (.sequence(x), .sequence(y)):
            return x.count == y.count && zip(x, y).allSatisfy { semanticallyEqual($0.0, $0.1) }
        case let (.mapping(x), .mapping(y)):
            guard x.count == y.count else { return false }
            let byKey = Dictionary(y.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
            return x.allSatisfy { pair in byKey[pair.key].map { semanticallyEqual(pair.value, $0) } ?? false }
        default:
            return false
        }
    }

    /// A manifest's text cut at its top-level keys.
    struct Blocks {
        /// A YAML value reduced to what comparing needs.
        indirect enum Value {
            enum Kind: Equatable { case null, bool, number, string }
            case scalar(String, Kind)
            case sequence([Value])
            case mapping([(key: String, value: Value)])

            /// Kinds are judged from the text, not from Yams' tag resolver: the texts are composed
            /// with `Resolver.basic`, because the default resolver runs several regular
            /// expressions per scalar, which made editing a 20,000-call manifest take half a minute.
            init(_ node: Node) {
                switch node {
                case .scalar(let scalar):
                    let text = scalar.string
                    if scalar.style != .plain && scalar.style != .any {
                        self = .scalar(text, .string)
                    } else if ["", "~", "null", "Null", "NULL"].contains(text) {
                        self = .scalar("", .null)
                    } else if ["true", "True", "TRUE", "false", "False", "FALSE"].contains(text) {
                        self = .scalar(text.lowercased(), .bool)
                    } else if Double(text) != nil || Int64(text) != nil {
                        self = .scalar(text, .number)
                    } else {
                        self = .scalar(text, .string)
                    }
                case .sequence(let sequence):
                    self = .sequence(sequence.map(Value.init))
                case .mapping(let mapping):
                    self = .mapping(mapping.map { (key: $0.key.string ?? "\($0.key)", value: Value($0.value)) })
                case .alias:
                    self = .scalar("", .null)
                }
            }
        }

        /// One top-level key: its lines, the comment and blank lines just above it, its value.
        struct Block {
            var lines: ArraySlice<Substring>
            var leading: ArraySlice<Substring>
            var firstLine: Int
            var value: Value
            /// For a block list: the column of its `-` and the 0-based line of each item.
            var itemColumn: Int?
            var itemLines: [Int]
        }

        /// The whole document's value.
        let root: Value
        let prefix: ArraySlice<Substring>
        let suffix: ArraySlice<Substring>
        let keys: [String]
        let index: [String: Int]
        private let blocks: [Block]

        func block(_ key: String) -> Block? { index[key].map { blocks[$0] } }

        init?(_ text: String) {
            guard let node = try? Yams.compose(yaml: text, .basic), case .mapping(let mapping) = node, mapping.style != .flow else { return nil }
            root = Value(node)
            let lines = Self.lines(of: text)
            // 0-based first line of each key, in order.
            var starts: [(key: String, line: Int, value: Node)] = []
            for (keyNode, value) in mapping {
                guard let key = keyNode.string, let mark = keyNode.mark, mark.column == 1, mark.line >= 1, mark.line <= lines.count else { return nil }
                starts.append((key, mark.line - 1, value))
            }
            guard !starts.isEmpty else { return nil }
            // A block ends where the next key's leading comments and blank lines begin.
            func leadingStart(before line: Int, notBefore floor: Int) -> Int {
                var start = line
                while start > floor {
                    let previous = lines[start - 1].drop { $0 == " " }
                    guard previous.isEmpty || previous.hasPrefix("#") else { break }
                    start -= 1
                }
                return start
            }
            var blocks: [Block] = []
            var end: Int
            // The text after the last value: trailing blank lines (the final newline's empty line).
            var lastContent = lines.count
            while lastContent > starts[starts.count - 1].line + 1, lines[lastContent - 1].allSatisfy({ $0 == " " }) { lastContent -= 1 }
            suffix = lines[lastContent...]
            end = lastContent
            var built: [Block] = []
            for i in stride(from: starts.count - 1, through: 0, by: -1) {
                let start = starts[i]
                let floor = i > 0 ? starts[i - 1].line + 1 : 0
                let leading = leadingStart(before: start.line, notBefore: floor)
                var itemColumn: Int?
                var itemLines: [Int] = []
                if case .sequence(let sequence) = start.value, sequence.style != .flow {
                    for item in sequence {
                        guard let mark = item.mark, mark.line >= 1, mark.line <= lines.count else { return nil }
                        itemLines.append(mark.line - 1)
                        itemColumn = itemColumn ?? Self.dashColumn(in: lines[mark.line - 1])
                    }
                }
                built.append(Block(lines: lines[start.line..<end], leading: lines[leading..<start.line], firstLine: start.line,
                                   value: Value(start.value), itemColumn: itemColumn, itemLines: itemLines))
                end = leading
            }
            blocks = built.reversed()
            prefix = lines[0..<end]
            keys = starts.map(\.key)
            index = Dictionary(starts.enumerated().map { ($0.element.key, $0.offset) }, uniquingKeysWith: { first, _ in first })
            self.blocks = blocks
            guard index.count == keys.count else { return nil }
        }

        /// `text` cut into lines where libyaml sees line breaks: LF, CR LF, a lone CR, and YAML
        /// 1.1's NEL (U+0085), LS (U+2028) and PS (U+2029). Yams' marks count lines that way, so
        /// the blocks must too: cutting at LF alone put a key's mark past the last line (a trap)
        /// or on another key's lines (blocks silently moved). The lines are joined with LF again;
        /// a value that changes by it (an LS inside a quoted string) fails the read-back check in
        /// ``ManifestTextEdit/edit(_:toSay:)``, which then keeps the encoder's text.
        static func lines(of text: String) -> [Substring] {
            var lines: [Substring] = []
            let scalars = text.unicodeScalars
            var start = scalars.startIndex
            var index = start
            while index != scalars.endIndex {
                let scalar = scalars[index]
                switch scalar.value {
                case 0x0A, 0x85, 0x2028, 0x2029:
                    lines.append(Substring(scalars[start..<index]))
                    index = scalars.index(after: index)
                    start = index
                case 0x0D:
                    lines.append(Substring(scalars[start..<index]))
                    index = scalars.index(after: index)
                    if index != scalars.endIndex, scalars[index].value == 0x0A { index = scalars.index(after: index) }
                    start = index
                default:
                    index = scalars.index(after: index)
                }
            }
            lines.append(Substring(scalars[start..<scalars.endIndex]))
            return lines
        }

        /// The 0-based column of the `-` that starts a block list item on `line`.
        static func dashColumn(in line: Substring) -> Int? {
            let spaces = line.prefix { $0 == " " }.count
            return line.dropFirst(spaces).hasPrefix("-") ? spaces : nil
        }
    }
}
