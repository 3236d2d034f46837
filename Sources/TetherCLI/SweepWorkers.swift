import Foundation
import ReplayKit

/// Runs a sweep's variants in worker processes, so that a core that traps (a failed
/// precondition, an out-of-range index: the process ends on a signal) costs that variant, reported
/// as the promise every core makes not to trap, and not the whole sweep.
///
/// Each worker is this same executable (`/proc/self/exe`, so a package's own cores are there
/// too) run with the parent's own arguments and `--sweep-worker SET`: it makes the same plan
/// (``FaultSweep/plan(_:kind:options:only:settle:)`` is deterministic), then reads requests from
/// its standard input, one a line: a frame number (that frame's variant of the sweep) or
/// `schedule F1 F2 …` (a search's schedule of faults, written as `--fault` takes them), and answers
/// each with one JSON line:
/// `{"frame":N,"broken":[{"core":…,"promise":…,"detail":…}],"error":null,"forked_at":120}`. A worker that ends
/// before answering took the variant down with it; a new one takes over the rest.
enum SweepWorkers {
    /// How many workers a sweep runs: one per processor.
    static var processors: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// The variants of `plan` (those of `part` alone, when given, within `budget`), in point
    /// order, run by `parallelism` workers for the set at `setPath`; `progress` is told where the
    /// sweep is after each.
    static func run(_ plan: SweepPlan, part: SweepPart?, budget: SweepBudget?, setPath: String, parallelism: Int,
                    progress: @escaping @Sendable (SweepProgress) -> Void) -> [SweepVariant] {
        let results = SweepVariantQueue(plan: plan, part: part, budget: budget)
        runOnWorkers(results, setPath: setPath, parallelism: parallelism, progress: progress) { index in
            let frame = plan.points[index].frame
            return Request(line: "\(frame)", frame: frame,
                           answered: { plan.variant(at: index, broken: $0.broken, error: $0.error, forkedAt: $0.forkedAt, stoppedAt: $0.stoppedAt) },
                           failed: { plan.variant(at: index, broken: [], error: $0) },
                           trapped: { plan.trapped(at: index, detail: $0) })
        }
        return results.all
    }

    /// A search's schedules (``FaultSearch``), run by `parallelism` workers for the set at
    /// `setPath`, and one more worker for shrinking what fails.
    static func search(_ plan: SweepPlan, search: SweepSearch, budget: SweepBudget?, setPath: String, parallelism: Int,
                       progress: @escaping @Sendable (SweepProgress) -> Void) -> SearchResult {
        var shrinking: WorkerProcess?
        defer { shrinking?.finish() }
        return FaultSearch.run(plan, search: search, budget: budget, runAll: { queue, schedules in
            runOnWorkers(queue, setPath: setPath, parallelism: parallelism, progress: progress) { index in
                scheduleRequest(plan, schedules[index].map(\.fault))
            }
        }, replayOne: { faults in
            let request = scheduleRequest(plan, faults)
            return ask(&shrinking, request, arguments: workerArguments(setPath))
        })
    }

    /// What a worker is asked, and how its answer (or its end) becomes a variant.
    struct Request {
        /// The line sent: a frame number, or `schedule` and faults.
        var line: String
        /// The frame the answer must name (`nil`: a schedule's answer is not checked by frame, the
        /// worker's plan having every point where this one may have some).
        var frame: Int?
        var answered: (WorkerAnswer) -> SweepVariant
        var failed: (String) -> SweepVariant
        var trapped: (String) -> SweepVariant
    }

    /// The request that replays the fault schedule `faults` (``SweepPlan/variant(schedule:)``).
    static func scheduleRequest(_ plan: SweepPlan, _ faults: [Fault]) -> Request {
        Request(line: "schedule " + faults.map(\.description).joined(separator: " "), frame: nil,
                answered: { answer in
                    var variant = plan.variant(schedule: faults, broken: answer.broken, error: answer.error)
                    variant.forkedAt = answer.forkedAt
                    variant.stoppedAt = answer.stoppedAt
                    return variant
                },
                failed: { plan.variant(schedule: faults, broken: [], error: $0) },
                trapped: { plan.trapped(schedule: faults, detail: $0) })
    }

    /// The arguments a worker for the set at `setPath` is started with: this process's own, and
    /// `--sweep-worker`.
    static func workerArguments(_ setPath: String) -> [String] {
        Array(CommandLine.arguments.dropFirst()) + ["--sweep-worker", setPath]
    }

