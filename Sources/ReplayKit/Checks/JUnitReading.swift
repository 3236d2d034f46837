/// Reading a JUnit XML report back into ``JUnitReport``'s suites (`tether junit merge`).
///
/// The reader is Tether's own, over the subset of XML 1.0 a JUnit report uses: elements,
/// attributes, text, CDATA, comments, processing instructions, the five predefined entities and
/// character references. Foundation's `XMLParser` (libxml2) was the first choice and failed real
/// reports: a text node over 10 MB (a long `<system-out>`) stops it with a bare error number
/// unless `XML_PARSE_HUGE` is set, which `XMLParser` cannot set, and an undefined entity reference
/// in text vanished without a word. Here nothing but the file's size limits a node, every error
/// names its line and column in words, and a `DOCTYPE` is refused outright: a report never has
/// one, and refusing it is what keeps entity expansion (a billion laughs) and external entities
/// out entirely.
public enum JUnitReading {
    /// The largest report read: a report beyond this is refused before parsing, as no CI system
    /// shows one that size either.
    public static let maximumBytes = 1 << 30

    /// Why a file is not a JUnit report: where, and what is wrong, in words.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The file, as named by the caller.
        public var path: String
        /// 1-based line and column (in Unicode scalars) of the problem.
        public var line: Int
        public var column: Int
        /// What is wrong.
        public var reason: String

        public var description: String {
            "\(path):\(line):\(column): \(reason). Give a JUnit XML report, such as `tether replay --junit` writes."
        }
    }

    /// A report read: its suites, and what was left out (one sentence per element name).
    public struct Report: Sendable, Hashable {
        /// Every `<testsuite>`, in order.
        public var suites: [JUnitReport.TestSuite]
        /// Elements not in Tether's model (properties, system-err, a suite's own system-out…).
        public var warnings: [String]
    }

    /// Parses the bytes of a report (the file at `path`, named in errors).
    /// - Throws: ``ParseError`` for anything that is not well-formed XML or not a JUnit report.
    public static func parse(_ bytes: [UInt8], path: String) throws(ParseError) -> Report {
        guard bytes.count <= maximumBytes else {
            throw ParseError(path: path, line: 1, column: 1, reason: "it is \(bytes.count) bytes, more than the \(maximumBytes) a report may have")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let offset = firstInvalidUTF8(bytes)
            let line = bytes[..<offset].reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
            throw ParseError(path: path, line: line, column: 1, reason: "byte \(offset) is not UTF-8; a report is UTF-8 text")
        }
        var lexer = XMLLexer(text.unicodeScalars, path: path)
        var builder = JUnitBuilder(path: path)
        while let token = try lexer.next() {
            try builder.take(token, at: lexer.tokenPosition)
        }
        return try builder.finish(at: lexer.position)
    }

    /// The offset of the first byte that does not start a valid UTF-8 sequence.
    private static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int {
        var i = 0
        while i < bytes.count {
            let lead = bytes[i]
            let length = lead < 0x80 ? 1 : (0xC2..<0xE0).contains(lead) ? 2 : (0xE0..<0xF0).contains(lead) ? 3 : (0xF0..<0xF5).contains(lead) ? 4 : 0
            guard length > 0, i + length <= bytes.count,
                  String(validating: bytes[i..<(i + length)], as: UTF8.self) != nil else { return i }
            i += length
        }
        return i
    }
}

/// One piece of an XML document.
private enum XMLToken {
    case start(name: String, attributes: [(String, String)], selfClosing: Bool)
    case end(name: String)
    case text(String)
}

/// XML 1.0 tokens from Unicode scalars, tracking line and column.
private struct XMLLexer {
    let scalars: String.UnicodeScalarView
    let path: String
    var index: String.UnicodeScalarView.Index
    var position = (line: 1, column: 1)
    var tokenPosition = (line: 1, column: 1)
    var sawRoot = false
    var depth = 0

    init(_ scalars: String.UnicodeScalarView, path: String) {
        self.scalars = scalars
        self.path = path
        index = scalars.startIndex
        if index != scalars.endIndex, scalars[index] == "\u{FEFF}" { index = scalars.index(after: index) }
    }

