import CaptureSet
import Foundation
import ReplayKit
import Testing
@testable import TetherCLI
import TetherIntegrations
import TetherTestSupport

/// A core's own options are read by `tether replay` from the arguments its parser leaves over
/// (``CoreOptionArguments``), not by rewriting the command line.
@Suite struct CoreOptionTests {
    static let registry = TetherIntegrations.builtIn

    static func read(_ arguments: [String]) -> Result<CoreOptionArguments, SettingValueError> {
        CoreOptionArguments.parse(arguments, registry: registry)
    }

    @Test func pathsAndCoreOptionsAreReadInTheOrderGiven() throws {
        let read = try Self.read(["Captures/a", "--messaging-window-size", "4", "Captures/b", "--ingest-idle-timeout=5"]).get()
        #expect(read.paths == ["Captures/a", "Captures/b"])
        #expect(read.settings.map { "\($0.core).\($0.key)=\($0.value.scalarText ?? "")" }
                == ["messaging.settings.window_size=4", "ingest.idle_timeout_ms=5000"])
    }

    @Test func anOptionThatIsNoCoresIsRefusedNamingTheClosest() {
        guard case .failure(let error) = Self.read(["Captures/a", "--messaging-window-sise", "4"]) else {
            Issue.record("a misspelt option was taken")
            return
        }
        #expect(error.message.contains("--messaging-window-sise is not an option"), "\(error.message)")
        #expect(error.message.contains("did you mean \"--messaging-window-size\""), "\(error.message)")
        #expect(error.message.contains("./--messaging-window-sise"), "\(error.message)")
    }

    @Test func anOptionWithoutItsValueIsRefused() {
        guard case .failure(let error) = Self.read(["Captures/a", "--ingest-port"]) else {
            Issue.record("an option without a value was taken")
            return
        }
        #expect(error.message.contains("--ingest-port needs a value"), "\(error.message)")
    }

    @Test func aValueOutOfBoundsNamesTheOptionAsTyped() {
        guard case .failure(let error) = Self.read(["--messaging-window-size=16", "Captures/a"]) else {
            Issue.record("16 was taken")
            return
        }
        #expect(error.message.contains("--messaging-window-size takes a whole number from 1 to 15; got \"16\""), "\(error.message)")
    }

    @Test func aDashAloneAndADotSlashNameArePaths() throws {
        let read = try Self.read(["-", "./-odd"]).get()
        #expect(read.paths == ["-", "./-odd"])
        #expect(read.settings.isEmpty)
    }

    @Test func theSameSettingGivenBothWaysIsRefused() throws {
        let result = try Tools.tether(["replay", "Captures/plugin-faulty", "--set", "ingest.idle_timeout_ms=5s", "--ingest-idle-timeout", "2"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--set ingest.idle_timeout_ms and --ingest-idle-timeout give the same setting"), "\(result.stderr)")
    }

    @Test func anUnknownOptionOfReplayIsRefusedAsAUsageError() throws {
        let result = try Tools.tether(["replay", "Captures/plugin-faulty", "--tarce", "t.jsonl"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--tarce is not an option of tether replay or of a registered core"), "\(result.stderr)")
    }

    @Test func aTimerPastTheDrainIsWarnedAboutAndALongerDrainReplaysIt() throws {
        let folder = try TemporaryFolder("cli-tests")
        // The end message (frame 1207) lost: only the 20-minute idle timeout can end the stream.
        let common = ["replay", "Captures/plugin-clean", "--scenarios", "none", "--fault", "drop:frame=1207",
                      "--set", "ingest.idle_timeout_ms=20m"]
        let short = try Tools.tether(common + ["--trace", folder.path("short.jsonl").path])
        #expect(short.stderr.contains("tether: warning: plugin-clean: core ingest still had a timer set, due at 1260.000 s"), "\(short.stderr)")
        #expect(try String(contentsOfFile: folder.path("short.jsonl").path, encoding: .utf8).contains("\"cause\":\"finished\""))

        let long = try Tools.tether(common + ["--drain-horizon", "30m", "--trace", folder.path("long.jsonl").path])
        #expect(!long.stderr.contains("still had a timer set"), "\(long.stderr)")
        let trace = try String(contentsOfFile: folder.path("long.jsonl").path, encoding: .utf8)
        #expect(trace.contains("{\"t_ns\":1260000038849,\"core\":\"ingest\",\"event\":\"stream_end\",\"cause\":\"idle_timeout\""))
    }

    @Test func aDrainHorizonThatIsNoDurationIsRefused() throws {
        let result = try Tools.tether(["replay", "Captures/plugin-clean", "--drain-horizon", "2d"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--drain-horizon 2d is not a duration"), "\(result.stderr)")
    }

    /// `ReplayCommand.ownLongOptions` is what a core may not declare; it must be exactly the
    /// options replay's own parser knows, which `--help` lists (the hidden worker option aside).
    @Test func replaysOwnOptionListIsTheOneHelpShows() throws {
        let result = try Tools.tetherSucceeds(["replay", "--help"])
        var shown = Set<String>()
        for line in result.stdout.split(separator: "\n") where line.hasPrefix("  -") {
            // The option is the line's first `--` word (`-h, --help`); later ones are its help text's.
            if let word = line.split(separator: " ").first(where: { $0.hasPrefix("--") }) {
                shown.insert(String(word.dropFirst(2)))
            }
        }
        #expect(shown == ReplayCommand.ownLongOptions.subtracting(["sweep-worker"]))
    }

    @Test func aCoreDeclaringOneOfReplaysOwnOptionsIsFound() {
        struct Clashing: CoreIntegration {
            var name: String { "clash" }
            var summary: String { "declares --trace" }
            var replayedRoles: Set<InterfaceRole> { [] }
            var settings: [IntegrationSetting] { [IntegrationSetting(key: "trace", flag: "trace", help: "x", kind: .text)] }
            func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
                throw .manifest(path: "", line: nil, field: "", problem: "not used", hint: "")
            }
        }
        #expect(ReplayCommand.optionsTakenBy(Self.registry).isEmpty)
        #expect(ReplayCommand.optionsTakenBy(Self.registry.adding(Clashing())) == ["trace"])
    }
}
