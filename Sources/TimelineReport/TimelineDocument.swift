import BehaviourTrace
import ReplayKit
#if canImport(CaptureSet)
import CaptureSet
#endif

/// One set's report: its timeline, and its checks when it could be replayed.
public struct TimelineSetReport: Sendable {
    /// The set's name (its folder's name).
    public var name: String
    /// The manifest's title.
    public var title: String
    /// The timeline built while it replayed.
    public var timeline: TimelineBuilder
    /// Its expectations and baseline comparisons; nil when it could not be replayed.
    public var outcome: CaptureSetOutcome?
    /// Why it could not be replayed or compared, when it could not.
    public var errors: [String]

    /// Creates a set's report.
    public init(name: String, title: String, timeline: TimelineBuilder, outcome: CaptureSetOutcome?, errors: [String] = []) {
        self.name = name
        self.title = title
        self.timeline = timeline
        self.outcome = outcome
        self.errors = errors
    }

    /// Every check passed and nothing failed.
    public var passed: Bool { errors.isEmpty && (outcome?.passed ?? false) }
}

/// What the index page says of a set: enough to list it once its page is written and its timeline
/// dropped.
public struct TimelineIndexEntry: Sendable, Hashable {
    /// The set's name.
    public var name: String
    /// The manifest's title.
    public var title: String
    /// The set's page, relative to the index.
    public var page: String
    /// Every check passed.
    public var passed: Bool
    /// Virtual duration in nanoseconds (the last event or frame).
    public var durationNs: Int64
    /// Trace events and captured frames.
    public var events: Int, frames: Int
    /// Expectations held / checked; baselines matching / compared.
    public var expectationsPassed: Int, expectations: Int, baselinesPassed: Int, baselines: Int
    /// Why it could not be replayed, when it could not.
    public var errors: [String]
}

/// The HTML files of `tether replay --html DIR`: `index.html` listing the sets, and one page per
/// set (``page(_:)``) with its timeline, expectations, baseline differences and plots. Every page
/// is self-contained: its script, style and data are inline, and it fetches nothing.
public enum TimelineDocument {
    /// The longest set name a page name carries whole; a longer one is cut there and followed by
    /// a digest of the whole name, so every page name fits a file system's 255-byte limit with room
    /// for the `-N` that keeps names apart.
    public static let pageNameKeptCharacters = 120

    /// A file name for a set's page: its name with anything but letters, digits, `-`, `_` and `.`
    /// replaced by `_` (cut to ``pageNameKeptCharacters`` and followed by 16 hex digits of its
    /// FNV-1a hash when longer, as `FileIO.fitted` cuts names), then `-2`, `-3`… when `taken`
    /// already has it.
    public static func pageName(for set: String, taken: Set<String>) -> String {
        var safe = String(set.unicodeScalars.map { scalar -> Character in
            let digit = scalar.value >= 0x30 && scalar.value <= 0x39
            let ok = (scalar.isASCII && (scalar.properties.isAlphabetic || digit)) || "-_.".unicodeScalars.contains(scalar)
            return ok ? Character(scalar) : "_"
        })
        // The safe text is ASCII, so bytes are characters; a long name keeps its start and a hash.
        safe = FileIO.fitted(safe, bytes: pageNameKeptCharacters + 17)
        let base = "set-" + (safe.isEmpty ? "unnamed" : safe)
        var name = base + ".html"
        var n = 2
        while taken.contains(name) {
            name = "\(base)-\(n).html"
            n += 1
        }
        return name
    }

    /// The index entry of `report`, whose page is `page`.
    public static func indexEntry(_ report: TimelineSetReport, page: String) -> TimelineIndexEntry {
        let outcome = report.outcome
        let frames = report.timeline.lanes.filter { $0.kind == .interface }.reduce(0) { $0 + $1.count }
        return TimelineIndexEntry(
            name: report.name, title: report.title, page: page, passed: report.passed, durationNs: report.timeline.endTimeNs,
            events: report.timeline.events, frames: frames,
            expectationsPassed: outcome?.expectations.filter(\.passed).count ?? 0, expectations: outcome?.expectations.count ?? 0,
            baselinesPassed: outcome?.baselines.filter(\.passed).count ?? 0, baselines: outcome?.baselines.count ?? 0,
            errors: report.errors)
    }

