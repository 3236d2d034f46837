import MonkeyCTrace
import TetherIntegrations
import ReplayKit
import BehaviourTrace
import MessagingCore
import MonkeyC

/// A synthetic Connect IQ messaging session as a phone's HCI tap records it: the session start of
/// a real phone host (the app's API calls, LE connection to the watch, MTU 247 exchange, GATT
/// discovery of the Connect IQ service, CCCD write and its Write Response), then every second the
/// app sends a ~2 KB Monkey C message to the echo app and the watch sends it back.
///
/// The phone's side is a real ``MessagingCore`` driven through ``MessagingDriver`` with the same
/// API-call records that go into the capture, with keys from a ``SeededKeySource``: every phone
/// write in the file is exactly what the core emitted. The watch is ``ScriptedWatch``: it answers
/// per docs/connectiq-link.md (connect with large packets, key/first/window/last acks) and echoes each
/// message as a plain transfer of 191-byte packets.
///
/// Frames are returned in time order, each as H4-with-phdr bytes (interface 0) or an API-call JSON
/// record (interface 1). Timestamps are nanoseconds since the session's start.
struct MessagingSession {
    /// Number of messages each way (one a second).
    var seconds: Int
    /// Serialized size the app's message aims at (the string is sized to reach it).
    var messageBytes: Int = 2048

    /// The watch's device UUID, as Garmin Connect Mobile lists it.
    static let deviceUUID = "7e7e7e7e-0000-4000-8000-f0f0f0f0f0f0"
    /// The watch's BLE address.
    static let peerAddress = "F0:F0:F0:F0:F0:F0"
    /// The echo app (the SDK's loopback test app).
    static let appUUID = "0180E520-5F7E-11E4-9803-0800200C9A66"
    /// The key seed of the recorded phone.
    static let keySeed: UInt64 = 0x5EED_C1A0_2026
    /// ACL connection handle of the link.
    static let aclHandle: UInt16 = 0x0001
    /// ATT handle of the Connect IQ write characteristic's value (from the discovery frames).
    static let writeHandle: UInt16 = 0x0010
    /// ATT handle of the Connect IQ notify characteristic's value.
    static let notifyHandle: UInt16 = 0x0012
    /// The ATT MTU both sides offer.
    static let mtu = 247

    /// One frame of the session.
    struct Frame {
        /// Nanoseconds since the session's start.
        var timeNs: Int64
        /// 0: HCI (H4 with phdr); 1: API calls.
        var interface: Int
        /// The frame's bytes under the interface's link type.
        var bytes: [UInt8]
    }

    /// What the generation saw the core report, so the caller can check the session is clean.
    struct Outcome {
        /// Every frame, in time order once ``generate()`` returns.
        var frames: [Frame]
        /// `completion` events with `Success`.
        var completionsSuccess = 0
        /// `completion` events with any other result.
        var completionsOther = 0
        /// Messages delivered to the app's listener (the echoes).
        var messagesReceived = 0
        /// Violations and timeouts the core reported, as text.
        var violations: [String] = []
        /// ATT writes of the phone on the Connect IQ write characteristic.
        var phoneWrites = 0
        /// ATT notifications of the watch on the Connect IQ notify characteristic.
        var watchNotifications = 0
    }

    /// Why the session could not be generated.
    struct GenerationError: Error, CustomStringConvertible {
        /// What went wrong and what it means for the session.
        var description: String
    }

    // MARK: - The session start, as recorded from a real phone host (Captures/ciq-clean frames 34–60)

