import ArgumentParser
import Foundation
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
        let budget = sweepBudget.flatMap(SweepBudget.init)
        for set in sets {
            let name = CaptureSetDirectory(path: set).name
            let status = SweepProgressDisplay(set: name, searching: search != nil)
            if let search = search.flatMap(SweepSearch.init) {
                let attempt = Self.searchSet(set, kind: kind, search: search, options: options, only: only, settle: settle, forking: !sweepExhaustive,
                                             budget: budget) { status.show($0) }
                status.clear()
                switch attempt {
                case .success(let result):
                    StandardOutput.shared.write(result.report(setPath: set, tool: Self.toolName))
                    if !result.passedAll { anyFailed = true }
                    suites.append(JUnitReport.TestSuite(search: result, name: name, setPath: set, tool: Self.toolName))
                case .failure(let error):
                    anyFailed = true
                    StandardOutput.shared.line("ERROR \(name): \(error)")
                    suites.append(JUnitReport.TestSuite(name: "search \(search) \(kind) \(name)", cases: [
                        JUnitReport.TestCase(name: "search", className: "search.\(name)", failure: JUnitReport.Failure(message: error.description, type: "error")),
                    ]))
                }
                continue
            }
            let attempt = Self.sweepSet(set, kind: kind, options: options, only: only, settle: settle, forking: !sweepExhaustive, shard: shard,
                                        budget: budget) { status.show($0) }
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

    /// One set loaded and searched (``FaultSearch``), its schedules in worker processes.
    static func searchSet(_ set: String, kind: SweepKind, search: SweepSearch, options: ReplayOptions, only: Set<Int>?, settle: Duration,
                          forking: Bool, budget: SweepBudget?, progress: @escaping @Sendable (SweepProgress) -> Void) -> Result<SearchResult, ReplayError> {
        do throws(ReplayError) {
            let loaded = try loadReplaySet(at: set, options: options)
            let plan = try FaultSweep.plan(loaded, kind: kind, options: options, only: only, settle: settle, forking: forking)
            return .success(SweepWorkers.search(plan, search: search, budget: budget, setPath: set, parallelism: SweepWorkers.processors,
                                                progress: progress))
        } catch {
            return .failure(error)
        }
    }

    /// One set loaded and swept, its variants in worker processes (``SweepWorkers``).
    static func sweepSet(_ set: String, kind: SweepKind, options: ReplayOptions, only: Set<Int>?, settle: Duration, forking: Bool,
                         shard: ReplayShard?, budget: SweepBudget?,
                         progress: @escaping @Sendable (SweepProgress) -> Void) -> Result<SweepResult, ReplayError> {
        do throws(ReplayError) {
            let loaded = try loadReplaySet(at: set, options: options)
            let plan = try FaultSweep.plan(loaded, kind: kind, options: options, only: only, settle: settle, forking: forking)
            let part = shard.map(plan.part)
            let variants = SweepWorkers.run(plan, part: part, budget: budget, setPath: set, parallelism: SweepWorkers.processors, progress: progress)
            return .success(plan.result(variants, part: part, budget: budget))
        } catch {
            return .failure(error)
        }
    }
}

/// Where a sweep is, shown as it goes: redrawn in place on a terminal; in a CI log (standard error
/// not a terminal), a line a minute (``ProgressCadence``), so a long sweep shows it is alive and
/// how long it has left without a line per variant. Told from every worker thread, hence the lock:
/// `@unchecked Sendable` because `cadence` and `status` (a ``StatusLine``) are used only under it.
final class SweepProgressDisplay: @unchecked Sendable {
    private let lock = NSLock()
    private let set: String
    private let status = StatusLine()
    private let onTerminal = Terminal.stderrIsTerminal
    private let searching: Bool
    private var cadence = ProgressCadence()

    init(set: String, searching: Bool) {
        self.set = set
        self.searching = searching
    }

    /// Shows `progress` if it is time to.
    func show(_ progress: SweepProgress) {
        lock.lock()
        defer { lock.unlock() }
        if onTerminal {
            status.update { progress.line(set: set, searching: searching) }
        } else if cadence.due(at: progress.elapsedSeconds) {
            Terminal.warn(progress.line(set: set, searching: searching))
        }
    }

    /// Takes the status line off the screen (before the sweep's table is written).
    func clear() {
        lock.lock()
        defer { lock.unlock() }
        status.clear()
    }
}