    /// Runs what `queue` hands out on `parallelism` worker processes, each request made by
    /// `request`, its result set in the queue.
    static func runOnWorkers(_ queue: SweepVariantQueue, setPath: String, parallelism: Int, progress: @escaping @Sendable (SweepProgress) -> Void,
                             request: @escaping @Sendable (Int) -> Request) {
        // A worker that ended before its request was written must fail that write with EPIPE (its
        // end is then reported), not end this process with SIGPIPE. This process's own output
        // already takes EPIPE quietly (StandardOutput).
        signal(SIGPIPE, SIG_IGN)
        let workers = max(1, min(parallelism, queue.count))
        let arguments = workerArguments(setPath)
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            var worker: WorkerProcess?
            while let index = queue.take() {
                queue.set(index, ask(&worker, request(index), arguments: arguments))
                progress(queue.progress)
            }
            worker?.finish()
        }
    }

    /// Asks `worker` (started first when `nil`, and `nil` again when it ended or answered
    /// nonsense) for `request`'s variant.
    static func ask(_ worker: inout WorkerProcess?, _ request: Request, arguments: [String]) -> SweepVariant {
        if worker == nil {
            switch WorkerProcess.start(arguments: arguments) {
            case .success(let started): worker = started
            case .failure(let error): return request.failed("could not start a sweep worker process: \(error)")
            }
        }
        guard let running = worker else { return request.failed("no sweep worker process") }
        guard let line = running.ask(request.line + "\n") else {
            worker = nil
            return request.trapped(running.ended())
        }
        guard let answer = WorkerAnswer(line: line), request.frame.map({ $0 == answer.frame }) ?? true else {
            running.finish()
            worker = nil
            return request.failed("the sweep worker answered \"\(request.line.prefix(200))\" with \"\(line.prefix(200))\", not a variant's result")
        }
        return request.answered(answer)
    }

    /// `--sweep-worker`: makes the plan, then answers frame numbers from standard input until it
    /// ends.
    static func serve(_ set: LoadedCaptureSet, kind: SweepKind, options: ReplayOptions, settle: Duration, forking: Bool) throws(ReplayError) {
        let plan = try FaultSweep.plan(set, kind: kind, options: options, settle: settle, forking: forking)
        var runner = plan.makeRunner()
        var scheduleRunner = plan.makeRunner(slots: SweepSearch.maxRandomFaults)
        let indices = Dictionary(plan.points.enumerated().map { ($0.element.frame, $0.offset) }, uniquingKeysWith: { first, _ in first })
        let output = FileHandle.standardOutput
        while let line = readLine() {
            let text: String
            if line.hasPrefix("schedule ") {
                text = scheduleAnswer(plan, line.dropFirst("schedule ".count).split(separator: " ").map(String.init), runner: &scheduleRunner).line
            } else if let frame = Int(line.trimmingCharacters(in: .whitespaces)), let index = indices[frame] {
                let variant = runner.variant(at: index)
                text = WorkerAnswer(frame: frame, broken: variant.broken, error: variant.error, forkedAt: variant.forkedAt,
                                    stoppedAt: variant.stoppedAt).line
            } else {
                text = WorkerAnswer(frame: Int(line) ?? -1, broken: [], error: "the worker's plan has no variant for frame \(line)").line
            }
            output.write(Data((text + "\n").utf8))
        }
    }
}

extension SweepWorkers {
    /// A worker's answer to `schedule F1 F2 …`: the schedule replayed from the first frame.
    static func scheduleAnswer(_ plan: SweepPlan, _ texts: [String], runner: inout SweepRunner) -> WorkerAnswer {
        var faults: [Fault] = []
        for text in texts {
            do throws(FaultSpecError) {
                faults.append(try Fault(parsing: text))
            } catch {
                return WorkerAnswer(frame: -1, broken: [], error: "the worker could not read the fault \(text): \(error)")
            }
        }
        let variant = plan.scheduled(faults).map { runner.variant(schedule: $0) } ?? plan.variant(schedule: faults)
        return WorkerAnswer(frame: variant.frame, broken: variant.broken, error: variant.error, forkedAt: variant.forkedAt, stoppedAt: variant.stoppedAt)
    }
}

/// One answer of a worker, as a JSON line.
struct WorkerAnswer {
    var frame: Int
    var broken: [BrokenPromise]
    var error: String?
    /// Where the variant was copied from the run without faults (``SweepVariant/forkedAt``).
    var forkedAt: Int?
    /// Where the variant stopped, recovered (``SweepVariant/stoppedAt``).
    var stoppedAt: Int?

    init(frame: Int, broken: [BrokenPromise], error: String?, forkedAt: Int? = nil, stoppedAt: Int? = nil) {
        self.frame = frame
        self.broken = broken
        self.error = error
        self.forkedAt = forkedAt
        self.stoppedAt = stoppedAt
    }

