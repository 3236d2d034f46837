import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import MQTT
import WidgetCore

/// What replay must know about a widget-channel capture before it starts, for responder mode:
/// every MQTT packet of its `mqtt-tcp` interfaces, in capture order, with its frame and time.
public struct WidgetCapturePrescan: Sendable {
    /// One MQTT packet.
    public struct Packet: Sendable {
        /// Its frame number (the segment that completed it).
        public var frame: Int
        /// Its virtual time.
        public var timeNs: Int64
        /// The client → broker direction of its connection.
        public var client: TCPFlowKey
        /// `true` when the client sent it.
        public var fromClient: Bool
        /// The packet.
        public var body: MQTTPacketBody
        /// A PUBLISH's topic.
        public var topic: String?
    }

    /// Every MQTT packet, in capture order.
    public var packets: [Packet] = []
    /// When the recorded host reported a connection attempt refused before any CONNACK
    /// (`mqtt_connect_failed` records): the answer those attempts got.
    public var connectFailures: [Int64] = []

    /// An empty prescan.
    public init() {}

    /// Reads the capture once, dissecting its `mqtt-tcp` interfaces as replay does.
    public static func scan(capturePath: String, interfaces: [ManifestInterface]) throws(CaptureError) -> WidgetCapturePrescan {
        var walk = try PrescanReader(capturePath: capturePath, interfaces: interfaces)
        var result = WidgetCapturePrescan()
        while let frame = try walk.next() {
            let timeNs = frame.timeNs
            guard let interface = frame.described else { continue }
            if interface.role == .apiCalls {
                // A record that does not read is reported by the adapter when it is fed.
                do throws(TraceFormatError) {
                    let record = try JSONLiteral.parseObject(frame.capture.data, label: "frame \(frame.number)")
                    if record["core"] == .string("widget"), record["call"] == .string("mqtt_connect_failed") {
                        result.connectFailures.append(timeNs)
                    }
                } catch {
                    continue
                }
                continue
            }
            guard interface.role == .mqttTCP else { continue }
            let dissected = walk.dissect(frame) { dissector in
                if let port = interface.brokerPort { dissector.mqttPorts.insert(port) }
            }
            for record in dissected.mqtt {
                guard let packet = record.packet else { continue }
                result.packets.append(Packet(frame: frame.number, timeNs: timeNs, client: record.fromClient ? record.flow : record.flow.reversed,
                                             fromClient: record.fromClient, body: packet.body, topic: record.topic))
            }
        }
        return result
    }
}

/// Plays the MQTT broker and the IoT cloud of a widget-channel capture in responder mode
/// (docs/replay-engine.md, "Responders"): each time the core asks, the recorded answer, after the
/// delay it had in the capture, following the faults' decision for the frame it was captured in.
///
/// - `mqtt_connect` → the next CONNACK the capture holds for the process's client id (code 0:
///   `mqttConnected`; a refusal: `mqttDisconnected`); none left (a reconnection the capture never
///   saw): a CONNACK 0 made by protocol.
/// - `mqtt_subscribe` → the next captured SUBACK of a SUBSCRIBE with the same filters, granted as
///   recorded; none left: made, every filter granted (the core asks QoS 1; the rigs' broker grants it).
/// - an API request (`…/api/request/{client id}`) → the next unused captured response to the same
///   request (same path and parameters), else to a request of the same `path`; when the captured
///   request's `id` was another, the response's is rewritten to the request's (made:
///   `response_adapted`); a response lost with its connection can answer the request asked again;
///   when every captured answer to it is used, the last one given is given again (adapted); a
///   request the capture never answered gets nothing (the cloud stays silent: the core's own
///   timeout follows).
/// - PUBACK: the core does not see them (its host's MQTT client does), so there is nothing to
///   answer; a broker that withholds one is a fault of the host's client, not of the core.
///
/// Broker PUBLISHes that answer nothing (device notifications, status) are initiatives: the adapter
/// feeds them at their captured instants while the core is connected.
struct WidgetResponder: Sendable {
    /// One answer due to the core.
    struct Delivery: Sendable {
        var timeNs: Int64
        var order: Int
        var input: WidgetInput
        /// Why the responder made it; `nil` for a captured answer.
        var made: String?
        /// The captured response's frame, while it is on its way.
        var responseFrame: Int?
    }

    private struct Answer: Sendable {
        var frame: Int
        var timeNs: Int64
        var kind: PeerFrameKind
        var delayNs: Int64
        var input: WidgetInput
    }

    /// The answers the process's connection attempts got, in capture order: a CONNACK, or `nil`
    /// for an attempt the host reported refused (its `mqtt_connect_failed` record answers it).
    private var connacks: [Answer?] = []
    private var subacks: [[String]: [Answer]] = [:]
    /// Responses by the request they answer with its `id` left out: the same question.
    private var responsesByRequest: [[UInt8]: [(id: String, answer: Answer)]] = [:]
    private var responsesByPath: [String: [(id: String, answer: Answer)]] = [:]
    private var usedResponseFrames: Set<Int> = []
    private var cursors: [String: Int] = [:]
    private var deliveries: [Delivery] = []
    private var order = 0
    private var faults: PeerFrameFaults
    private let responseTopic: String
    private let requestTopic: String
    private let madeDelayNs: Int64
    /// Answers the responder made, for the summary.
    private(set) var made = 0

