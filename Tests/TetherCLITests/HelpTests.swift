import Foundation
import Testing

/// Every subcommand's `--help` shows a real example: a line that runs `tether <subcommand> …`.
@Suite struct HelpTests {
    static let subcommands: [[String]] = [
        ["inspect"], ["import"], ["export"], ["annotate"], ["replay"], ["diff"],
        ["serve", "ingest"], ["simulate", "plugin"], ["record"],
    ]

    @Test(arguments: subcommands)
    func helpShowsAnExampleInvocation(_ path: [String]) throws {
        let result = try Tools.tether(path + ["--help"])
        #expect(result.status == 0, "tether \(path.joined(separator: " ")) --help exited \(result.status): \(result.stderr)")
        let example = "tether " + path.joined(separator: " ") + " "
        let lines = result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains { $0.hasPrefix(example) }, "no line starting with '\(example)' in:\n\(result.stdout)")
    }

    @Test(arguments: subcommands)
    func everyOptionInHelpHasAnExplanation(_ path: [String]) throws {
        let result = try Tools.tether(path + ["--help"])
        // argument-parser prints an option as `  --flag <value>   Help text`, or, when the flag is
        // long, the flag alone with the help on the next, deeper-indented line.
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var bare: [String] = []
        for (index, line) in lines.enumerated() where line.hasPrefix("  -") {
            // Flag tokens are `-x,`, `--name`, `<value>`, `<value> ...`; any other word is help text.
            let words = line.split(separator: " ")
            if words.contains(where: { !$0.hasPrefix("-") && !$0.hasPrefix("<") && !$0.hasSuffix(">") && $0 != "..." }) { continue }
            let next = index + 1 < lines.count ? lines[index + 1] : ""
            let nextTrimmed = next.trimmingCharacters(in: .whitespaces)
            if next.hasPrefix("        ") && !nextTrimmed.isEmpty && !nextTrimmed.hasPrefix("-") { continue }
            bare.append(line.trimmingCharacters(in: .whitespaces))
        }
        #expect(bare.isEmpty, "options without help text: \(bare)")
    }

    @Test func rootHelpListsEverySubcommand() throws {
        let result = try Tools.tether(["--help"])
        #expect(result.status == 0)
        for name in ["inspect", "import", "export", "annotate", "replay", "diff", "serve", "simulate", "record"] {
            #expect(result.stdout.contains("  \(name)"), "root help does not list \(name)")
        }
    }

    @Test func unknownSubcommandExitsWithTheUsageCode() throws {
        let result = try Tools.tether(["frobnicate"])
        #expect(result.status == 64)
    }
}