    /// Frames from LE Create Connection to the CCCD Write Response, with their offsets (µs) after
    /// the app's register_app call: phdr direction, H4 type, HCI or ACL bytes. The MTU response
    /// offers 247 here; the rest is byte for byte what the recorded host exchanged.
    static let sessionStart: [(offsetUs: Int64, hex: String)] = [
        (400, "00000000010d2019600060000001f0f0f0f0f0f0010c0018000000480000000000"), // LE Create Connection
        (690, "00000001040f0400010d20"), // Command Status
        (46_870, "00000001043e13010001000001f0f0f0f0f0f00c000000480000"), // LE Connection Complete
        (47_800, "0000000002010007000300040002f700"), // Exchange MTU Request 247
        (48_200, "000000010413050101000100"), // Number Of Completed Packets
        (90_890, "0000000102012007000300040003f700"), // Exchange MTU Response 247
        (91_580, "000000000201001b0017000400060100ffff0028669a0c2000089a94e3117b6622804e6a"), // Find By Type Value (service)
        (92_030, "000000010413050101000100"),
        (134_890, "00000001020120090005000400070e001300"), // service 0x000e..0x0013
        (135_540, "000000000201001b0017000400061400ffff0028669a0c2000089a94e3117b6622804e6a"),
        (135_880, "000000010413050101000100"),
        (178_900, "00000001020120090005000400010614000a"), // Attribute Not Found
        (179_540, "000000000201000b0007000400080e0013000328"), // Read By Type 0x2803
        (179_910, "000000010413050101000100"),
        (226_900, "0000000102012030002c00040009150f000c1000669a0c2000089a94e3117b66804c4e6a1100101200669a0c2000089a94e3117b6628cd4e6a"),
        (227_770, "000000000201000b000700040008120013000328"),
        (228_120, "000000010413050101000100"),
        (270_890, "00000001020120090005000400010812000a"),
        (271_550, "000000000201000900050004000413001300"), // Find Information 0x0013
        (271_870, "000000010413050101000100"),
        (318_880, "000000010201200a0006000400050113000229"), // 0x0013 is the CCCD (0x2902)
        (319_500, "000000000201000900050004000413001300"),
        (319_820, "000000010413050101000100"),
        (362_890, "000000010201200a0006000400050113000229"),
        (363_720, "000000000201000900050004001213000100"), // Write Request CCCD = notify
        (364_050, "000000010413050101000100"),
    ]
    /// The CCCD Write Response: the link is up when the host sees it.
    static let writeResponseHex = "0000000102012005000100040013"
    /// When it comes, µs after register_app (as in the recorded session).
    static let writeResponseOffsetUs: Int64 = 410_900

    // MARK: - Generation

    /// Runs the session and returns its frames in time order.
    func generate() throws -> Outcome {
        var run = Run(session: self)
        try run.start()
        try run.loop()
        run.outcome.frames.sort { $0.timeNs < $1.timeNs }
        return run.outcome
    }

    /// The app's message for second `index`: `{"id": index, "text": …}`, the text sized so the
    /// serialized message is about ``messageBytes``. Built through its JSON form, as replay reads it.
    func message(_ index: Int) throws -> MonkeyCValue {
        var text = ""
        var chunk = 0
        // dictionary, two keys, the int and the string: ~60 bytes of overhead.
        let target = max(16, messageBytes - 60)
        while text.utf8.count < target {
            let n = String(chunk)
            text += String(repeating: "0", count: max(0, 4 - n.count)) + n + "-s" + String(index) + "-tether-2k-"
            chunk += 1
        }
        text = String(text.utf8.prefix(target))!
        return try MonkeyCJSON.monkeyCValue(.object(["id": .int(Int64(index)), "text": .string(text)]))
    }

    /// What happens at one instant of the run.
    private enum Event {
        case api(MessagingAPICall)
        case raw([UInt8])
        case linkUp
        case phoneWrite([UInt8])
        case watchNotification([UInt8])
    }

    /// The discrete-event run: a time-ordered queue of what happens next.
    private struct Run {
        let session: MessagingSession
        var outcome = Outcome(frames: [])
        var core: MessagingCore
        var watch = ScriptedWatch()
        var queue: [(timeNs: Int64, order: Int, event: Event)] = []
        var order = 0
        var nextPhoneWriteNs: Int64 = 0
        var nextWatchPacketNs: Int64 = 0
        let device: DeviceID

        init(session: MessagingSession) {
            self.session = session
            self.core = MessagingCore(keySource: SeededKeySource(seed: MessagingSession.keySeed))
            self.device = IQUUID(MessagingSession.deviceUUID)!
        }