    func error(_ reason: String) -> JUnitReading.ParseError {
        JUnitReading.ParseError(path: path, line: position.line, column: position.column, reason: reason)
    }

    var atEnd: Bool { index == scalars.endIndex }
    var current: Unicode.Scalar? { atEnd ? nil : scalars[index] }

    mutating func advance() {
        guard !atEnd else { return }
        let scalar = scalars[index]
        index = scalars.index(after: index)
        if scalar == "\n" || (scalar == "\r" && current != "\n") {
            position = (position.line + 1, 1)
        } else {
            position.column += 1
        }
    }

    func lookingAt(_ literal: String) -> Bool {
        var i = index
        for scalar in literal.unicodeScalars {
            guard i != scalars.endIndex, scalars[i] == scalar else { return false }
            i = scalars.index(after: i)
        }
        return true
    }

    mutating func skip(_ literal: String) {
        for _ in literal.unicodeScalars { advance() }
    }

    /// XML 1.0's Char production: tab, LF, CR, and everything from U+0020 but the surrogates
    /// (which a Swift scalar never is) and U+FFFE/U+FFFF.
    static func isXMLCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: return true
        case 0x20...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    static func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" }

    func checked(_ scalar: Unicode.Scalar) throws(JUnitReading.ParseError) -> Unicode.Scalar {
        guard Self.isXMLCharacter(scalar) else {
            throw error("U+\(String(scalar.value, radix: 16, uppercase: true)) is a character XML does not allow")
        }
        return scalar
    }

    mutating func next() throws(JUnitReading.ParseError) -> XMLToken? {
        while true {
            tokenPosition = position
            guard let scalar = current else { return nil }
            if scalar != "<" {
                let text = try readText()
                if depth == 0 {
                    guard text.unicodeScalars.allSatisfy(Self.isSpace) else {
                        throw error(sawRoot ? "there is text after the root element ends" : "there is text before the root element")
                    }
                    continue
                }
                return .text(text)
            }
            if lookingAt("<!--") {
                skip("<!--")
                try skipPast("-->", what: "a comment")
                continue
            }
            if lookingAt("<![CDATA[") {
                guard depth > 0 else { throw error("a CDATA section outside the root element") }
                skip("<![CDATA[")
                var text = String.UnicodeScalarView()
                while !lookingAt("]]>") {
                    guard let scalar = current else { throw error("the file ends inside a CDATA section") }
                    text.append(try checked(scalar))
                    advance()
                }
                skip("]]>")
                return .text(String(text))
            }
            if lookingAt("<!DOCTYPE") {
                throw error("it has a DOCTYPE; a JUnit report has none, and Tether does not read document type declarations (they can define entities that expand without bound or read other files)")
            }
            if lookingAt("<?") {
                skip("<?")
                try skipPast("?>", what: "a processing instruction")
                continue
            }
            if lookingAt("</") {
                skip("</")
                let name = try readName()
                skipSpace()
                guard current == ">" else { throw error("a closing tag </\(name) is missing its '>'") }
                advance()
                depth -= 1
                return .end(name: name)
            }
            advance()
            let name = try readName()
            guard depth > 0 || !sawRoot else { throw error("a second root element <\(name)> after the first one ends") }
            var attributes: [(String, String)] = []
            while true {
                let hadSpace = skipSpace()
                guard let scalar = current else { throw error("the file ends inside the tag <\(name)") }
                if scalar == "/" {
                    advance()
                    guard current == ">" else { throw error("a '/' in the tag <\(name)> is not followed by '>'") }
                    advance()
                    sawRoot = true
                    return .start(name: name, attributes: attributes, selfClosing: true)
                }
                if scalar == ">" {
                    advance()
                    depth += 1
                    sawRoot = true
                    return .start(name: name, attributes: attributes, selfClosing: false)
                }
                guard hadSpace else { throw error("the tag <\(name)> needs a space before its next attribute") }
                let key = try readName()
                skipSpace()
                guard current == "=" else { throw error("the attribute \(key) of <\(name)> has no '=' and value") }
                advance()
                skipSpace()
                guard let quote = current, quote == "\"" || quote == "'" else {
                    throw error("the value of the attribute \(key) of <\(name)> is not in quotes")
                }
                advance()
                let value = try readAttributeValue(until: quote)
                guard !attributes.contains(where: { $0.0 == key }) else { throw error("the attribute \(key) is given twice in <\(name)>") }
                attributes.append((key, value))
            }
        }
    }