    /// Asks `faults` about the answers it schedules from now on (a fault sweep's fork).
    mutating func adopt(_ faults: PeerFrameFaults) { self.faults = faults }

    init(prescan: WidgetCapturePrescan, clientID: String, account: String, faults: PeerFrameFaults = .init()) {
        self.faults = faults
        self.requestTopic = "tether/\(account)/api/request/\(clientID)"
        self.responseTopic = "tether/\(account)/api/response/\(clientID)"
        var own: Set<TCPFlowKey> = []
        var connectAt: [TCPFlowKey: Int64] = [:]
        var subscribes: [TCPFlowKey: [UInt16: (filters: [String], timeNs: Int64)]] = [:]
        var requests: [String: (path: String, body: [UInt8], timeNs: Int64)] = [:]
        var delays: [Int64] = []
        var attempts: [(timeNs: Int64, answer: Answer?)] = prescan.connectFailures.map { ($0, nil) }
        for packet in prescan.packets {
            if packet.fromClient, case .connect(let connect) = packet.body {
                guard connect.clientID == clientID else { continue }
                own.insert(packet.client)
                connectAt[packet.client] = packet.timeNs
                continue
            }
            guard own.contains(packet.client) else { continue }
            switch (packet.fromClient, packet.body) {
            case (true, .subscribe(let id, _, let subscriptions)):
                subscribes[packet.client, default: [:]][id] = (subscriptions.map(\.topicFilter), packet.timeNs)
            case (true, .publish(let publish)) where packet.topic == requestTopic:
                if let id = Self.field("id", in: publish.payload) {
                    requests[id] = (Self.field("path", in: publish.payload) ?? "", Self.replacing(id: id, with: "", in: publish.payload), packet.timeNs)
                }
            case (false, .connack(_, let code, _)):
                let delay = max(0, packet.timeNs - (connectAt[packet.client] ?? packet.timeNs))
                delays.append(delay)
                attempts.append((connectAt[packet.client] ?? packet.timeNs, Answer(frame: packet.frame, timeNs: packet.timeNs, kind: .connack,
                                                                                   delayNs: delay, input: code == 0 ? .mqttConnected : .mqttDisconnected)))
            case (false, .suback(let id, _, let codes)):
                guard let subscribe = subscribes[packet.client]?.removeValue(forKey: id) else { continue }
                let granted = zip(subscribe.filters, codes).filter { $0.1 < 0x80 }.map(\.0)
                let delay = max(0, packet.timeNs - subscribe.timeNs)
                delays.append(delay)
                subacks[subscribe.filters, default: []].append(Answer(frame: packet.frame, timeNs: packet.timeNs, kind: .suback,
                                                                      delayNs: delay, input: .mqttSubscribed(granted)))
            case (false, .publish(let publish)) where packet.topic == responseTopic:
                guard let id = Self.field("id", in: publish.payload), let request = requests[id] else { continue }
                let answer = Answer(frame: packet.frame, timeNs: packet.timeNs, kind: .publish, delayNs: max(0, packet.timeNs - request.timeNs),
                                    input: .mqttMessage(topic: responseTopic, payload: publish.payload))
                responsesByRequest[request.body, default: []].append((id, answer))
                responsesByPath[request.path, default: []].append((id, answer))
            default:
                break
            }
        }
        self.connacks = attempts.sorted { $0.timeNs < $1.timeNs }.map(\.answer)
        self.madeDelayNs = delays.filter { $0 > 0 }.min() ?? 1_000_000
    }

    /// `true` for a broker packet the responder answers itself: the adapter does not feed it.
    func isAnswer(_ body: MQTTPacketBody, topic: String?) -> Bool {
        switch body {
        case .connack, .suback: return true
        case .publish: return topic == responseTopic
        default: return false
        }
    }

