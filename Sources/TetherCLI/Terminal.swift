#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture
import Foundation

/// Where the CLI writes: buffered stdout for results, unbuffered stderr for warnings and progress.
///
/// Results go through one buffer flushed in 64 KiB writes, so listing millions of frames costs a
/// write per block rather than per line; stderr lines are written at once so they interleave
/// sensibly with a terminal's view of stdout.
final class StandardOutput {
    /// The process-wide stdout writer.
    ///
    /// `nonisolated(unsafe)`: the buffer has no lock. Each command writes its results from its own
    /// flow, one step after another (an `async` command may resume on another thread, never on
    /// two at once); progress, status lines and sweep workers write to stderr, not here.
    nonisolated(unsafe) static let shared = StandardOutput()

    private var buffer: [UInt8] = []
    private let flushThreshold = 64 * 1024

    private init() { buffer.reserveCapacity(flushThreshold + 4096) }

    /// Append text; written out once the buffer is full or on ``flush()``.
    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= flushThreshold { flush() }
    }

    /// Append text and a newline.
    func line(_ text: String) { write(text); write("\n") }

    /// Write everything buffered.
    func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = SystemCalls.write(STDOUT_FILENO, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    // stdout is gone (a closed pipe): nothing left to tell anyone.
                    return
                }
                offset += written
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Terminal facts and the one-line status display used for progress and live counters.
enum Terminal {
    /// `true` when stderr is a terminal: progress and live status lines are shown only then.
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
    /// `true` when stdout is a terminal.
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Write a whole line to stderr at once.
    static func warn(_ text: String) {
        StandardOutput.shared.flush()
        writeStderr(text + "\n")
    }

    /// Write raw text to stderr.
    static func writeStderr(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = SystemCalls.write(STDERR_FILENO, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

/// A status line redrawn in place on stderr when stderr is a terminal, silent otherwise, and
/// rate-limited so redrawing never dominates the work it reports on.
///
/// `@unchecked Sendable`: `lastDraw` and `shown` are read and written under `lock` only. A lock,
/// not "one queue at a time": `record` and `serve` cancel their ticker and clear the line from the
/// main task, and a cancelled `DispatchSource` timer's handler already running on its queue (or a
/// notice block already queued there) can still redraw at the same moment.
final class StatusLine: @unchecked Sendable {
    private let enabled: Bool
    private let interval: Duration
    private let clock = ContinuousClock()
    private let lock = NSLock()
    private var lastDraw: ContinuousClock.Instant?
    private var shown = false

    /// - Parameter interval: the shortest time between two redraws.
    init(enabled: Bool = Terminal.stderrIsTerminal, interval: Duration = .milliseconds(200)) {
        self.enabled = enabled
        self.interval = interval
    }

    /// Redraw with `text()` if the interval has passed (or `force`). `text` is only evaluated then.
    func update(force: Bool = false, _ text: () -> String) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = clock.now
        if !force, let lastDraw, now - lastDraw < interval { return }
        lastDraw = now
        shown = true
        // Carriage return and erase-to-end-of-line: redraw in place.
        Terminal.writeStderr("\r\u{1B}[K" + text())
    }

    /// Erase the status line so the next output starts on a clean line.
    func clear() {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        guard shown else { return }
        Terminal.writeStderr("\r\u{1B}[K")
        shown = false
    }

    /// Leave the last status on screen and move to the next line.
    func finish() {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        guard shown else { return }
        Terminal.writeStderr("\n")
        shown = false
    }
}
