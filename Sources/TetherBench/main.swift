#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// TetherBench: the Swift side of the benchmarks in CI/bench. Subcommands are parsed by hand so
// this target needs no ArgumentParser; each prints `key=value` lines that the scripts read.

let usage = """
    usage: TetherBench read FILE [--fast | --next]
           TetherBench gen-plugin-session OUT [--seconds 3600] [--rate 20] [--port 12345]
           TetherBench gen-plugin-hour OUT          (the same, one hour at 20 Hz)
           TetherBench replay-hour SET [--trace FILE] [--stage replay-stream|expectations|datapoint-events [--rounds 5]]
           TetherBench parse-plugin SET [--rounds 5] [--stage NAME]   (IngestCore's parse alone, datagrams in memory; references)
           TetherBench gen-messaging-session OUT [--seconds 3600]
           TetherBench gen-messaging-hour OUT       (the same, one hour: a 2 KB message each way every second)
           TetherBench replay-messaging-hour SET [--stage replay-set]
           TetherBench gen-session-session OUT [--seconds 3600]   (every session channel, both sides real cores)
           TetherBench replay-session-hour SET
           TetherBench dissect FILE [--summaries]   (IP, TCP reassembly and MQTT over every frame)
    See CI/bench/README.md.
    """

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    printError(usage)
    exit(2)
}
let rest = arguments.dropFirst(2)
do {
    let status: Int32
    switch arguments[1] {
    case "read":
        status = try ReadBench.run(Arguments(rest, valued: []))
    case "gen-plugin-session", "gen-plugin-hour":
        status = try GeneratePluginSession.run(Arguments(rest, valued: ["seconds", "rate", "port"]))
    case "replay-hour":
        status = try ReplayHour.run(Arguments(rest, valued: ["trace", "stage", "rounds"]))
    case "parse-plugin":
        status = try ParsePlugin.run(Arguments(rest, valued: ["rounds", "stage"]))
    case "gen-messaging-session", "gen-messaging-hour":
        status = try GenerateMessagingSession.run(Arguments(rest, valued: ["seconds"]))
    case "replay-messaging-hour":
        status = try ReplayMessagingHour.run(Arguments(rest, valued: ["stage"]))
    case "gen-session-session":
        status = try GenerateSessionSession.run(Arguments(rest, valued: ["seconds"]))
    case "replay-session-hour":
        status = try ReplaySessionHour.run(Arguments(rest, valued: []))
    case "dissect":
        status = try DissectBench.run(Arguments(rest, valued: []))
    default:
        printError("unknown subcommand \(arguments[1])\n\(usage)")
        status = 2
    }
    exit(status)
} catch let error as UsageError {
    printError("TetherBench: \(error.description)\n\(usage)")
    exit(2)
} catch {
    printError("TetherBench: \(error)")
    exit(1)
}