    @discardableResult
    mutating func skipSpace() -> Bool {
        var skipped = false
        while let scalar = current, Self.isSpace(scalar) { advance(); skipped = true }
        return skipped
    }

    mutating func skipPast(_ terminator: String, what: String) throws(JUnitReading.ParseError) {
        while !lookingAt(terminator) {
            guard let scalar = current else { throw error("the file ends inside \(what)") }
            _ = try checked(scalar)
            advance()
        }
        skip(terminator)
    }

    mutating func readName() throws(JUnitReading.ParseError) -> String {
        var name = String.UnicodeScalarView()
        while let scalar = current, !Self.isSpace(scalar), !"/>=<\"'&".unicodeScalars.contains(scalar) {
            name.append(try checked(scalar))
            advance()
        }
        guard !name.isEmpty else { throw error("a name was expected here") }
        return String(name)
    }

    /// Text up to the next `<`, with references resolved and line ends made LF (XML 2.11).
    mutating func readText() throws(JUnitReading.ParseError) -> String {
        var text = String.UnicodeScalarView()
        while let scalar = current, scalar != "<" {
            if scalar == "&" {
                text.append(try readReference())
            } else if scalar == "\r" {
                advance()
                if current == "\n" { advance() }
                text.append("\n")
            } else {
                text.append(try checked(scalar))
                advance()
            }
        }
        return String(text)
    }

    /// An attribute value: references resolved, and each literal tab, CR or LF a space (XML 3.3.3);
    /// a character reference keeps its character, which is how a writer carries a newline.
    mutating func readAttributeValue(until quote: Unicode.Scalar) throws(JUnitReading.ParseError) -> String {
        var value = String.UnicodeScalarView()
        while true {
            guard let scalar = current else { throw error("the file ends inside an attribute value") }
            if scalar == quote { advance(); break }
            if scalar == "<" { throw error("a '<' inside an attribute value (write &lt;)") }
            if scalar == "&" {
                value.append(try readReference())
            } else if scalar == "\r" {
                advance()
                if current == "\n" { advance() }
                value.append(" ")
            } else {
                value.append(Self.isSpace(scalar) ? " " : try checked(scalar))
                advance()
            }
        }
        return String(value)
    }

    /// A reference's name for a message: at most 64 characters, the rest said as `…`.
    static func shown(_ body: String) -> String {
        body.unicodeScalars.count <= 64 ? body : String(String.UnicodeScalarView(body.unicodeScalars.prefix(64))) + "…"
    }

    /// `&name;` of the five predefined entities, or `&#N;` / `&#xH;`.
    mutating func readReference() throws(JUnitReading.ParseError) -> Unicode.Scalar {
        advance()
        var body = ""
        while let scalar = current, scalar != ";" {
            guard !Self.isSpace(scalar), scalar != "<", scalar != "&" else {
                throw error("\"&\(Self.shown(body))\" starts no reference: a reference ends with ';' (write &amp; for an ampersand)")
            }
            // A name is short; a long run is said shortened rather than gathered without end.
            guard body.unicodeScalars.count < 1024 else {
                throw error("\"&\(Self.shown(body))\" starts no reference: no ';' within 1024 characters (write &amp; for an ampersand)")
            }
            body.unicodeScalars.append(try checked(scalar))
            advance()
        }
        guard current == ";" else { throw error("the file ends inside the reference &\(Self.shown(body))") }
        advance()
        switch body {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "apos": return "'"
        case "quot": return "\""
        default: break
        }
        var number: UInt32?
        if body.hasPrefix("#x") { number = UInt32(body.dropFirst(2), radix: 16) } else if body.hasPrefix("#") { number = UInt32(body.dropFirst(), radix: 10) }
        if body.hasPrefix("#") {
            guard let number, let scalar = Unicode.Scalar(number), Self.isXMLCharacter(scalar) else {
                throw error("&\(body); is not a character XML allows")
            }
            return scalar
        }
        throw error("&\(Self.shown(body)); is an entity XML does not define; a report may use only &lt; &gt; &amp; &apos; &quot; and character references such as &#10;")
    }
}