    /// The set's page: HTML with the data, script and style inline.
    public static func page(_ report: TimelineSetReport) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20)
        out += Array("""
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(html(report.name)) — Tether timeline</title>
            <style>\(TimelineAssets.css)</style>
            </head><body class="set-page">
            <header><a href="index.html">← all sets</a>
            <h1 id="set-name">\(html(report.name))</h1><p class="title">\(html(report.title))</p>
            <p id="verdict" class="\(report.passed ? "pass" : "fail")">\(report.passed ? "PASS" : "FAIL")</p></header>
            <div id="errors"></div>
            <section id="timeline-section"><h2>Timeline</h2>
            <div id="toolbar"><button id="zoom-in" title="zoom in (+)">+</button><button id="zoom-out" title="zoom out (−)">−</button>\
            <button id="zoom-reset" title="whole set (0)">whole set</button><span id="view-range"></span>\
            <span class="hint">wheel: zoom · drag: pan · click an event: details</span></div>
            <div id="timeline"><div id="lane-labels"></div><div id="canvas-box"><canvas id="timeline-canvas"></canvas></div></div>
            <div id="tooltip" hidden></div>
            <pre id="details">Click an event for its details.</pre>
            </section>
            <section id="expectations-section"><h2>Expectations</h2><ol id="expectations"></ol></section>
            <section id="baseline-section"><h2>Baseline</h2><div id="baselines"></div></section>
            <section id="plots-section"><h2>Plots</h2><div id="plots"></div></section>
            <script type="application/json" id="timeline-data">
            """.utf8)
        writeData(report, to: &out)
        out += Array("</script>\n<script>\(TimelineAssets.script)</script>\n</body></html>\n".utf8)
        return out
    }

    /// The index page: one row per set with its verdict, duration and counts, linked to its page.
    public static func index(_ entries: [TimelineIndexEntry]) -> [UInt8] {
        let failed = entries.filter { !$0.passed }.count
        var rows = ""
        for entry in entries {
            rows += """
                <tr class="set-row \(entry.passed ? "pass" : "fail")" data-set="\(html(entry.name))" data-passed="\(entry.passed)">\
                <td class="verdict">\(entry.passed ? "PASS" : "FAIL")</td>\
                <td><a href="\(html(entry.page))">\(html(entry.name))</a><div class="title">\(html(entry.title))</div>\
                \(entry.errors.map { "<div class=\"error\">\(html($0))</div>" }.joined())</td>\
                <td class="num">\(html(duration(entry.durationNs)))</td><td class="num">\(entry.events)</td><td class="num">\(entry.frames)</td>\
                <td class="num">\(entry.expectationsPassed)/\(entry.expectations)</td><td class="num">\(entry.baselinesPassed)/\(entry.baselines)</td></tr>

                """
        }
        return Array("""
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Tether replay report</title>
            <style>\(TimelineAssets.css)</style></head><body class="index-page">
            <h1>Tether replay report</h1>
            <p id="summary" class="\(failed == 0 ? "pass" : "fail")">\(failed == 0 ? "PASS" : "FAIL"): \(entries.count) set(s), \(failed) failed</p>
            <table id="sets"><thead><tr><th>verdict</th><th>set</th><th>duration</th><th>events</th><th>frames</th>\
            <th>expectations</th><th>baselines</th></tr></thead><tbody>
            \(rows)</tbody></table>
            </body></html>

            """.utf8)
    }

    /// `12.345 s`, `1 h 02 min 03.5 s`.
    static func duration(_ ns: Int64) -> String {
        let seconds = Double(ns) / 1e9
        if seconds < 60 { return String(format3(seconds)) + " s" }
        let whole = Int(seconds)
        let h = whole / 3600, m = (whole % 3600) / 60
        let s = seconds - Double(h * 3600 + m * 60)
        return (h > 0 ? "\(h) h " : "") + "\(m) min \(format3(s)) s"
    }

    private static func format3(_ value: Double) -> String {
        let milli = Int64((value * 1000).rounded())
        let fraction = String(milli % 1000)
        return "\(milli / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped.
    static func html(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    // MARK: data

    /// The page's data as one JSON object (docs/timeline-report.md describes it): columnar arrays,
    /// times and positions as differences from the item before, strings in one table.
    static func writeData(_ report: TimelineSetReport, to out: inout [UInt8]) {
        var strings = StringTable()
        var lanes = report.timeline.lanes
        lanes.append(baselineLane(report))
        var json = JSONWriter(out: out)
        out = []
        json.raw("{")
        json.key("set"); json.string(report.name); json.raw(",")
        json.key("passed"); json.raw(report.passed ? "true" : "false"); json.raw(",")
        json.key("errors"); json.array(report.errors) { $0.string($1) }; json.raw(",")
        json.key("endUs"); json.int(report.timeline.endTimeNs / 1000); json.raw(",")
        json.key("events"); json.int(Int64(report.timeline.events)); json.raw(",")
        json.key("detailsPerKind"); json.int(Int64(TimelineBuilder.detailsPerKind)); json.raw(",")
        json.key("lanes"); json.raw("[")
        for (i, lane) in lanes.enumerated() {
            if i > 0 { json.raw(",") }
            json.raw("{")
            json.key("name"); json.string(lane.name); json.raw(",")
            json.key("kind"); json.string(lane.kind.rawValue); json.raw(",")
            json.key("core"); json.optionalString(lane.core); json.raw(",")
            json.key("category"); json.optionalString(lane.category); json.raw(",")
            json.key("kinds"); json.array(lane.kindNames) { $0.string($1) }; json.raw(",")
            json.key("kindCounts"); json.array(lane.kindCounts) { $0.int(Int64($1)) }; json.raw(",")
            json.key("strides"); json.array(lane.detailStrides) { $0.int(Int64($1)) }; json.raw(",")
            json.key("t"); json.deltas(lane.timesUs); json.raw(",")
            json.key("k"); json.array(lane.kinds) { $0.int(Int64($1)) }; json.raw(",")
            json.key("p"); json.deltas(lane.positions); json.raw(",")
            let details = lane.keptDetails
            json.key("di"); json.deltas(details.map { Int64($0.item) }); json.raw(",")
            json.key("ds"); json.array(details) { $0.int(Int64(strings.index($1.text))) }
            json.raw("}")
        }
        json.raw("],")
        json.key("expectations"); json.raw("[")
        for (i, result) in (report.outcome?.expectations ?? []).enumerated() {
            if i > 0 { json.raw(",") }
            json.raw("{")
            json.key("name"); json.string(result.expectation.displayName); json.raw(",")
            json.key("type"); json.string(result.expectation.typeName); json.raw(",")
            json.key("passed"); json.raw(result.passed ? "true" : "false"); json.raw(",")
            json.key("message"); json.string(result.message); json.raw(",")
            json.key("evidence"); json.array(result.evidence) { $0.int(Int64($1.index)) }; json.raw(",")
            json.key("evidenceUs"); json.array(result.evidence) { $0.int($1.timeNs / 1000) }; json.raw(",")
            json.key("roles"); json.array(result.evidence) { $0.string($1.role.rawValue) }; json.raw(",")
            json.key("omitted"); json.int(Int64(result.evidenceOmitted))
            json.raw("}")
        }
        json.raw("],")
        json.key("baselines"); json.raw("[")
        for (i, comparison) in (report.outcome?.baselines ?? []).enumerated() {
            if i > 0 { json.raw(",") }
            json.raw("{")
            json.key("core"); json.string(comparison.name); json.raw(",")
            json.key("passed"); json.raw(comparison.passed ? "true" : "false"); json.raw(",")
            json.key("counts"); json.string(comparison.diff.countsLine); json.raw(",")
            json.key("text"); json.string(comparison.passed ? "" : comparison.diff.render(maxLines: 40))
            json.raw("}")
        }
        json.raw("],")
        var plots: [TimelinePlot] = []
        if let progress = report.timeline.progressPlot { plots.append(progress) }
        if let latency = report.timeline.latencyPlot { plots.append(latency) }
        if let rate = report.timeline.ratePlot { plots.append(rate) }
        plots += report.timeline.extraPlots
        json.key("plots"); json.raw("[")
        for (i, plot) in plots.enumerated() {
            if i > 0 { json.raw(",") }
            json.raw("{")
            json.key("title"); json.string(plot.title); json.raw(",")
            json.key("unit"); json.string(plot.unit); json.raw(",")
            json.key("series"); json.raw("[")
            for (j, series) in plot.series.enumerated() {
                if j > 0 { json.raw(",") }
                json.raw("{")
                json.key("name"); json.string(series.name); json.raw(",")
                json.key("points"); json.raw(series.points ? "true" : "false"); json.raw(",")
                json.key("t"); json.deltas(series.timesUs); json.raw(",")
                json.key("v"); json.array(series.values) { $0.double($1) }
                json.raw("}")
            }
            json.raw("]}")
        }
        json.raw("],")
        json.key("strings"); json.array(strings.strings) { $0.string($1) }
        json.raw("}")
        out = json.out
    }

    /// The baseline differences as a lane: `missing` at the baseline event's time (position -1),
    /// `extra`, `moved`, `changed` and `timing` at the new event's time and trace position.
    static func baselineLane(_ report: TimelineSetReport) -> TimelineLane {
        var items: [(timeNs: Int64, kind: String, position: Int64, detail: String)] = []
        for comparison in report.outcome?.baselines ?? [] {
            let core = comparison.name
            func position(_ index: Int) -> Int64 { report.timeline.tracePosition(core: core, ordinal: index).map(Int64.init) ?? -1 }
            let diff = comparison.diff
            for entry in diff.missing {
                items.append((entry.event.timeNs, "missing", -1, "missing from this run (baseline #\(entry.index + 1)): " + TimelineBuilder.detail(of: entry.event)))
            }
            for entry in diff.extra {
                items.append((entry.event.timeNs, "extra", position(entry.index), "not in the baseline: " + TimelineBuilder.detail(of: entry.event)))
            }
            for (kind, list) in [("moved", diff.moved), ("changed", diff.changed), ("timing", diff.timing)] {
                for pair in list {
                    var text = "\(kind) (baseline #\(pair.indexA + 1) at \(pair.a.timeNs) ns): " + TimelineBuilder.detail(of: pair.b)
                    if !pair.fields.isEmpty { text += "  [fields: \(pair.fields.joined(separator: ", "))]" }
                    if pair.deltaNs != 0 { text += "  [Δt \(pair.deltaNs) ns]" }
                    items.append((pair.b.timeNs, kind, position(pair.indexB), text))
                }
            }
        }
        items.sort { ($0.timeNs, $0.position) < ($1.timeNs, $1.position) }
        var lane = TimelineLane(name: "baseline differences", kind: .baseline)
        for item in items {
            lane.add(timeNs: item.timeNs, kind: item.kind, position: item.position) { item.detail }
        }
        return lane
    }
}

extension Expectation {
    /// The expectation's `type` as the manifest writes it.
    var typeName: String {
        switch kind {
        case .count: "count"
        case .absent: "absent"
        case .order: "order"
        case .maxGap: "max_gap"
        case .rate: "rate"
        case .at: "at"
        case .range: "range"
        case .equals: "equals"
        case .monotonic: "monotonic"
        case .oncePer: "once_per"
        case .latency: "latency"
        }
    }
}

/// Strings stored once, by index.
struct StringTable {
    private(set) var strings: [String] = []
    private var indices: [String: Int] = [:]

    mutating func index(_ text: String) -> Int {
        if let index = indices[text] { return index }
        indices[text] = strings.count
        strings.append(text)
        return strings.count - 1
    }
}

/// Compact JSON into bytes; strings escaped so that they can sit inside a `<script>` element.
struct JSONWriter {
    var out: [UInt8]

    mutating func raw(_ text: String) { out += text.utf8 }

    mutating func key(_ name: String) {
        string(name)
        out.append(UInt8(ascii: ":"))
    }

    mutating func optionalString(_ text: String?) {
        if let text { string(text) } else { raw("null") }
    }

    mutating func int(_ value: Int64) { out += String(value).utf8 }

    /// A finite double as the shortest text that reads back to it; NaN and infinities as `null`.
    mutating func double(_ value: Double) {
        guard value.isFinite else { return raw("null") }
        if value == value.rounded(), abs(value) < 1e15 { return int(Int64(value)) }
        out += value.description.utf8
    }

    mutating func string(_ text: String) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
            case UInt8(ascii: "<"): out += Array(#"\u003c"#.utf8)
            case UInt8(ascii: ">"): out += Array(#"\u003e"#.utf8)
            case UInt8(ascii: "&"): out += Array(#"\u0026"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array(#"\u00"#.utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    mutating func array<C: Collection>(_ items: C, _ element: (inout JSONWriter, C.Element) -> Void) {
        out.append(UInt8(ascii: "["))
        var first = true
        for item in items {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            element(&self, item)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// Each value as its difference from the one before (the first from 0).
    mutating func deltas(_ values: [Int64]) {
        var previous: Int64 = 0
        array(values) { json, value in
            json.int(value &- previous)
            previous = value
        }
    }
}
