import BehaviourTrace
import Dissectors
import MessagingCore
import ReplayKit

extension ConnectIQAnnotation {
    /// A Connect IQ packet for scripts: `side`, `kind`, `summary`, and the fields its kind has
    /// (`command`, `control`, `connection`, `sequence`, `status`…), plus `message` (JSON) when a
    /// transfer completed and could be read.
    public var json: String {
        var members: [(String, String)] = [
            ("side", JSONLiteral.string(side.rawValue)),
            ("summary", JSONLiteral.string(packet.summary)),
        ]
        switch packet {
        case .command(let command):
            members.append(("kind", JSONLiteral.string("command")))
            members.append(("command", String(command.identifier)))
            var app: IQUUID?, connection: UInt8?, status: UInt8?
            switch command {
            case .connectRequest(let a, let flags):
                app = a
                members.append(("flags", String(flags)))
            case .connectResponse(let s, let a, let c, let flags):
                (status, app, connection) = (s.rawValue, a, c)
                if let flags { members.append(("flags", String(flags))) }
            case .disconnectRequest(let c), .watchClosed(let c): connection = c
            case .disconnectResponse(let s, let c), .watchOpenedAnswer(let s, let c), .watchClosedAnswer(let s, let c):
                (status, connection) = (s.rawValue, c)
            case .watchOpened(let a, let c): (app, connection) = (a, c)
            case .appInfoRequest(let a), .openAppRequest(let a): app = a
            case .appInfoResponse(let a, let version):
                app = a
                members.append(("version", String(version)))
            case .openAppResponse(let a, let code):
                app = a
                members.append(("code", String(code.rawValue)))
            }
            if let app { members.append(("app", JSONLiteral.string(app.description))) }
            if let connection { members.append(("connection", String(connection))) }
            if let status { members.append(("status", String(status))) }
        case .control(let connection, let control):
            members.append(("kind", JSONLiteral.string("control")))
            members.append(("connection", String(connection)))
            members.append(("control", String(control.identifier)))
            switch control {
            case .first(let flags, let length):
                members.append(("flags", String(flags.rawValue)))
                members.append(("length", String(length)))
            case .last(let sequence, let crc):
                members.append(("sequence", String(sequence)))
                members.append(("crc", String(crc)))
            case .ack(let type, let status, let sequence):
                members.append(("ack_type", String(type.rawValue)))
                members.append(("ack_status", String(status.rawValue)))
                members.append(("sequence", String(sequence)))
            case .ackRequest(let sequence):
                members.append(("sequence", String(sequence)))
            case .encryptionKey(let key, let isResponse):
                members.append(("key", JSONLiteral.string(JSONLiteral.hex(key))))
                members.append(("is_response", isResponse ? "true" : "false"))
            default:
                break
            }
        case .data(let sequence, let connection, let payload):
            members.append(("kind", JSONLiteral.string("data")))
            members.append(("connection", String(connection)))
            members.append(("sequence", String(sequence)))
            members.append(("payload", JSONLiteral.string(JSONLiteral.hex(payload))))
        case .unknown:
            members.append(("kind", JSONLiteral.string("unknown")))
        case .malformed(_, let problem):
            members.append(("kind", JSONLiteral.string("malformed")))
            members.append(("problem", JSONLiteral.string(problem.description)))
        }
        if let message = message { members.append(("message", message)) }
        if let problem = messageProblem { members.append(("message_problem", JSONLiteral.string(problem))) }
        return JSONLiteral.object(members)
    }
}

/// The Connect IQ link named in a capture's frames for `tether inspect` and the timeline report
/// (``MessagingIntegration``'s ``CoreIntegration/makeFrameAnnotator()``).
struct ConnectIQFrameAnnotator: FrameAnnotator {
    private var annotator = ConnectIQAnnotator()

    var jsonKey: String { "connect_iq" }

    mutating func annotate(_ frame: DissectedFrame) -> [FrameAnnotation] {
        guard !frame.att.isEmpty else { return [] }
        return annotator.annotate(frame).map { FrameAnnotation(summary: $0.summary, json: $0.json) }
    }
}
