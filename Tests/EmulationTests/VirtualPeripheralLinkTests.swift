import CaptureKit
import Dissectors
import Emulation
import Testing

/// The recorded peripheral on a virtual link: timing, discovery, anchors, faults.
@Suite struct VirtualPeripheralLinkTests {
    static let sensor: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0xE0, 0xF0]

    /// A phone-side capture: advertising at 0 ms, connection at 100 ms, discovery, a read, a
    /// subscription at 300 ms, notifications at 1.3 s and 2.3 s, a command to the Control Point at
    /// 2.5 s answered on it at 2.51 s, the peripheral ending the link at 4 s.
    static func capture() -> [CaptureFrame] {
        let ms: Int64 = 1_000_000
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09] + Array("Band".utf8) + [0x03, 0x03, 0x0D, 0x18]
        return Frames.capture([
            (Frames.advertisingReport(address: sensor, data: ad), 0),                                                           // 1
            (Frames.connected(address: sensor), 100 * ms),                                                                      // 2
            (Frames.att(Frames.serviceDiscoveryRequest(from: 1), received: false), 110 * ms),                                   // 3
            (Frames.att(Frames.serviceDiscoveryResponse([(0x0010, 0xFFFF, 0x180D)]), received: true), 140 * ms),               // 4
            (Frames.att(Frames.characteristicDiscoveryRequest(0x0010, 0xFFFF), received: false), 150 * ms),                    // 5
            (Frames.att(Frames.characteristicDiscoveryResponse([(0x0011, 0x12, 0x0012, 0x2A37), (0x0014, 0x1A, 0x0015, 0x2A39)]), received: true), 180 * ms), // 6
            (Frames.att(Frames.findInformationRequest(0x0013, 0x0013), received: false), 190 * ms),                             // 7
            (Frames.att(Frames.findInformationResponse([(0x0013, 0x2902)]), received: true), 220 * ms),                         // 8
            (Frames.att(Frames.readRequest(0x0015), received: false), 250 * ms),                                                // 9
            (Frames.att(Frames.readResponse([0x07]), received: true), 280 * ms),                                                // 10
            (Frames.att(Frames.writeRequest(0x0013, [0x01, 0x00]), received: false), 300 * ms),                                 // 11
            (Frames.att(Frames.writeResponse, received: true), 330 * ms),                                                       // 12
            (Frames.att(Frames.notification(0x0012, [0x00, 0x48]), received: true), 1_300 * ms),                                // 13
            (Frames.att(Frames.notification(0x0012, [0x00, 0x49]), received: true), 2_300 * ms),                                // 14
            (Frames.att(Frames.writeRequest(0x0015, [0x01]), received: false), 2_500 * ms),                                     // 15
            (Frames.att(Frames.writeResponse, received: true), 2_505 * ms),                                                     // 16
            (Frames.att(Frames.notification(0x0015, [0x00, 0x00]), received: true), 2_510 * ms),                                // 17
            (Frames.disconnected(), 4_000 * ms),                                                                                 // 18
        ])
    }

    static func link(faults: any VirtualLinkFaults = NoVirtualLinkFaults(), endsAsRecorded: Bool = true) throws -> VirtualPeripheralLink {
        let frames = endsAsRecorded ? capture() : Array(capture().dropLast())
        let peripheral = try CaptureScanner.scan(frames: frames, linkType: .bluetoothHCIH4WithPHDR)
        return VirtualPeripheralLink(plan: try EmulationPlan(peripheral: peripheral, file: "<test>"), faults: faults)
    }

    /// Runs `link` to `until`, collecting what it says with each instant.
    static func run(_ link: inout VirtualPeripheralLink, until: Int64) -> [(Int64, VirtualLinkEvent)] {
        var out: [(Int64, VirtualLinkEvent)] = []
        while let next = link.nextDeadlineNs, next <= until {
            out += link.advance(to: next).map { (next, $0) }
        }
        return out
    }

    /// Connects at `at` and subscribes to the measurement at `subscribeAt`.
    static func subscribed(_ link: inout VirtualPeripheralLink, subscribeAt: Int64, until: Int64 = 10_000_000_000) -> [(Int64, VirtualLinkEvent)] {
        _ = link.connect(now: 0)
        var events = run(&link, until: subscribeAt)
        events += link.perform(.setNotify(0x0012, true), now: subscribeAt).map { (subscribeAt, $0) }
        events += run(&link, until: until)
        return events
    }

    static func notified(_ events: [(Int64, VirtualLinkEvent)]) -> [(Int64, [UInt8])] {
        events.compactMap { if case .notified(let n) = $0.1 { ($0.0, n.value) } else { nil } }
    }

    @Test func theConnectionComesUpAtItsRecordedInstantWhenAskedEarlier() throws {
        var link = try Self.link()
        _ = link.connect(now: 0)
        let events = Self.run(&link, until: 1_000_000_000)
        let connected = events.first { if case .connected = $0.1 { true } else { false } }
        #expect(connected?.0 == 100_000_000)
    }

    @Test func notificationsComeAtTheirRecordedInstantsAfterAnEarlySubscription() throws {
        var link = try Self.link()
        let notified = Self.notified(Self.subscribed(&link, subscribeAt: 200_000_000))
        #expect(notified.map(\.0) == [1_300_000_000, 2_300_000_000])
    }

    @Test func aLaterSubscriptionMovesItsNotificationsByAsMuch() throws {
        var link = try Self.link()
        let notified = Self.notified(Self.subscribed(&link, subscribeAt: 1_000_000_000))
        // Recorded 300 ms; subscribed 700 ms later.
        #expect(notified.map(\.0) == [2_000_000_000, 3_000_000_000])
    }

    @Test func aCommandsAnswerFollowsTheCommandNotTheSubscription() throws {
        var link = try Self.link()
        _ = Self.subscribed(&link, subscribeAt: 200_000_000, until: 2_900_000_000)
        _ = link.perform(.setNotify(0x0015, true), now: 2_900_000_000)
        _ = Self.run(&link, until: 3_000_000_000)
        // Anchored to the write at 2.5 s: nothing until the app writes the same.
        var events = link.perform(.write(0x0015, [0x01], withResponse: true), now: 3_000_000_000).map { (3_000_000_000 as Int64, $0) }
        events += Self.run(&link, until: 3_900_000_000)
        let answers = Self.notified(events)
        #expect(answers.map(\.0) == [3_010_000_000])
        #expect(answers.map(\.1) == [[0x00, 0x00]])
    }

    @Test func aNotificationIsNotDeliveredAfterTheAppSwitchedNotificationsOff() throws {
        var link = try Self.link()
        var events = Self.subscribed(&link, subscribeAt: 200_000_000, until: 1_000_000_000)
        events += link.perform(.setNotify(0x0012, false), now: 1_000_000_000).map { (1_000_000_000 as Int64, $0) }
        events += Self.run(&link, until: 3_000_000_000)
        #expect(Self.notified(events).isEmpty)
        #expect(link.counts.notSubscribed >= 1)
    }

    @Test func discoveryIsAnsweredFromTheRecordedDatabaseAndMatchesTheRecordedRequests() throws {
        var link = try Self.link()
        _ = link.connect(now: 0)
        var events = Self.run(&link, until: 100_000_000)
        events += link.perform(.discoverServices(nil), now: 100_000_000).map { (100_000_000, $0) }
        events += Self.run(&link, until: 1_000_000_000)
        let matched = events.compactMap { if case .requestSent(_, let m?, _) = $0.1 { m.frame } else { nil } }
        #expect(matched.first == 3)
        let services = events.compactMap { if case .servicesDiscovered(let s, nil) = $0.1 { s.map(\.uuid) } else { nil } }
        #expect(services == [[BluetoothUUID(0x180D)]])
        // Answered at the recorded response's instant (frame 4, 140 ms), not earlier.
        let at = events.first { if case .servicesDiscovered = $0.1 { true } else { false } }?.0
        #expect(at == 140_000_000)
    }

    @Test func aRecordedReadIsAnsweredWithTheRecordedValue() throws {
        var link = try Self.link()
        _ = link.connect(now: 0)
        _ = Self.run(&link, until: 100_000_000)
        var events = link.perform(.read(0x0015), now: 200_000_000).map { (200_000_000 as Int64, $0) }
        events += Self.run(&link, until: 1_000_000_000)
        let read = events.compactMap { if case .read(0x0015, let value, nil, let frame) = $0.1 { (value, frame, $0.0) } else { nil } }
        #expect(read.first?.0 == [0x07])
        #expect(read.first?.1 == 10)
        #expect(read.first?.2 == 280_000_000)
    }

    @Test func thePeripheralsRecordedDisconnectionArrivesAndEndsTheLink() throws {
        var link = try Self.link()
        let events = Self.subscribed(&link, subscribeAt: 200_000_000)
        let ended = events.compactMap { if case .disconnected(let reason, let byCentral, let frame) = $0.1 { ($0.0, reason, byCentral, frame) } else { nil } }
        #expect(ended.count == 1)
        #expect(ended.first?.0 == 4_000_000_000)
        #expect(ended.first?.1 == 0x13)
        #expect(ended.first?.2 == false)
        #expect(ended.first?.3 == 18)
    }

    struct DropFrame: VirtualLinkFaults {
        var frame: Int
        func deliveries(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> [Int64] { number == frame ? [] : [0] }
        func attError(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> UInt8? { nil }
        var linkLosses: [(atNs: Int64, reconnectAfterNs: Int64?)] { [] }
    }

    @Test func aDroppedNotificationIsNeverDelivered() throws {
        var link = try Self.link(faults: DropFrame(frame: 13))
        let notified = Self.notified(Self.subscribed(&link, subscribeAt: 200_000_000))
        #expect(notified.map(\.0) == [2_300_000_000])
        #expect(link.counts.lostToFaults == 1)
    }

    @Test func aLostResponseEndsTheLinkAfterATTsTransactionTimeout() throws {
        var link = try Self.link(faults: DropFrame(frame: 10), endsAsRecorded: false)
        _ = link.connect(now: 0)
        _ = Self.run(&link, until: 100_000_000)
        var events = link.perform(.read(0x0015), now: 200_000_000).map { (200_000_000 as Int64, $0) }
        events += Self.run(&link, until: 60_000_000_000)
        let ended = events.compactMap { if case .disconnected(let reason, _, _) = $0.1 { ($0.0, reason) } else { nil } }
        #expect(ended.first?.0 == 30_200_000_000)
        #expect(ended.first?.1 == 0x08)
    }

    @Test func anOperationWhileDisconnectedIsAMisuseNotAHang() throws {
        var link = try Self.link()
        let events = link.perform(.read(0x0015), now: 0)
        #expect(events.count == 1)
        if case .misuse = events.first {} else { Issue.record("expected a misuse, got \(events)") }
        #expect(link.nextDeadlineNs == nil)
    }

    @Test func aServiceDiscoveryResponseHoldsAsManyServicesAsTheMTUAllows() {
        let services = (0..<10).map { (i: Int) -> EmulatedDatabase.Service in
            let start = UInt16(1 + i * 3)
            return EmulatedDatabase.Service(startHandle: start, endHandle: start + 2, uuid: BluetoothUUID(UInt32(0x1800 + i)),
                                            isPrimary: true, characteristics: [])
        }
        let database = EmulatedDatabase(services: services)
        // (23 − 2) / 6 = 3 at the default MTU; (247 − 2) / 6 = 40 at 247.
        #expect(database.primaryServices(from: 1, through: 0xFFFF, mtu: 23).count == 3)
        #expect(database.primaryServices(from: 1, through: 0xFFFF, mtu: 247).count == 10)
    }

    @Test func aResponseNeverMixesUUIDSizes() {
        let database = EmulatedDatabase(services: [
            EmulatedDatabase.Service(startHandle: 1, endHandle: 5, uuid: BluetoothUUID(0x1800), isPrimary: true, characteristics: []),
            EmulatedDatabase.Service(startHandle: 6, endHandle: 9, uuid: BluetoothUUID("7e7e5e00-0000-4000-8000-00000000a001")!, isPrimary: true, characteristics: []),
        ])
        #expect(database.primaryServices(from: 1, through: 0xFFFF, mtu: 247).map(\.startHandle) == [1])
        #expect(database.primaryServices(from: 6, through: 0xFFFF, mtu: 247).map(\.startHandle) == [6])
    }

    @Test func tenThousandServicesAreDiscoveredWithoutATrap() throws {
        let services = (0..<10_000).map { (i: Int) -> EmulatedDatabase.Service in
            let start = UInt16(1 + i * 2)
            let uuid = BluetoothUUID(UInt32(0x2000 + i % 100))
            return EmulatedDatabase.Service(startHandle: start, endHandle: start + 1, uuid: uuid, isPrimary: true, characteristics: [])
        }
        let database = EmulatedDatabase(services: services)
        var next: UInt16 = 1
        var found = 0
        while true {
            let answer = database.primaryServices(from: next, through: 0xFFFF, mtu: 23)
            guard let last = answer.last else { break }
            found += answer.count
            guard last.endHandle < 0xFFFF else { break }
            next = last.endHandle + 1
        }
        #expect(found == 10_000)
    }
}

@Suite struct TwoWayCaptureTests {
    /// A capture that began inside the connection (no LE Connection Complete): the peripheral
    /// reads the phone's Device Name first, then the phone reads and subscribes to the peripheral's.
    static func capture() -> [CaptureFrame] {
        Frames.capture([
            (Frames.att(Frames.readRequest(0x0003), received: true), 0),
            (Frames.att(Frames.readResponse(Array("Phone".utf8)), received: false), 1_000_000),
            (Frames.att(Frames.readRequest(0x0010), received: false), 2_000_000),
            (Frames.att(Frames.readResponse([0x55]), received: true), 3_000_000),
            (Frames.att(Frames.writeRequest(0x0012, [0x01, 0x00]), received: false), 4_000_000),
            (Frames.att(Frames.writeResponse, received: true), 5_000_000),
            (Frames.att(Frames.notification(0x0011, [1, 2]), received: true), 6_000_000),
            (Frames.att(Frames.notification(0x0011, [3, 4]), received: true), 7_000_000),
        ])
    }

    @Test func theClientIsTheSideMostReadsWritesAndNotificationsSaySoNotTheFirstRequest() throws {
        let peripheral = try CaptureScanner.scan(frames: Self.capture(), linkType: .bluetoothHCIH4WithPHDR)
        #expect(peripheral.pdus.first { $0.frame == 3 }?.fromClient == true)
        #expect(peripheral.pdus.first { $0.frame == 1 }?.fromClient == false)
        let script = AnswerScript(peripheral.pdus)
        #expect(script.reads[0x0010]?.first?.value == [0x55])
        #expect(script.reads[0x0003] == nil)
    }
}

@Suite struct VirtualLinkBadInputTests {
    @Test func aServiceGroupEndingBeforeItStartsEndsDiscoveryInsteadOfLooping() throws {
        // A service at 0x0010 whose recorded group "ends" at 0x0005: the next request must still
        // start past 0x0010.
        let database = EmulatedDatabase(services: [
            EmulatedDatabase.Service(startHandle: 0x0010, endHandle: 0x0005, uuid: BluetoothUUID(0x180D), isPrimary: true, characteristics: []),
        ])
        var peripheral = RecordedPeripheral(pdus: [pdu(1, 0, client: true, 0x0A, 0x0010)])
        peripheral.connections = [RecordedConnection(ordinal: 0, frame: nil, timeNs: 0)]
        var plan = try EmulationPlan(peripheral: peripheral, file: "<test>")
        plan.database = database
        var link = VirtualPeripheralLink(plan: plan)
        _ = link.connect(now: 0)
        _ = link.advance(to: 1_000_000_000)
        var events = link.perform(.discoverServices(nil), now: 1_000_000_000)
        var steps = 0
        while let next = link.nextDeadlineNs, steps < 100 {
            events += link.advance(to: next)
            steps += 1
        }
        #expect(steps < 100)
        #expect(events.contains { if case .servicesDiscovered(let s, _) = $0 { s.count == 1 } else { false } })
    }

    @Test func aValueOfSixtyFourKilobytesIsServedWhole() throws {
        let value = (0..<65_536).map { UInt8(truncatingIfNeeded: $0) }
        var peripheral = RecordedPeripheral(pdus: [
            pdu(1, 0, client: true, 0x0A, 0x0010), pdu(2, 1, client: false, 0x0B, nil, value),
        ])
        peripheral.connections = [RecordedConnection(ordinal: 0, frame: nil, timeNs: 0)]
        peripheral.namedHandles = [0x0010: GATTHandleName(service: BluetoothUUID(0x180D), characteristic: BluetoothUUID(0x2A37))]
        var link = VirtualPeripheralLink(plan: try EmulationPlan(peripheral: peripheral, file: "<test>"))
        _ = link.connect(now: 0)
        _ = link.advance(to: 1_000_000_000)
        var events = link.perform(.read(0x0010), now: 1_000_000_000)
        while let next = link.nextDeadlineNs { events += link.advance(to: next) }
        #expect(events.contains { if case .read(0x0010, let v?, nil, 2) = $0 { v == value } else { false } })
    }

    static func connectedLink(_ pdus: [RecordedPDU]) throws -> VirtualPeripheralLink {
        var peripheral = RecordedPeripheral(pdus: pdus)
        peripheral.connections = [RecordedConnection(ordinal: 0, frame: nil, timeNs: 0)]
        peripheral.namedHandles = [0x0010: GATTHandleName(service: BluetoothUUID(0x180D), characteristic: BluetoothUUID(0x2A37))]
        var link = VirtualPeripheralLink(plan: try EmulationPlan(peripheral: peripheral, file: "<test>"))
        _ = link.connect(now: 0)
        _ = link.advance(to: 1_000_000_000)
        return link
    }

    @Test func aValueThatFillsTheResponseIsReadOnWithReadBlobAsRecorded() throws {
        let value = Array(0..<40) as [UInt8]
        var link = try Self.connectedLink([
            pdu(1, 0, client: true, 0x0A, 0x0010), pdu(2, 1, client: false, 0x0B, nil, Array(value[0..<22])),
            pdu(3, 2, client: true, 0x0C, 0x0010, [22, 0]), pdu(4, 3, client: false, 0x0D, nil, Array(value[22...])),
        ])
        var events = link.perform(.read(0x0010), now: 1_000_000_000)
        while let next = link.nextDeadlineNs { events += link.advance(to: next) }
        let matched = events.compactMap { if case .requestSent(_, let m?, _) = $0 { m.frame } else { nil } }
        #expect(matched == [1, 3])
        #expect(events.contains { if case .read(0x0010, let v?, nil, 4) = $0 { v == value } else { false } })
    }

    @Test func aValueLongerThanAWriteIsWrittenWithPrepareAndExecute() throws {
        var link = try Self.connectedLink([pdu(1, 0, client: true, 0x0A, 0x0010)])
        let value = Array(repeating: 0xAB, count: 30) as [UInt8]
        var events = link.perform(.write(0x0010, value, withResponse: true), now: 1_000_000_000)
        while let next = link.nextDeadlineNs { events += link.advance(to: next) }
        let sent = events.compactMap { if case .requestSent(let pdu, _, _) = $0 { pdu } else { nil } }
        #expect(sent.map(\.first) == [0x16, 0x16, 0x18])
        #expect(sent.first?.count == 5 + 18)
        #expect(events.contains { if case .written(0x0010, nil, _) = $0 { true } else { false } })
    }

    @Test func aStreamSampleRightAfterAWriteStaysWithItsSubscriptionAndANewHandleAnswersTheWrite() throws {
        // 0x0021 streams after its subscription; a write to 0x0030 at 1 s; 50 ms later a stream
        // sample and the command's answer on 0x0024.
        let peripheral = RecordedPeripheral(pdus: [
            pdu(1, 0, client: true, 0x12, 0x0022, [0x01, 0x00]), pdu(2, 5, client: false, 0x13, nil),
            pdu(3, 10, client: true, 0x12, 0x0025, [0x01, 0x00]), pdu(4, 15, client: false, 0x13, nil),
            pdu(5, 100, client: false, 0x1B, 0x0021, [1]),
            pdu(6, 1_000, client: true, 0x12, 0x0030, [0x07]), pdu(7, 1_005, client: false, 0x13, nil),
            pdu(8, 1_050, client: false, 0x1B, 0x0021, [2]),
            pdu(9, 1_060, client: false, 0x1B, 0x0024, [0xAA]),
        ])
        let plan = try EmulationPlan(peripheral: peripheral, file: "<test>")
        let exchanges = RecordedExchanges(peripheral, database: plan.database, script: plan.script)
        #expect(exchanges.notifications[.subscription(cccd: 0x0022, occurrence: 0)]?.map(\.frame) == [5, 8])
        #expect(exchanges.notifications[.write(0)]?.map(\.frame) == [9])
    }
}
