import ArgumentParser
import CaptureSet
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture
import ReplayKit

/// The `tether` command: record BLE and UDP traffic into capture sets, inspect them, and replay
/// them on a virtual clock against Tether's protocol cores.
public struct TetherCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tether",
        abstract: "Record, inspect and replay BLE and UDP captures against Tether's protocol cores.",
        discussion: """
            A capture set is a folder Captures/<name>/ holding capture.pcapng (every frame, with \
            nanosecond timestamps and comments) and manifest.yaml (what was recorded, annotations, \
            and the expectations replay checks). See docs/cli.md.

            Replay every committed capture set and check its expectations and baseline:
              tether replay Captures
            """,
        version: TetherVersion.current,
        subcommands: [
            InspectCommand.self, ImportCommand.self, ExportCommand.self, AnnotateCommand.self,
            ReplayCommand.self, DiffCommand.self, ServeCommand.self, SimulateCommand.self, RecordCommand.self,
            SealCommand.self, RedactCommand.self, LiveCommand.self, EmulateCommand.self, TraceCommand.self, JUnitCommand.self,
        ]
    )

    public init() {}

    /// Parse the process's arguments, run the chosen subcommand, and exit.
    ///
    /// A ``CommandFailure`` exits with its own status and message (so `diff` can exit 1 for
    /// "different" and 2 for "could not compare"); every other error takes argument-parser's path
    /// (usage errors exit 64, others 1). Buffered output is flushed before any exit.
    ///
    /// Synchronous on purpose: the async work runs in a task while the main thread serves the main
    /// dispatch queue, so `main.swift` is one plain call (an `await` there would pick
    /// argument-parser's synchronous `main()` overload, which refuses async commands).
    public static func main() {
        main(integrations: CLIIntegrations.registry)
    }

    /// ``main()`` with the cores `tether replay` may use: Tether's own are
    /// `TetherIntegrations.builtIn`; a package with a core of its own passes
    /// `TetherIntegrations.builtIn.adding(MyIntegration())` from its own executable (see
    /// docs/extending.md). A registry with two cores of one name is refused before parsing.
    public static func main(integrations: IntegrationRegistry) {
        switch integrations.validated() {
        case .success(let registry): CLIIntegrations.use(registry)
        case .failure(let error):
            Terminal.warn("tether: the registered integrations are inconsistent: \(error)")
            SystemCalls.exit(70)
        }
        for flag in ReplayCommand.optionsTakenBy(CLIIntegrations.registry) {
            Terminal.warn("tether: the registered integrations are inconsistent: --\(flag) is an option of tether replay itself, so a core cannot declare it.")
            SystemCalls.exit(70)
        }
        Task {
            let status = await runToCompletion()
            StandardOutput.shared.flush()
            SystemCalls.exit(status)
        }
        dispatchMain()
    }

    /// Parse, run, and turn the outcome into an exit status (printing what argument-parser would).
    static func runToCompletion(_ arguments: [String]? = nil) async -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch let failure as CommandFailure {
            StandardOutput.shared.flush()
            if !failure.message.isEmpty { Terminal.warn("tether: \(failure.message)") }
            return failure.exitCode
        } catch {
            StandardOutput.shared.flush()
            let code = exitCode(for: error).rawValue
            let message = fullMessage(for: error)
            if !message.isEmpty {
                if code == 0 {
                    StandardOutput.shared.line(message)
                } else {
                    Terminal.warn(message)
                }
            }
            return code
        }
    }
}

/// A command ended without doing what was asked: `message` says why and what to do next.
struct CommandFailure: Error, CustomStringConvertible {
    /// The message for stderr (prefixed with `tether: `); empty when the command already said it.
    var message: String
    /// The process exit status.
    var exitCode: Int32

    /// Status 1: a check failed or the work could not be done.
    static func failed(_ message: String) -> CommandFailure { CommandFailure(message: message, exitCode: 1) }

    var description: String { message }
}
