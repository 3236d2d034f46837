import CaptureKit
import Dissectors

/// `TetherBench dissect FILE [--summaries]`: every frame of FILE through the dissectors (IP, TCP
/// stream reassembly, MQTT), counting the TCP segments, MQTT packets and PUBLISH payload bytes
/// found so the work cannot be optimised away. Without `--summaries` the one-line summaries are
/// not built and segments keep no copy of their data (as in replay); with it they are and do (as
/// `tether inspect --frames` shows them).
enum DissectBench {
    static func run(_ args: Arguments) throws -> Int32 {
        let path = try args.positional(0, "FILE")
        let start = monotonicSeconds()
        let file = try CaptureFile.open(path: path)
        var dissector = FrameDissector()
        dissector.producesSummaries = args.flag("summaries")
        dissector.retainsTCPPayload = args.flag("summaries")
        var frames = 0, bytes = 0, segments = 0, mqtt = 0, publishes = 0, payloadBytes = 0, problems = 0, summaryBytes = 0
        // Frames borrowed from the reader's buffer, as replay's fast path reads them.
        while try file.withNextFrame({ frame in
            frames &+= 1
            bytes &+= frame.data.count
            let linkType = file.interfaces[frame.interfaceIndex].linkType
            let dissected = dissector.dissect(bytes: frame.data, linkType: linkType)
            if dissected.tcp != nil { segments &+= 1 }
            if dissected.problem != nil { problems &+= 1 }
            summaryBytes &+= dissected.summary.utf8.count
            mqtt &+= dissected.mqtt.count
            for index in dissected.mqtt.indices {
                if case .publish(let publish)? = dissected.mqtt[index].packet?.body {
                    publishes &+= 1
                    payloadBytes &+= publish.payload.count
                }
            }
        }) {}
        let seconds = monotonicSeconds() - start
        report([
            "frames": "\(frames)", "bytes": "\(bytes)", "tcp_segments": "\(segments)", "mqtt_packets": "\(mqtt)",
            "publishes": "\(publishes)", "payload_bytes": "\(payloadBytes)", "problems": "\(problems)",
            "summary_bytes": "\(summaryBytes)", "seconds": fixed(seconds, 6), "vmhwm_kb": "\(peakResidentKB())",
        ])
        return 0
    }
}