        /// Write without response goes out one per connection event: 1.25 ms apart at least, the
        /// first 0.4 ms after the input that caused it.
        static let phoneWriteGapNs: Int64 = 1_250_000
        /// Delay from the input that made the core write to the write's frame.
        static let phoneReactionNs: Int64 = 400_000
        /// The watch answers a phone write 3 ms later (the next connection events) and sends its
        /// own packets 1.25 ms apart.
        static let watchAnswerNs: Int64 = 3_000_000
        /// Gap between two notifications of the watch.
        static let watchPacketGapNs: Int64 = 1_250_000
        /// The echo app replies 5 ms after the message arrived.
        static let echoDelayNs: Int64 = 5_000_000

        /// Queues `event` at `timeNs`, after everything already queued for the same instant.
        mutating func schedule(_ timeNs: Int64, _ event: Event) {
            order += 1
            // The queue is short (a transfer's packets): insertion keeps it sorted by (time, order).
            var i = queue.endIndex
            while i > queue.startIndex, queue[i - 1].timeNs > timeNs { i -= 1 }
            queue.insert((timeNs, order, event), at: i)
        }

        /// Queues the session start (API calls, link set-up) and one send a second.
        mutating func start() throws {
            let device = MessagingSession.deviceUUID
            let app = MessagingSession.appUUID
            let url = "tether-ciq://device-select-resp?ciqApp=Connect&ciqBundle=com.garmin.connect.mobile&ciqScheme"
                + "&ciqSdkVersion=10000&sourceUrlHost&d0ID=\(device.uppercased())&d0Model=Connect%20IQ%20watch%20%28bench%29&d0Name=watch-1"
            let calls: [MessagingAPICall] = [
                .bluetoothState(ready: true), .deviceList(url: url), .bindDevice(device: device, peer: MessagingSession.peerAddress),
                .registerDevice(device: device), .registerApp(app: app, device: device, listener: 1),
            ]
            var t: Int64 = 0
            for call in calls {
                schedule(t, .api(call))
                t += 200_000
            }
            let base = t
            for (offsetUs, hex) in MessagingSession.sessionStart {
                guard let bytes = MonkeyCJSON.decodeHex(hex) else { throw GenerationError(description: "bad session-start hex \(hex)") }
                schedule(base + offsetUs * 1000, .raw(bytes))
            }
            schedule(base + MessagingSession.writeResponseOffsetUs * 1000, .linkUp)
            for second in 0..<session.seconds {
                schedule(Int64(second + 1) * 1_000_000_000, .api(.send(app: app, device: device, message: try session.message(second))))
            }
        }

        /// Runs the queue dry: each event becomes its frame(s), and the core's and the watch's
        /// reactions are queued in turn. Throws when the core is left with work pending.
        mutating func loop() throws {
            while !queue.isEmpty {
                let (t, _, event) = queue.removeFirst()
                let now = Duration.nanoseconds(t)
                // The core's timers, as replay fires them: only before the input at t.
                while let deadline = core.nextDeadline, deadline < now {
                    try perform(core.handleTimeout(now: deadline), at: Int64(deadline.components.seconds) * 1_000_000_000
                        + deadline.components.attoseconds / 1_000_000_000)
                }
                switch event {
                case .api(let call):
                    // The record as the api-calls interface stores it, read back as replay reads it.
                    let json = Array(call.recordJSON.utf8)
                    outcome.frames.append(Frame(timeNs: t, interface: 1, bytes: json))
                    var record = try JSONLiteral.parseObject(json, label: "generated API call")
                    record["core"] = nil
                    let replayed = try MessagingAPICall(record: record)
                    let (actions, events) = MessagingDriver.apply(replayed, to: &core, now: now)
                    for e in events where e.event == "api_error" {
                        throw GenerationError(description: "the core refused \(call.name): \(e.fields)")
                    }
                    try perform(actions, at: t)
                case .raw(let bytes):
                    outcome.frames.append(Frame(timeNs: t, interface: 0, bytes: bytes))
                case .linkUp:
                    guard let bytes = MonkeyCJSON.decodeHex(MessagingSession.writeResponseHex) else { continue }
                    outcome.frames.append(Frame(timeNs: t, interface: 0, bytes: bytes))
                    try perform(core.linkConnected(device, maxWriteLength: MessagingSession.mtu - 3, now: now), at: t)
                case .phoneWrite(let value):
                    outcome.phoneWrites += 1
                    outcome.frames.append(Frame(timeNs: t, interface: 0, bytes: ATTFrame.writeCommand(value)))
                    outcome.frames.append(Frame(timeNs: t + 330_000, interface: 0, bytes: ATTFrame.completedPackets))
                    let reaction = try watch.phoneWrote(value)
                    for packet in reaction.packets { scheduleWatch(after: t + Self.watchAnswerNs, packet) }
                    if let echo = reaction.echo { scheduleWatch(after: t + Self.watchAnswerNs + Self.echoDelayNs, echo) }
                case .watchNotification(let value):
                    outcome.watchNotifications += 1
                    outcome.frames.append(Frame(timeNs: t, interface: 0, bytes: ATTFrame.notification(value)))
                    try perform(core.receive(value, from: device, now: now), at: t)
                }
            }
            if core.hasPendingWork {
                throw GenerationError(description: "the session ended with work pending in the core")
            }
        }