    /// Reads a line a worker wrote; `nil` when it is not one.
    init?(line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let frame = object["frame"] as? Int, let broken = object["broken"] as? [[String: Any]] else { return nil }
        var promises: [BrokenPromise] = []
        for entry in broken {
            guard let core = entry["core"] as? String, let promise = entry["promise"] as? String, let detail = entry["detail"] as? String else { return nil }
            promises.append(BrokenPromise(promise: promise, core: core, detail: detail))
        }
        self.init(frame: frame, broken: promises, error: object["error"] as? String, forkedAt: object["forked_at"] as? Int,
                  stoppedAt: object["stopped_at"] as? Int)
    }

    /// The JSON line (without its newline).
    var line: String {
        let object: [String: Any] = [
            "frame": frame,
            "broken": broken.map { ["core": $0.core, "promise": $0.promise, "detail": $0.detail] },
            "error": error.map { $0 as Any } ?? NSNull(),
            "forked_at": forkedAt.map { $0 as Any } ?? NSNull(),
            "stopped_at": stoppedAt.map { $0 as Any } ?? NSNull(),
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
              let text = String(data: data, encoding: .utf8) else {
            // Strings and numbers always serialize; this is unreachable but must not trap.
            return #"{"broken":[],"error":"the worker could not write its answer","frame":\#(frame)}"#
        }
        return text
    }
}

/// One worker process, asked one frame at a time.
final class WorkerProcess {
    private let process: Process
    private let input: FileHandle
    private let output: FileHandle
    private let errorLog: URL
    private var buffer = Data()

    private init(process: Process, input: FileHandle, output: FileHandle, errorLog: URL) {
        self.process = process
        self.input = input
        self.output = output
        self.errorLog = errorLog
    }

    /// Starts this executable with `arguments`; its standard error goes to a file, read when it
    /// ends (a pipe nobody reads could fill and stop it).
    static func start(arguments: [String]) -> Result<WorkerProcess, Error> {
        do {
            let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let errorLog = FileManager.default.temporaryDirectory.appendingPathComponent("tether-sweep-worker-\(UUID().uuidString).log")
            guard FileManager.default.createFile(atPath: errorLog.path, contents: nil) else {
                return .failure(CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: errorLog.path]))
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            var environment = ProcessInfo.processInfo.environment
            // A trap is reported by the variant; the backtrace, by rerunning it alone.
            environment["SWIFT_BACKTRACE"] = "enable=no"
            process.environment = environment
            let stdin = Pipe()
            let stdout = Pipe()
            process.standardInput = stdin
            process.standardOutput = stdout
            process.standardError = try FileHandle(forWritingTo: errorLog)
            try process.run()
            return .success(WorkerProcess(process: process, input: stdin.fileHandleForWriting, output: stdout.fileHandleForReading, errorLog: errorLog))
        } catch {
            return .failure(error)
        }
    }

    /// Sends `request` and reads the answer's line; `nil` when the worker ended first.
    func ask(_ request: String) -> String? {
        do {
            try input.write(contentsOf: Data(request.utf8))
        } catch {
            return nil // the worker is gone: its end says why
        }
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let more = output.availableData
            if more.isEmpty { return nil }
            buffer.append(more)
        }
    }

    /// Waits for a worker that stopped answering and says how it ended, with the last lines it
    /// wrote to standard error (the trap's message).
    func ended() -> String {
        try? input.close()
        process.waitUntilExit()
        let how: String
        if process.terminationReason == .uncaughtSignal {
            let signal = process.terminationStatus
            let name = [4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV"][Int(signal)] ?? "signal \(signal)"
            how = "the process replaying this variant ended on \(name)" + ([4, 5].contains(signal) ? " (a Swift trap)" : "")
        } else {
            how = "the process replaying this variant exited with status \(process.terminationStatus) before answering"
        }
        let log: String
        do {
            log = try String(contentsOf: errorLog, encoding: .utf8)
        } catch {
            log = "(its standard error could not be read: \(error))"
        }
        removeLog()
        let lines = log.split(separator: "\n").map(String.init).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        let message = lines.last { $0.contains("Fatal error") || $0.contains("Precondition failed") || $0.contains("Assertion failed") } ?? lines.last
        return how + (message.map { ": \($0)" } ?? "") + "; rerun it alone for the backtrace"
    }

    /// Ends a worker that has no more to do.
    func finish() {
        try? input.close()
        process.waitUntilExit()
        removeLog()
    }

    private func removeLog() {
        try? FileManager.default.removeItem(at: errorLog)
    }
}
