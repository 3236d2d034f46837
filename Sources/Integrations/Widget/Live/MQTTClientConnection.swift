import WidgetIntegration
import ReplayKit
import BehaviourTrace
import LiveHosts
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture
import MQTT

/// A small MQTT client on one TCP connection, for the live widget host: clean session, QoS 0–2 both
/// ways, keep-alive, no reconnects. The packets are the `MQTT` module's; this class only moves their
/// bytes and keeps the few facts a client must keep (packet ids in flight, QoS 2 releases, when it
/// last sent).
///
/// Like ``BLEBridge``, one thread uses an instance (a live host's loop) and nothing runs behind its
/// back: bytes are read and keep-alive is kept only inside ``poll(waitingAtMost:)``, so the caller
/// must call it at least by ``nextDeadline`` (a host that polls ``fileDescriptor`` with its other
/// descriptors wakes for that deadline too).
///
/// Errors follow the house rule: a method throws only when the caller misused it (not opened, a bad
/// QoS or topic) or when ``open()`` cannot reach the broker. Anything the broker or the network does
/// afterwards — closing, resetting, refusing CONNACK, sending bytes that are not MQTT, going
/// silent — ends the connection and is reported once by ``poll(waitingAtMost:)`` as
/// ``Event/closed(reason:)``, because a live host records such things and carries on.
public final class MQTTClientConnection {
    /// What ``poll(waitingAtMost:)`` found, in the order it happened on the wire.
    public enum Event: Sendable, Hashable {
        /// CONNACK accepted the connection (code 0); `sessionPresent` is the broker's flag, always
        /// false for the clean session this client asks for unless the broker misbehaves.
        case connected(sessionPresent: Bool)
        /// SUBACK for ``MQTTClientConnection/subscribe(_:qos:)``'s packet id: the topic filters the
        /// broker granted (return or reason code below 0x80), in the order subscribed.
        case subscribed(packetID: UInt16, granted: [String])
        /// An incoming PUBLISH. For QoS 1 the PUBACK is already sent; for QoS 2 the PUBREC is sent
        /// and a redelivery of the same packet id before its PUBREL is not reported again.
        case message(topic: String, payload: [UInt8], qos: UInt8)
        /// Our QoS 1 publish was acknowledged (PUBACK), or our QoS 2 publish completed (PUBCOMP, or a
        /// PUBREC with an MQTT 5 failure code, which ends the exchange).
        case published(packetID: UInt16)
        /// The connection ended without ``MQTTClientConnection/close()``: the broker closed or reset
        /// it, a read or write failed, CONNACK refused, the broker sent something that is not valid
        /// MQTT, or the keep-alive went unanswered. Reported once; the socket is already closed.
        case closed(reason: String)
    }

    /// The broker's host name or address.
    public let host: String
    /// The broker's TCP port.
    public let port: UInt16
    /// The Client Identifier sent in CONNECT.
    public let clientID: String
    /// The Keep Alive sent in CONNECT, in seconds (0 turns keep-alive off).
    public let keepAlive: UInt16
    /// The protocol level spoken on the connection.
    public let version: MQTTVersion

    /// How long ``open()`` waits for the TCP handshake.
    static let connectLimit: Duration = .seconds(5)
    /// How long the connection may stay without CONNACK: keep-alive alone would take up to 1.5 ×
    /// Keep Alive to notice a listener that never answers, and nothing at all when it is 0.
    static let connackLimit: Duration = .seconds(10)
    /// How long one packet's write may wait for room in the socket's send buffer before the broker
    /// counts as gone.
    static let writeLimit: Duration = .seconds(10)
    /// How long ``close()`` tries to get DISCONNECT out: closing must not hang on a stalled broker.
    static let disconnectLimit: Duration = .seconds(1)
    /// Reads per poll before returning, so a broker that floods the connection cannot keep the
    /// host's loop inside one call.
    static let readsPerPoll = 32

    private enum Phase {
        case notOpened
        /// CONNECT is sent; the client may already publish and subscribe (MQTT 3.1.1 §3.1.4).
        case awaitingConnack
        case connected
        /// The connection ended on its own; `reported` once poll has returned `.closed`.
        case ended(reason: String, reported: Bool)
        case closedByCaller
    }