/// Suites from XML tokens: <testsuites> → <testsuite> → <testcase> → <failure>/<error>/
/// <skipped>/<system-out>; any other element is left out and named once in a warning.
private struct JUnitBuilder {
    let path: String
    var suites: [JUnitReport.TestSuite] = []
    var warnings: [String] = []
    var sawRoot = false
    var open: [String] = []
    var suite: JUnitReport.TestSuite?
    var testCase: JUnitReport.TestCase?
    var text = ""
    var ignoredDepth = 0
    var warned: Set<String> = []

    init(path: String) { self.path = path }

    func error(_ reason: String, at position: (line: Int, column: Int)) -> JUnitReading.ParseError {
        JUnitReading.ParseError(path: path, line: position.line, column: position.column, reason: reason)
    }

    mutating func take(_ token: XMLToken, at position: (line: Int, column: Int)) throws(JUnitReading.ParseError) {
        switch token {
        case .text(let more):
            if ignoredDepth == 0 { text += more }
        case .start(let name, let attributes, let selfClosing):
            try start(name, attributes: attributes, at: position)
            if selfClosing { try end(name, at: position) }
        case .end(let name):
            try end(name, at: position)
        }
    }

    mutating func start(_ element: String, attributes list: [(String, String)], at position: (line: Int, column: Int)) throws(JUnitReading.ParseError) {
        defer { open.append(element) }
        text = ""
        if ignoredDepth > 0 {
            ignoredDepth += 1
            return
        }
        let attributes = Dictionary(list, uniquingKeysWith: { first, _ in first })
        switch (open.last, element) {
        case (nil, "testsuites"):
            sawRoot = true
        case (nil, "testsuite"), ("testsuites", "testsuite"):
            sawRoot = true
            suite = JUnitReport.TestSuite(name: attributes["name"] ?? "", cases: [])
        case ("testsuite", "testcase"):
            guard let name = attributes["name"] else { throw error("a <testcase> has no name attribute", at: position) }
            testCase = JUnitReport.TestCase(name: name, className: attributes["classname"] ?? "")
        case ("testcase", "failure"), ("testcase", "error"):
            testCase?.failure = JUnitReport.Failure(message: attributes["message"] ?? "", type: attributes["type"] ?? element)
        case ("testcase", "skipped"):
            testCase?.skipped = attributes["message"] ?? ""
        case ("testcase", "system-out"):
            break
        case (nil, _):
            throw error("its root element is <\(element)>, not <testsuites> or <testsuite>", at: position)
        default:
            // Properties, system-err, a suite's own system-out, tool-specific elements: not in
            // Tether's report model, so left out, and said once per element name.
            ignoredDepth = 1
            if warned.insert(element).inserted {
                warnings.append("<\(element)> inside <\(open.last ?? "")> is not carried into the merged report")
            }
        }
    }

    mutating func end(_ element: String, at position: (line: Int, column: Int)) throws(JUnitReading.ParseError) {
        guard let last = open.last else { throw error("a closing tag </\(element)> with no element open", at: position) }
        guard last == element else { throw error("</\(element)> closes <\(last)>; a closing tag must match the element it closes", at: position) }
        open.removeLast()
        if ignoredDepth > 0 {
            ignoredDepth -= 1
            return
        }
        switch element {
        case "testsuite":
            if let suite { suites.append(suite) }
            suite = nil
        case "testcase":
            if let testCase { suite?.cases.append(testCase) }
            testCase = nil
        case "failure", "error":
            testCase?.failure?.details = Self.trimmed(text)
        case "system-out":
            testCase?.output = text
        default:
            break
        }
        text = ""
    }

    func finish(at position: (line: Int, column: Int)) throws(JUnitReading.ParseError) -> JUnitReading.Report {
        if let last = open.last { throw error("the file ends inside <\(last)>: it is cut off", at: position) }
        guard sawRoot else { throw error("it holds no <testsuites> or <testsuite> element", at: (1, 1)) }
        return JUnitReading.Report(suites: suites, warnings: warnings)
    }

    static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !XMLLexer.isSpace($0) }),
              let last = scalars.lastIndex(where: { !XMLLexer.isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
