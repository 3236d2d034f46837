import ArgumentParser
import CaptureSet
import LiveHosts
import ReplayKit

/// `tether replay --sweep`: every set swept in worker processes, a table per set, one JUnit case per variant.
extension ReplayCommand {
    /// `--sweep`: every set swept, a table per set, one JUnit test case per variant.
    func runSweeps(_ sets: [String], kind: SweepKind, options: ReplayOptions, settle: Duration) throws {
        // With --sweep, --shard splits each set's variants, not the sets.
        let shard = self.shard.flatMap(ReplayShard.init)
        var suites: [JUnitReport.TestSuite] = []
        var anyFailed = false
        let only = sweepFrames.flatMap(FaultSweep.frameRange).map { Set($0) }
        for set in sets {
            let name = CaptureSetDirectory(path: set).name
            let status = StatusLine()
            let attempt = Self.sweepSet(set, kind: kind, options: options, only: only, settle: settle, forking: !sweepExhaustive, shard: shard) { done, total in
                status.update { "sweeping \(name): \(done)/\(total) variants" }
            }
            guard case .success(let result) = attempt else {
                status.clear()
                anyFailed = true
                if case .failure(let error) = attempt {
                    StandardOutput.shared.line("ERROR \(name): \(error)")
                    suites.append(JUnitReport.TestSuite(name: "sweep \(kind) \(name)", cases: [
                        JUnitReport.TestCase(name: "sweep", className: "sweep.\(name)", failure: JUnitReport.Failure(message: error.description, type: "error")),
                    ]))
                }
                continue
            }
            status.clear()
            StandardOutput.shared.write(result.report(setPath: set, tool: Self.toolName))
            if result.failed > 0 { anyFailed = true }
            suites.append(JUnitReport.TestSuite(sweep: result, name: name, setPath: set, tool: Self.toolName))
        }
        StandardOutput.shared.flush()
        if let junit { try JUnitReport(name: "tether replay --sweep", suites: suites).write(to: junit) }
        if anyFailed { throw CommandFailure(message: "", exitCode: 1) }
    }

    /// One set loaded and swept, its variants in worker processes (``SweepWorkers``).
    static func sweepSet(_ set: String, kind: SweepKind, options: ReplayOptions, only: Set<Int>?, settle: Duration, forking: Bool,
                         shard: ReplayShard?, progress: @escaping @Sendable (Int, Int) -> Void) -> Result<SweepResult, ReplayError> {
        do throws(ReplayError) {
            let loaded = try loadReplaySet(at: set, options: options)
            let plan = try FaultSweep.plan(loaded, kind: kind, options: options, only: only, settle: settle, forking: forking)
            let part = shard.map(plan.part)
            let variants = SweepWorkers.run(plan, part: part, setPath: set, parallelism: SweepWorkers.processors, progress: progress)
            return .success(plan.result(variants, part: part))
        } catch {
            return .failure(error)
        }
    }

}