    /// Why a packet id is in use. One table for SUBSCRIBE and PUBLISH because they share the id
    /// space (§2.2.1).
    private enum InFlight: Equatable {
        case subscribe(topics: [String])
        case publishAwaitingPuback
        case publishAwaitingPubrec
        case publishAwaitingPubcomp
    }

    private var phase = Phase.notOpened
    private var socket: Int32 = -1
    private var framer = MQTTStreamFramer()
    /// The packet id handed out last (0 before the first); internal so tests can start near the wrap.
    var lastPacketID: UInt16 = 0
    private var inFlight: [UInt16: InFlight] = [:]
    /// Incoming QoS 2 packet ids delivered but not yet released by PUBREL: a PUBLISH repeated with
    /// one of them is the same message.
    private var awaitingRelease: Set<UInt16> = []
    /// The keep-alive interval in effect: ours, or the MQTT 5 Server Keep Alive when CONNACK sets one.
    private var keepAliveInterval: Duration
    private var lastSent = ContinuousClock.now
    private var pingSentAt: ContinuousClock.Instant?
    private var connackDeadline: ContinuousClock.Instant?
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// PINGREQs sent so far; tests read it to see keep-alive at work.
    private(set) var pingRequestsSent = 0

    /// A connection to `host`:`port`; nothing happens until ``open()``.
    public init(host: String, port: UInt16, clientID: String, keepAlive: UInt16 = 30, version: MQTTVersion = .v3_1_1) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.keepAlive = keepAlive
        self.version = version
        self.keepAliveInterval = .seconds(Int(keepAlive))
    }

    deinit {
        if socket >= 0 { SystemCalls.close(socket) }
    }

    /// `true` from a successful ``open()`` until the connection ends or ``close()``; CONNACK may
    /// still be on its way.
    public var isOpen: Bool {
        switch phase {
        case .awaitingConnack, .connected: true
        case .notOpened, .ended, .closedByCaller: false
        }
    }

    /// The socket's file descriptor, so a caller can poll it together with other descriptors;
    /// `nil` when the connection is not open. Readable means ``poll(waitingAtMost:)`` has work.
    public var fileDescriptor: Int32? { isOpen ? socket : nil }

    /// When ``poll(waitingAtMost:)`` must run next even if the socket stays quiet: a PINGREQ is due,
    /// a PINGREQ's answer is overdue, or CONNACK is. `nil` when the connection is not open or
    /// keep-alive is off and CONNACK has come.
    public var nextDeadline: ContinuousClock.Instant? {
        guard isOpen else { return nil }
        var deadline = connackDeadline
        if keepAliveInterval > .zero {
            let keepAliveDeadline = pingSentAt.map { $0 + keepAliveInterval } ?? lastSent + keepAliveInterval / 2
            deadline = min(deadline ?? keepAliveDeadline, keepAliveDeadline)
        }
        return deadline
    }

    private var target: String { "MQTT broker \(host):\(port)" }

    // MARK: - Opening and closing

    /// Connects over TCP (at most 5 s) and sends CONNECT with a clean session. CONNACK comes later,
    /// as ``Event/connected(sessionPresent:)`` or ``Event/closed(reason:)`` from
    /// ``poll(waitingAtMost:)``; publishing and subscribing may start at once.
    ///
    /// Throws when the broker cannot be reached (the hint says how to start one), or when called
    /// twice. A failed open leaves the connection unopened, so it may be tried again.
    public func open() throws(LiveHostError) {
        guard case .notOpened = phase else {
            throw misuse("open", "the connection was already opened", "Make a new MQTTClientConnection to connect again.")
        }
        var properties: [MQTTProperty] = []
        if version == .v5 {
            // Larger packets would be skipped by the framer; MQTT 5 lets the broker know up front.
            properties.append(.maximumPacketSize(UInt32(framer.maximumPacketLength)))
        }
        let connect = MQTTPacket(type: .connect, body: .connect(MQTTConnect(
            version: version, cleanSession: true, keepAlive: keepAlive, clientID: clientID, properties: properties)))
        let bytes: [UInt8]
        do throws(MQTTEncodeError) {
            bytes = try connect.encoded(version: version)
        } catch {
            throw misuse("encode CONNECT", error.description, "Use a client id of at most 65,535 UTF-8 bytes.")
        }
        let fd = try Self.connectedSocket(host: host, port: port, target: target)
        socket = fd
        phase = .awaitingConnack
        if let failure = writeAll(bytes, limit: Self.writeLimit) {
            SystemCalls.close(fd)
            socket = -1
            phase = .notOpened
            throw LiveHostError(target: target, step: "send CONNECT", detail: failure, hint: Self.startBrokerHint)
        }
        connackDeadline = ContinuousClock.now + Self.connackLimit
    }

    /// Sends DISCONNECT when the connection is open (best effort, at most a second) and closes the
    /// socket. Idempotent; afterwards ``poll(waitingAtMost:)`` returns nothing, not even
    /// `.closed`, since the caller knows.
    public func close() {
        if isOpen {
            let disconnect = MQTTPacket(type: .disconnect, body: .reason(reasonCode: 0, properties: []))
            _ = writeAll(Self.encode(disconnect, version: version), limit: Self.disconnectLimit)
        }
        if socket >= 0 {
            SystemCalls.close(socket)
            socket = -1
        }
        phase = .closedByCaller
        inFlight = [:]
        awaitingRelease = []
    }

    // MARK: - Sending

    /// Sends SUBSCRIBE for `topics` at `qos`; the answer comes as ``Event/subscribed(packetID:granted:)``
    /// with the returned packet id.
    ///
    /// Throws when the caller misuses it: not opened, closed by ``close()`` or after `.closed` was
    /// reported, no topics, an empty filter, a QoS above 2. When the connection has ended but
    /// `.closed` is not yet reported, nothing is sent and the next poll reports the end.
    @discardableResult
    public func subscribe(_ topics: [String], qos: UInt8 = 1) throws(LiveHostError) -> UInt16 {
        try checkCanSend("subscribe")
        guard !topics.isEmpty, !topics.contains(where: \.isEmpty) else {
            throw misuse("subscribe", "SUBSCRIBE needs at least one topic filter, none empty", "Pass topic filters such as `widget/+/state`.")
        }
        guard qos <= 2 else { throw misuse("subscribe", "QoS \(qos)", "QoS is 0, 1 or 2.") }
        let id = try allocatePacketID("subscribe")
        let subscriptions = topics.map { MQTTSubscription(topicFilter: $0, options: qos) }
        let packet = MQTTPacket(type: .subscribe, body: .subscribe(packetID: id, properties: [], subscriptions: subscriptions))
        let bytes: [UInt8]
        do throws(MQTTEncodeError) {
            bytes = try packet.encoded(version: version)
        } catch {
            throw misuse("subscribe", error.description, "Use topic filters of at most 65,535 UTF-8 bytes.")
        }
        guard isOpen else { return id }
        inFlight[id] = .subscribe(topics: topics)
        send(bytes)
        return id
    }

    /// Sends PUBLISH; returns its packet id for QoS 1 and 2 (the one ``Event/published(packetID:)``
    /// will carry), `nil` for QoS 0.
    ///
    /// Throws when the caller misuses it: not opened, closed by ``close()`` or after `.closed` was
    /// reported, an empty topic or one with a wildcard, a QoS above 2, a packet too long to encode.
    /// A write that fails ends the connection instead of throwing (the next poll says why), as a
    /// broker dropping the connection a moment after the write would.
    @discardableResult
    public func publish(topic: String, payload: [UInt8], qos: UInt8) throws(LiveHostError) -> UInt16? {
        try checkCanSend("publish")
        guard !topic.isEmpty, !topic.contains("+"), !topic.contains("#") else {
            throw misuse("publish", "the topic `\(topic)` is empty or has a wildcard", "Publish to a topic name such as `widget/lamp/state`; wildcards are for subscribing.")
        }
        guard qos <= 2 else { throw misuse("publish", "QoS \(qos)", "QoS is 0, 1 or 2.") }
        let id = qos > 0 ? try allocatePacketID("publish") : nil
        let packet = MQTTPacket(type: .publish, body: .publish(MQTTPublish(topic: topic, qos: qos, packetID: id, payload: payload)))
        let bytes: [UInt8]
        do throws(MQTTEncodeError) {
            bytes = try packet.encoded(version: version)
        } catch {
            throw misuse("publish", error.description, "Shorten the topic or the payload.")
        }
        guard isOpen else { return id }
        if let id { inFlight[id] = qos == 1 ? .publishAwaitingPuback : .publishAwaitingPubrec }
        send(bytes)
        return id
    }

    /// Misuse is judged by what the caller could know: a connection that ended unseen is not their
    /// fault, one they were told about or closed themselves is.
    private func checkCanSend(_ step: String) throws(LiveHostError) {
        switch phase {
        case .notOpened:
            throw misuse(step, "the connection is not open", "Call open() first.")
        case .closedByCaller:
            throw misuse(step, "the connection was closed by close()", "Make a new MQTTClientConnection to connect again.")
        case .ended(let reason, let reported) where reported:
            throw misuse(step, "the connection has ended (\(reason))", "Make a new MQTTClientConnection to connect again.")
        case .awaitingConnack, .connected, .ended:
            break
        }
    }

    /// The next id after the last one handed out, 1…65535 wrapping past 0, skipping ids still
    /// awaiting their acknowledgement (reusing one would confuse the two exchanges).
    private func allocatePacketID(_ step: String) throws(LiveHostError) -> UInt16 {
        guard inFlight.count < Int(UInt16.max) else {
            throw misuse(step, "all 65,535 packet ids await acknowledgement", "Poll for acknowledgements before sending more QoS 1 and 2 packets.")
        }
        repeat {
            lastPacketID = lastPacketID == UInt16.max ? 1 : lastPacketID + 1
        } while inFlight[lastPacketID] != nil
        return lastPacketID
    }

    // MARK: - Polling

    /// Waits up to `waitingAtMost` for the broker (less when keep-alive needs attention sooner),
    /// reads what is there without blocking, and returns what it meant: acknowledgements are sent
    /// before the events that need them are returned, and a PINGREQ goes out when half the keep-alive
    /// interval has passed without sending. Returns `.closed` once when the connection ends, after
    /// the events of the bytes that came before the end, and `[]` from then on.
    ///
    /// Throws only when the connection was never opened.
    public func poll(waitingAtMost timeout: Duration) throws(LiveHostError) -> [Event] {
        switch phase {
        case .notOpened:
            throw misuse("poll", "the connection is not open", "Call open() first.")
        case .closedByCaller:
            return []
        case .ended(let reason, let reported):
            guard !reported else { return [] }
            phase = .ended(reason: reason, reported: true)
            return [.closed(reason: reason)]
        case .awaitingConnack, .connected:
            break
        }
        var events: [Event] = []
        var wait = max(timeout, .zero)
        if let deadline = nextDeadline { wait = min(wait, max(.zero, ContinuousClock.now.duration(to: deadline))) }
        var pfd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = SystemCalls.poll(&pfd, 1, Self.milliseconds(wait))
        // An interrupted wait (-1, EINTR) costs one read that finds nothing; cheaper than a retry loop.
        if ready != 0 { readAvailable(into: &events) }
        if isOpen { serviceTimers() }
        if case .ended(let reason, false) = phase {
            events.append(.closed(reason: reason))
            phase = .ended(reason: reason, reported: true)
        }
        return events
    }

    private func readAvailable(into events: inout [Event]) {
        for _ in 0..<Self.readsPerPoll {
            guard isOpen else { return }
            let count = readBuffer.withUnsafeMutableBytes { SystemCalls.recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                ingest(count, into: &events)
                continue
            }
            if count == 0 { return end("the broker closed the connection") }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return }
            return end("reading from the broker failed: \(Self.describe(code))")
        }
    }

    /// What the framer made of one read, gathered before any is handled because handling may end
    /// the connection, after which nothing more is read.
    private enum Framed {
        case packet(Result<MQTTPacket, MQTTDecodeError>)
        case tooLong(firstByte: UInt8, length: Int)
        case unframeable(MQTTDecodeError)
    }

    private func ingest(_ count: Int, into events: inout [Event]) {
        var framed: [Framed] = []
        let version = version
        readBuffer.withUnsafeBytes { buffer in
            framer.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { item in
                switch item {
                case .packet(let bytes): framed.append(.packet(MQTTPacket.decode(bytes, version: version)))
                case .skipped(let firstByte, let length): framed.append(.tooLong(firstByte: firstByte, length: length))
                case .unframeable(let error): framed.append(.unframeable(error))
                }
            }
        }
        for item in framed {
            guard isOpen else { return }
            switch item {
            case .packet(.success(let packet)):
                handle(packet, into: &events)
            case .packet(.failure(let error)):
                end("the broker sent a malformed packet: \(error)")
            case .tooLong(let firstByte, let length):
                let type = MQTTPacketType(rawValue: firstByte >> 4).map { "\($0)" } ?? "packet"
                end("the broker sent a \(type) of \(length) bytes, more than this client's limit of \(framer.maximumPacketLength)")
            case .unframeable(let error):
                end("the broker's byte stream cannot be framed: \(error)")
            }
        }
    }

    private func handle(_ packet: MQTTPacket, into events: inout [Event]) {
        // Anything from the broker answers an outstanding PINGREQ as well as PINGRESP would: the
        // broker is there.
        pingSentAt = nil
        if case .awaitingConnack = phase, packet.type != .connack {
            return end("protocol error: the broker sent \(packet.type) before CONNACK")
        }
        switch packet.body {
        case .connack(let sessionPresent, let code, let properties):
            guard case .awaitingConnack = phase else { return end("protocol error: the broker sent a second CONNACK") }
            guard code == 0 else { return end("the broker refused the connection: CONNACK \(Self.connackCodeText(code, version: version))") }
            phase = .connected
            connackDeadline = nil
            for case .serverKeepAlive(let seconds) in properties {
                // MQTT 5 §3.2.2.3.14: the client must use the broker's value instead of its own.
                keepAliveInterval = .seconds(Int(seconds))
            }
            events.append(.connected(sessionPresent: sessionPresent))

        case .publish(let publish):
            guard publish.qos > 0 else {
                return events.append(.message(topic: publish.topic, payload: publish.payload, qos: 0))
            }
            guard let id = publish.packetID else {
                preconditionFailure("MQTTClientConnection: the decoder returned a QoS \(publish.qos) PUBLISH without a packet id")
            }
            if publish.qos == 1 {
                // Acknowledged before it is handed on, so a message the caller saw is never redelivered.
                send(acknowledgement(.puback, id))
                events.append(.message(topic: publish.topic, payload: publish.payload, qos: 1))
            } else {
                // QoS 2, delivered on PUBLISH and remembered until PUBREL (§4.3.3 method B).
                if awaitingRelease.insert(id).inserted {
                    events.append(.message(topic: publish.topic, payload: publish.payload, qos: 2))
                }
                send(acknowledgement(.pubrec, id))
            }

        case .acknowledgement(let id, let code, _):
            switch packet.type {
            case .puback:
                if inFlight[id] == .publishAwaitingPuback {
                    inFlight[id] = nil
                    events.append(.published(packetID: id))
                }
            case .pubrec:
                // A repeated PUBREC (the broker's PUBREL went missing on its side) gets PUBREL again.
                guard inFlight[id] == .publishAwaitingPubrec || inFlight[id] == .publishAwaitingPubcomp else { return }
                if code >= 0x80 {
                    // MQTT 5: the broker refused the message; the exchange ends here (§4.3.3).
                    inFlight[id] = nil
                    events.append(.published(packetID: id))
                } else {
                    inFlight[id] = .publishAwaitingPubcomp
                    send(acknowledgement(.pubrel, id))
                }
            case .pubrel:
                // Answered even for an unknown id: the broker may be repeating a PUBREL whose
                // PUBCOMP it missed, and only PUBCOMP lets it forget the message.
                awaitingRelease.remove(id)
                send(acknowledgement(.pubcomp, id))
            case .pubcomp:
                if inFlight[id] == .publishAwaitingPubcomp {
                    inFlight[id] = nil
                    events.append(.published(packetID: id))
                }
            default:
                preconditionFailure("MQTTClientConnection: the decoder returned an acknowledgement body for \(packet.type)")
            }

        case .suback(let id, _, let codes):
            guard case .subscribe(let topics) = inFlight[id] else { return }
            guard codes.count == topics.count else {
                return end("protocol error: SUBACK \(id) has \(codes.count) return codes for \(topics.count) topic filters")
            }
            inFlight[id] = nil
            let granted = zip(topics, codes).filter { $0.1 < 0x80 }.map(\.0)
            events.append(.subscribed(packetID: id, granted: granted))

        case .ping where packet.type == .pingresp, .unsuback:
            // PINGRESP did its job above; UNSUBACK cannot answer anything since this client never
            // unsubscribes, and is harmless.
            break

        case .reason(let code, let properties) where packet.type == .disconnect:
            var reason = "the broker sent DISCONNECT"
            if version == .v5 { reason += " with reason code 0x\(String(code, radix: 16, uppercase: true))" }
            for case .reasonString(let text) in properties { reason += ": \(text)" }
            end(reason)

        case .connect, .subscribe, .unsubscribe, .ping, .reason:
            end("protocol error: a broker never sends \(packet.type)")
        }
    }

    private func acknowledgement(_ type: MQTTPacketType, _ id: UInt16) -> [UInt8] {
        Self.encode(MQTTPacket(type: type, body: .acknowledgement(packetID: id, reasonCode: 0, properties: [])), version: version)
    }

    private func serviceTimers() {
        let now = ContinuousClock.now
        if let deadline = connackDeadline, now >= deadline {
            return end("no CONNACK within \(Self.connackLimit) of connecting; is it an MQTT broker?")
        }
        guard keepAliveInterval > .zero else { return }
        if let sent = pingSentAt {
            if now >= sent + keepAliveInterval {
                end("keep-alive lost: nothing from the broker within \(keepAliveInterval) of a PINGREQ")
            }
        } else if now >= lastSent + keepAliveInterval / 2 {
            send(Self.encode(MQTTPacket(type: .pingreq, body: .ping), version: version))
            pingSentAt = now
            pingRequestsSent += 1
        }
    }

    // MARK: - Bytes

    /// Writes `bytes` and, when that fails, ends the connection with the reason.
    private func send(_ bytes: [UInt8]) {
        guard isOpen else { return }
        if let failure = writeAll(bytes, limit: Self.writeLimit) { end(failure) }
    }

    /// Writes all of `bytes`, waiting for room in the send buffer when the kernel's is full (the
    /// socket is non-blocking so that reads never block; writes must still complete, or a packet
    /// would be cut in half). Returns why it failed, or `nil`.
    private func writeAll(_ bytes: [UInt8], limit: Duration) -> String? {
        let deadline = ContinuousClock.now + limit
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                // A broker that has gone must be an error here, not a SIGPIPE that ends the host.
                SystemCalls.sendNoSignal(socket, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written >= 0 {
                offset += written
                continue
            }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else {
                return "writing to the broker failed: \(Self.describe(code))"
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                return "the broker took \(offset) of a \(bytes.count)-byte packet and no more within \(limit)"
            }
            var pfd = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            _ = SystemCalls.poll(&pfd, 1, Self.milliseconds(left))
        }
        lastSent = .now
        return nil
    }

    /// Ends the connection on its own (not by ``close()``): the socket is closed at once, since a
    /// client must close on protocol errors (MQTT 3.1.1 §4.8) and nothing more can be sent or
    /// trusted; `.closed` waits for the next poll's report.
    private func end(_ reason: String) {
        guard isOpen else { return }
        SystemCalls.close(socket)
        socket = -1
        phase = .ended(reason: reason, reported: false)
        inFlight = [:]
        awaitingRelease = []
        pingSentAt = nil
        connackDeadline = nil
    }

    // MARK: - Helpers

    /// The hint for every failure to reach the broker.
    static let startBrokerHint = "Is a broker listening there? Start one with `python3 Harness/rigs/mqtt_broker.py` "
        + "(127.0.0.1:1883; `--port 0` picks a free port and prints `READY <port>`), and check the host and port."

    /// A non-blocking TCP socket connected to `host`:`port`, trying each address the name resolves to
    /// within one overall limit.
    private static func connectedSocket(host: String, port: UInt16, target: String) throws(LiveHostError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = SystemCalls.streamSocket
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw LiveHostError(target: target, step: "getaddrinfo", detail: String(cString: gai_strerror(status)),
                                hint: "Check the broker's host name; the rigs listen on 127.0.0.1.")
        }
        defer { freeaddrinfo(first) }
        let deadline = ContinuousClock.now + connectLimit
        var failures: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            // Close-on-exec (as every socket SystemCalls makes): a child process (a rig, a bridge)
            // must not inherit the connection and keep it alive.
            let fd = SystemCalls.socket(family: info.pointee.ai_family, type: info.pointee.ai_socktype,
                                        protocol: info.pointee.ai_protocol, nonBlocking: true)
            guard fd >= 0 else {
                failures.append("socket(): \(describe(errno))")
                continue
            }
            if let failure = finishConnect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen, deadline: deadline) {
                SystemCalls.close(fd)
                failures.append(failure)
                continue
            }
            var one: Int32 = 1
            // Acks and PINGREQs are a few bytes each; Nagle would hold them back behind nothing.
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
        throw LiveHostError(target: target, step: "connect", detail: failures.joined(separator: "; "), hint: startBrokerHint)
    }

    /// Connects without blocking past `deadline`; returns why it failed, or `nil`.
    private static func finishConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t,
                                      deadline: ContinuousClock.Instant) -> String? {
        if SystemCalls.connect(fd, address, length) == 0 { return nil }
        // EINTR leaves the handshake running in the background, just as EINPROGRESS does.
        guard errno == EINPROGRESS || errno == EINTR else { return describe(errno) }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return "no answer within \(connectLimit)" }
            let ready = SystemCalls.poll(&pfd, 1, milliseconds(left))
            if ready > 0 { break }
            if ready < 0, errno != EINTR { return "poll: \(describe(errno))" }
        }
        var error: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 else { return "getsockopt: \(describe(errno))" }
        return error == 0 ? nil : describe(error)
    }

    /// Encodes a packet this class builds itself; those always fit, so failing is a bug here.
    private static func encode(_ packet: MQTTPacket, version: MQTTVersion) -> [UInt8] {
        do throws(MQTTEncodeError) {
            return try packet.encoded(version: version)
        } catch {
            preconditionFailure("MQTTClientConnection: cannot encode its own \(packet.type): \(error)")
        }
    }

    /// `poll(2)`'s timeout for `duration`, rounded up so a wait never ends just before its deadline
    /// and spins.
    private static func milliseconds(_ duration: Duration) -> Int32 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let perMillisecond: Int64 = 1_000_000_000_000_000
        return Int32(clamping: seconds * 1000 + (attoseconds + perMillisecond - 1) / perMillisecond)
    }

    private static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// `5 (not authorized)`: the standard's name for a CONNACK return (3.1.1 §3.2.2.3) or reason
    /// (5 §3.2.2.2) code.
    static func connackCodeText(_ code: UInt8, version: MQTTVersion) -> String {
        let names: [UInt8: String] = version == .v5
            ? [0x80: "unspecified error", 0x81: "malformed packet", 0x82: "protocol error", 0x83: "implementation specific error",
               0x84: "unsupported protocol version", 0x85: "client identifier not valid", 0x86: "bad user name or password",
               0x87: "not authorized", 0x88: "server unavailable", 0x89: "server busy", 0x8A: "banned",
               0x8C: "bad authentication method", 0x90: "topic name invalid", 0x95: "packet too large",
               0x97: "quota exceeded", 0x99: "payload format invalid", 0x9A: "retain not supported",
               0x9B: "QoS not supported", 0x9C: "use another server", 0x9D: "server moved", 0x9F: "connection rate exceeded"]
            : [1: "unacceptable protocol version", 2: "identifier rejected", 3: "server unavailable",
               4: "bad user name or password", 5: "not authorized"]
        let number = version == .v5 ? "0x\(String(code, radix: 16, uppercase: true))" : "\(code)"
        return "\(number) (\(names[code] ?? "a code the standard does not define"))"
    }

    private func misuse(_ step: String, _ detail: String, _ hint: String) -> LiveHostError {
        LiveHostError(target: target, step: step, detail: detail, hint: hint)
    }
}