        /// Watch packets go out in order, one per connection event.
        mutating func scheduleWatch(after timeNs: Int64, _ packet: [UInt8]) {
            let at = max(timeNs, nextWatchPacketNs)
            nextWatchPacketNs = at + Self.watchPacketGapNs
            schedule(at, .watchNotification(packet))
        }

        /// Carries out the core's actions: writes are queued as phone writes, events counted.
        mutating func perform(_ actions: [MessagingAction], at timeNs: Int64) throws {
            for action in actions {
                switch action {
                case .write(_, let bytes):
                    let at = max(timeNs + Self.phoneReactionNs, nextPhoneWriteNs)
                    nextPhoneWriteNs = at + Self.phoneWriteGapNs
                    schedule(at, .phoneWrite(bytes))
                case .event(let event):
                    switch event {
                    case .completion(_, _, let result):
                        if result == .success { outcome.completionsSuccess += 1 } else { outcome.completionsOther += 1 }
                    case .messageReceived:
                        outcome.messagesReceived += 1
                    case .violation(_, let kind, let detail):
                        outcome.violations.append("\(kind): \(detail)")
                    case .timeout(let kind, _, _, _):
                        outcome.violations.append("timeout \(kind)")
                    default:
                        break
                    }
                case .saveDeviceList:
                    break
                }
            }
        }
    }
}

/// H4-with-phdr frames of the Connect IQ link's ATT traffic on the bench's ACL handle.
enum ATTFrame {
    /// `Write Command` to the write characteristic, sent by the phone's host.
    static func writeCommand(_ value: [UInt8]) -> [UInt8] {
        acl(sent: true, att: [0x52] + le16(MessagingSession.writeHandle) + value)
    }

    /// `Handle Value Notification` on the notify characteristic, received from the watch.
    static func notification(_ value: [UInt8]) -> [UInt8] {
        acl(sent: false, att: [0x1B] + le16(MessagingSession.notifyHandle) + value)
    }

    /// HCI Number Of Completed Packets: one packet on the link's handle.
    static let completedPackets: [UInt8] = [0, 0, 0, 1, 0x04, 0x13, 0x05, 0x01] + le16(MessagingSession.aclHandle) + [0x01, 0x00]

    /// phdr (big-endian direction: 0 sent, 1 received), H4 type 2, ACL header (handle with PB flags
    /// `00` first non-flushable from the host, `10` first flushable from the controller), L2CAP
    /// basic header on CID 4 (ATT).
    static func acl(sent: Bool, att: [UInt8]) -> [UInt8] {
        let l2capLength = att.count
        let aclLength = l2capLength + 4
        let handleAndFlags = MessagingSession.aclHandle | (sent ? 0x0000 : 0x2000)
        var out: [UInt8] = [0, 0, 0, sent ? 0 : 1, 0x02]
        out.reserveCapacity(out.count + 8 + att.count)
        out += le16(handleAndFlags) + le16(UInt16(aclLength)) + le16(UInt16(l2capLength)) + le16(0x0004)
        out += att
        return out
    }

    /// Two bytes, little-endian.
    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
}