    /// The core asked for something at `nowNs`: schedule the broker's or the cloud's answer.
    mutating func coreAsked(_ action: WidgetAction, nowNs: Int64) {
        switch action {
        case .mqttConnect:
            let cursor = cursors["connack", default: 0]
            if cursor < connacks.count {
                cursors["connack"] = cursor + 1
                // A refused attempt is answered by the host's record, fed at its instant.
                if let answer = connacks[cursor] { schedule(answer, nowNs: nowNs) }
            } else {
                let delay = connacks.compactMap { $0?.delayNs }.last ?? madeDelayNs
                enqueue(.mqttConnected, atNs: nowNs + delay, made: "connack")
            }
        case .mqttSubscribe(let topics):
            let key = "suback \(topics)"
            let cursor = cursors[key, default: 0]
            if let list = subacks[topics], cursor < list.count {
                cursors[key] = cursor + 1
                schedule(list[cursor], nowNs: nowNs)
            } else {
                enqueue(.mqttSubscribed(topics), atNs: nowNs + (subacks[topics]?.last?.delayNs ?? madeDelayNs), made: "suback")
            }
        case let .mqttPublish(topic, payload, _) where topic == requestTopic:
            guard let id = Self.field("id", in: payload) else { return }
            let path = Self.field("path", in: payload) ?? ""
            // The same question (path and parameters; its id left out), else the same path (another
            // device's answer, say).
            let body = Self.replacing(id: id, with: "", in: payload)
            let used = usedResponseFrames
            let unused = { (candidate: (id: String, answer: Answer)) in !used.contains(candidate.answer.frame) }
            // A question asked again once every captured answer is used (a re-read after a
            // reconnection the recording never had) gets the last answer it was given: the cloud
            // answers every request, and the recorded one is the best guess of what it says.
            guard let (oldID, answer) = responsesByRequest[body]?.first(where: unused) ?? responsesByPath[path]?.first(where: unused)
                    ?? responsesByRequest[body]?.last ?? responsesByPath[path]?.last,
                  case .mqttMessage(let responseTopic, let response) = answer.input else { return }
            usedResponseFrames.insert(answer.frame)
            guard oldID != id else {
                schedule(answer, nowNs: nowNs)
                return
            }
            var adapted = answer
            adapted.input = .mqttMessage(topic: responseTopic, payload: Self.replacing(id: oldID, with: id, in: response))
            made += 1
            schedule(adapted, nowNs: nowNs, made: "response_adapted")
        case .mqttDisconnect:
            disconnected()
        default:
            break
        }
    }

    /// The connection ended: answers on their way are lost with it (a response lost so can answer
    /// the same request asked again).
    mutating func disconnected() {
        for delivery in deliveries { if let frame = delivery.responseFrame { usedResponseFrames.remove(frame) } }
        deliveries.removeAll()
    }

    /// When the next answer is due.
    var nextDueNs: Int64? { deliveries.first?.timeNs }

    /// The next answer due at or before `nowNs`.
    mutating func popDue(nowNs: Int64) -> Delivery? {
        guard let first = deliveries.first, first.timeNs <= nowNs else { return nil }
        deliveries.removeFirst()
        return first
    }

    private mutating func schedule(_ answer: Answer, nowNs: Int64, made why: String? = nil) {
        let at = Self.answerTime(capturedNs: answer.timeNs, delayNs: answer.delayNs, nowNs: nowNs)
        for delay in faults.deliveries(ofFrame: answer.frame, kind: answer.kind, capturedAt: .nanoseconds(answer.timeNs)) {
            append(Delivery(timeNs: at + delay.replayNanoseconds, order: 0, input: answer.input, made: why,
                            responseFrame: answer.kind == .publish ? answer.frame : nil))
        }
    }

    /// How far the core's write may come before its captured counterpart and still get the answer
    /// at its captured instant: a live host writes a little after the input that caused it (the
    /// capture shows that latency, replay does not), and answering at write + delay would move
    /// every later answer earlier by the sum of those latencies.
    static let captureLatencyToleranceNs: Int64 = 100_000_000

    /// When a captured answer reaches the core written to at `nowNs`: its captured instant when the
    /// core's write is its captured counterpart's (at most ``captureLatencyToleranceNs`` early);
    /// else the captured delay after the write.
    static func answerTime(capturedNs: Int64, delayNs: Int64, nowNs: Int64) -> Int64 {
        let early = (capturedNs - delayNs) - nowNs
        return early >= 0 && early <= captureLatencyToleranceNs ? capturedNs : nowNs + delayNs
    }

    private mutating func enqueue(_ input: WidgetInput, atNs: Int64, made why: String) {
        made += 1
        append(Delivery(timeNs: atNs, order: 0, input: input, made: why, responseFrame: nil))
    }

    private mutating func append(_ delivery: Delivery) {
        var delivery = delivery
        order += 1
        delivery.order = order
        deliveries.append(delivery)
        deliveries.sort { ($0.timeNs, $0.order) < ($1.timeNs, $1.order) }
    }

    /// The string value of a top-level `"key":"…"` in a compact JSON envelope (docs/widget-mqtt.md).
    static func field(_ key: String, in payload: [UInt8]) -> String? {
        let needle = Array("\"\(key)\":\"".utf8)
        guard payload.count >= needle.count else { return nil }
        for start in 0...(payload.count - needle.count) where payload[start..<(start + needle.count)].elementsEqual(needle) {
            let from = start + needle.count
            guard let end = payload[from...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            return String(decoding: payload[from..<end], as: UTF8.self)
        }
        return nil
    }

    /// `payload` with its `"id":"old"` made `"id":"new"`.
    static func replacing(id old: String, with new: String, in payload: [UInt8]) -> [UInt8] {
        let needle = Array("\"id\":\"\(old)\"".utf8)
        guard payload.count >= needle.count else { return payload }
        for start in 0...(payload.count - needle.count) where payload[start..<(start + needle.count)].elementsEqual(needle) {
            return Array(payload[..<start]) + Array("\"id\":\"\(new)\"".utf8) + Array(payload[(start + needle.count)...])
        }
        return payload
    }
}
