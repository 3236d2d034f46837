import ArgumentParser
import IngestLive
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IngestCore
import IngestStore
import LiveHosts
import IngestIntegration
import CaptureSet

/// `tether serve …`: the cores on real sockets.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a protocol core on real sockets.",
        discussion: """
            Serve intdash Motion's plugin ingest on the standard port, storing into SQLite:
              tether serve ingest --port 12345 --db /tmp/ingest.sqlite
            """,
        subcommands: [ServeIngestCommand.self]
    )
}

/// `tether serve ingest`: IngestCore on a real UDP socket (a reader thread with `recvmmsg`, the core on a
/// loop of its own) with a durable SQLite store.
struct ServeIngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Receive Motion plugin UDP datagrams on 127.0.0.1 and ::1, parse them with IngestCore, store the data points.",
        discussion: """
            Listens on 127.0.0.1 and ::1 (UDP, vector reads, receive buffers sized for 9216-byte \
            datagrams). Accepted data points are handed to the store in chunks (every 100 ms or \
            10,000 bytes) and committed to the SQLite database --db (WAL mode): they survive a \
            crash of this process, and a chunk written twice is stored once.

            On a terminal a status line on stderr shows datagrams, the kernel's receive-buffer \
            drops, data points, rejections by reason and open streams; otherwise nothing is \
            printed until the end. Kernel drops are datagrams the kernel threw away because the \
            socket's receive buffer was full before the server read them: Tether never saw them, \
            so they are in no other count. Any at all means the sender outran the server; a \
            larger --receive-buffer (root may exceed net.core.rmem_max) rides out longer bursts. SIGINT (Ctrl-C) \
            SIGTERM or SIGHUP (a closed terminal) stops the server cleanly: the sockets close, every stream is flushed, the \
            remaining chunks are committed, and the final counts are printed. A second signal \
            exits at once.

            Serve on the standard port, storing into a database beside you:
              tether serve ingest --port 12345 --db ingest.sqlite
            Serve on a free port for a test, IPv4 only, with a 5 s idle timeout:
              tether serve ingest --port 0 --ipv4-only --idle-timeout 5 --db t.sqlite
            """
    )

    @Option(name: .long, help: "UDP port to listen on, 0 to 65535 (0 picks a free one and prints it).",
            transform: { try OptionValues.integer($0, option: "--port", range: 0...65535) })
    var port: Int = 12345

    @Option(name: .long, help: "The SQLite database to store data points in (created if missing).")
    var db: String = "ingest.sqlite"

    @Option(name: .customLong("idle-timeout"), help: "How long without a datagram a plugin stream ends after (seconds, or 500ms, 8s, 2m, 1h; at most 24h).",
            transform: { try OptionValues.seconds($0, option: "--idle-timeout", range: 0.001...86_400) })
    var idleTimeout: Double?

    @Flag(name: .customLong("ipv4-only"), help: "Listen on 127.0.0.1 only, not on ::1.")
    var ipv4Only = false

    @Option(name: .customLong("receive-buffer"), help: "SO_RCVBUF to ask for, in bytes, 1024 to 1073741824 (default 33554432, 32 MiB; Linux doubles it for its bookkeeping).",
            transform: { try OptionValues.integer($0, option: "--receive-buffer", range: 1024...(1 << 30)) })
    var receiveBuffer: Int?

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be 0…65535 (got \(port)); 12345 is Motion's plugin port.")
        }
        if let idleTimeout, !(idleTimeout > 0 && idleTimeout.isFinite) {
            throw ValidationError("--idle-timeout must be a positive number of seconds (got \(idleTimeout)).")
        }
        if FileIO.isDirectory(db) {
            throw ValidationError("--db \(db) is a folder; give a file name, e.g. \(FileIO.join(db, "ingest.sqlite")).")
        }
        try OutputFile.check(db, option: "--db")
    }

    func run() async throws {
        var core = IngestConfiguration()
        if let idleTimeout { core.idleTimeout = .nanoseconds(OptionValues.nanoseconds(idleTimeout)) }
        // One server per database: a second one would interleave its chunks and report counts
        // that are not what the file holds.
        let sink = try SQLiteIngestStore(path: db, exclusiveWriter: true)
        var configuration = IngestServer.Configuration(port: port, ipv6Host: ipv4Only ? nil : "::1", core: core)
        if let receiveBuffer { configuration.receiveBufferBytes = receiveBuffer }
        let server = IngestServer(configuration: configuration, sink: sink)
        let bound = try await server.start()
        for notice in server.notices { Terminal.warn("tether: note: \(notice)") }
        let noticesShown = server.notices.count

        let queue = DispatchQueue(label: "tether.serve.ui")
        let status = StatusLine()
        // The handlers go in before the line that says the server is serving: a supervisor (or a
        // test) that signals as soon as it reads the line must find them there, not have the
        // signal ignored while they are being set up and wait for ever.
        let stopped = AsyncSignalLatch()
        let signals = InterruptSignals(queue: queue) { number in
            status.clear()
            Terminal.writeStderr("tether: \(InterruptSignals.name(of: number)): draining…\n")
            stopped.open()
        }
        defer { signals.cancel() }
        StandardOutput.shared.line("Serving ingest on \(bound.joined(separator: " and ")), storing into \(db). Stop with Ctrl-C.")
        StandardOutput.shared.flush()

        var ticker: (any DispatchSourceTimer)?
        if Terminal.stderrIsTerminal {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: .milliseconds(250))
            timer.setEventHandler { status.update(force: true) { server.status.description } }
            timer.resume()
            ticker = timer
        }
        await stopped.wait()
        ticker?.cancel()
        status.clear()
        let final = try await server.stop()
        // Notices raised while serving (the store falling behind, a refused batch) are told here,
        // after the status line is gone, so none is lost to the terminal's redraws.
        for notice in server.notices.dropFirst(noticesShown) { Terminal.warn("tether: note: \(notice)") }
        StandardOutput.shared.line("Stopped. \(final.description)")
        StandardOutput.shared.line("Stored \(final.dataPointsStored) data points in \(final.chunksStored) chunks into \(db)")
        StandardOutput.shared.line(Self.kernelDropsLine(final.kernelDrops))
        if final.socketErrors > 0 { StandardOutput.shared.line("Socket errors: \(final.socketErrors)") }
        if final.chunksPending > 0 || final.lastStoreError != nil {
            throw CommandFailure.failed("\(final.chunksPending) chunks could not be stored in \(db): \(final.lastStoreError ?? "unknown error"). Check free disk space and the file's permissions.")
        }
    }

    /// The final report's line on the kernel's receive-buffer drops: datagrams lost before the
    /// server read them, which no other count includes.
    static func kernelDropsLine(_ drops: Int?) -> String {
        guard let drops else {
            return "Kernel drops: not counted (this system keeps no per-socket drop counter; Linux does)"
        }
        guard drops > 0 else { return "Kernel drops: 0 datagrams dropped before the server read them" }
        return "Kernel drops: \(drops) datagrams dropped by the kernel before the server read them (receive buffer full); "
            + "they are in no other count. Give a larger --receive-buffer, raise net.core.rmem_max, or slow the sender."
    }
}
