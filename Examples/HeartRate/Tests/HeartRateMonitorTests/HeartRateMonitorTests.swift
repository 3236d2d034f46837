#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import TetherCoreBluetooth
#endif
import Foundation
import HeartRateMonitor
import Testing
import TetherTesting

// HeartRateMonitor, an app's own CoreBluetooth class, against the strap recordings of this
// package: TetherTesting replays the recorded peripheral on a virtual clock and the monitor's
// CBCentralManager is bound to it. The expected values come from an independent source: each
// set's committed baseline, written by the heart_rate core from the same capture. `swift test`
// runs from Examples/HeartRate, so the sets are at Captures/.

#if canImport(CoreBluetooth)
/// On Apple platforms the monitor imports the real CoreBluetooth, which no recording can drive.
let monitorIsReplayed = false
#else
/// Elsewhere it imports TetherCoreBluetooth, which a ReplaySession drives.
let monitorIsReplayed = true
#endif

@Suite(.enabled(if: monitorIsReplayed, "HeartRateMonitor uses the real CoreBluetooth on this platform"))
struct HeartRateMonitorReplayTests {
    @Test func receivesExactlyTheRecordedHeartRatesAtTheirRecordedInstants() throws {
        let baseline = try baselineMeasurements(of: "hr-clean")
        try #require(baseline.count == 15)
        let run = try replay("hr-clean")
        #expect(run.monitor.readings.map(\.bpm) == baseline.map(\.heartRate), "\(run.session.report)")
        #expect(run.instants == baseline.map(\.timeNs))
        #expect(run.monitor.errors.isEmpty, "\(run.monitor.errors)")
        #expect(run.session.passed, "\(run.session.report)")
    }

    @Test func readingsCarryTheRecordedRRIntervalsEnergyExpendedAndContact() throws {
        let baseline = try baselineMeasurements(of: "hr-clean")
        let run = try replay("hr-clean")
        // n/1024 is exact in a Double, so seconds compare exactly with the recorded counts.
        let expected = baseline.map {
            HeartRateMonitor.Reading(bpm: $0.heartRate, rrIntervals: $0.rrIntervals.map { Double($0) / 1024 },
                                     energyExpended: $0.energyExpended, sensorContact: $0.sensorContact)
        }
        #expect(run.monitor.readings == expected)
        #expect(run.monitor.malformedMeasurements.isEmpty)
    }

    @Test func bodySensorLocationReadsChest() throws {
        let run = try replay("hr-clean")
        #expect(run.monitor.bodySensorLocation == "chest", "\(run.monitor.errors)\n\(run.session.report)")
        #expect(run.monitor.errors.isEmpty, "\(run.monitor.errors)")
    }

    @Test func twoDroppedNotificationsAreExactlyTheTwoReadingsMissed() throws {
        // The notification frames come from a clean run of the same set, so the test does not
        // hard-code frame numbers.
        let clean = try replay("hr-clean")
        let notifications = clean.session.events(core: "central", named: "notification")
        try #require(notifications.count == 15, "\(clean.session.report)")
        try #require(clean.monitor.readings.count == notifications.count)
        let droppedIndices = [notifications.count / 3, 2 * notifications.count / 3]
        let droppedFrames = droppedIndices.compactMap { frameNumber(of: notifications[$0]) }
        try #require(droppedFrames.count == 2, "notification events without a frame: \(notifications)")

        let faulty = try replay("hr-clean", faults: droppedFrames.map { "drop:frame=\($0)" })

        let kept = notifications.indices.filter { !droppedIndices.contains($0) }
        #expect(faulty.instants == kept.map { notifications[$0].timeNs }, "\(faulty.session.report)")
        #expect(faulty.monitor.readings == kept.map { clean.monitor.readings[$0] })
        #expect(faulty.session.events(core: "faults", named: "fault_injected").count == 2)
        #expect(faulty.monitor.errors.isEmpty, "\(faulty.monitor.errors)")
        #expect(faulty.session.passed, "\(faulty.session.report)")
    }

    @Test func skinContactIsLostThenRegained() throws {
        let baseline = try baselineMeasurements(of: "hr-contact-lost")
        let run = try replay("hr-contact-lost")
        let contacts = run.monitor.readings.map(\.sensorContact)
        #expect(contacts == baseline.map(\.sensorContact), "\(run.session.report)")
        // The set's manifest: contact lost once, then regained once, in that order.
        var changes: [HeartRateMonitor.SensorContact] = []
        for contact in contacts where changes.last != contact { changes.append(contact) }
        #expect(changes == [.detected, .notDetected, .detected])
        #expect(run.monitor.errors.isEmpty, "\(run.monitor.errors)")
    }

    @Test func nothingArrivesAfterTheLastReadingOfASilentStrap() throws {
        let baseline = try baselineMeasurements(of: "hr-silent")
        try #require(baseline.count == 3)
        let run = try replay("hr-silent")
        #expect(run.monitor.readings.count == baseline.count, "\(run.session.report)")
        #expect(run.instants == baseline.map(\.timeNs))
        // The replay went on through the strap's recorded 10 s of silence: nothing was missed
        // by stopping early.
        let last = try #require(baseline.last)
        #expect(run.session.now >= .nanoseconds(last.timeNs) + .seconds(10), "\(run.session.report)")
        #expect(run.monitor.errors.isEmpty, "\(run.monitor.errors)")
    }

    @Test func resettingEnergyExpendedIsAcknowledgedOnce() throws {
        // The recorded phone reset it between the fifth and sixth measurements; so does this one.
        let run = try replay("hr-clean") { monitor in
            if monitor.readings.count == 5 { monitor.resetEnergyExpended() }
        }
        #expect(run.monitor.energyExpendedResets == 1, "\(run.monitor.errors)\n\(run.session.report)")
        #expect(run.monitor.errors.isEmpty, "\(run.monitor.errors)")
    }

    @Test func twoRunsOfTheSameTestWriteByteIdenticalTraces() throws {
        let first = try replay("hr-clean")
        let second = try replay("hr-clean")
        #expect(!first.session.traceJSONLines.isEmpty)
        #expect(first.session.traceJSONLines == second.session.traceJSONLines)
    }

    @Test func aLinkDropAtFiveSecondsIsAConnectionTimeoutAndEndsTheReadings() throws {
        let baseline = try baselineMeasurements(of: "hr-clean")
        let run = try replay("hr-clean", faults: ["disconnect:at=5s"])
        try #require(run.monitor.disconnections.count == 1, "\(run.session.report)")
        let error = try #require(run.monitor.disconnections[0], "didDisconnectPeripheral came without an error")
        #expect((error as? CBError)?.code == .connectionTimeout, "\(error)")
        let fiveSeconds: Int64 = 5_000_000_000
        #expect(run.instants.allSatisfy { $0 < fiveSeconds }, "\(run.instants)")
        #expect(run.instants == baseline.map(\.timeNs).filter { $0 < fiveSeconds })
        var endedDisconnected = false
        if case .disconnected = run.monitor.state { endedDisconnected = true }
        #expect(endedDisconnected, "\(run.monitor.state)")
        #expect(run.session.passed, "\(run.session.report)")
    }
}

/// The parser alone, on every platform: the recordings hold no malformed value.
struct HeartRateMeasurementParsingTests {
    @Test func everyFlaggedFieldIsDecoded() {
        // Flags 0x1E: contact supported and detected, Energy Expended and one RR interval present.
        let reading = HeartRateMonitor.Reading(measurement: Data([0x1E, 0x48, 0x34, 0x12, 0x00, 0x04]))
        #expect(reading == HeartRateMonitor.Reading(bpm: 72, rrIntervals: [1.0], energyExpended: 0x1234,
                                                    sensorContact: .detected))
    }

    @Test(arguments: [
        [],                                 // no flags byte
        [0x01, 0x48],                       // a UInt16 heart rate cut to one byte
        [0x08, 0x48, 0x34],                 // Energy Expended cut to one byte
        [0x10, 0x48],                       // the RR flag with no interval
        [0x10, 0x48, 0x00, 0x04, 0x01],     // an odd byte after the RR intervals
    ] as [[UInt8]])
    func aShortMeasurementIsMalformedNotATrap(_ bytes: [UInt8]) {
        #expect(HeartRateMonitor.Reading(measurement: Data(bytes)) == nil)
    }
}

// MARK: helpers

/// One replay of a set with a freshly started monitor.
struct MonitorRun {
    let session: ReplaySession
    let monitor: HeartRateMonitor
    /// The session's virtual instant at each reading, in nanoseconds since the capture's first
    /// frame, taken inside `onReading`: when the app saw it.
    let instants: [Int64]
}

/// Replays `Captures/<set>` with `faults`, a new HeartRateMonitor started before the run;
/// `onReading` runs after each reading, with the monitor, inside the session's callback.
func replay(_ set: String, faults: [String] = [], onReading: ((HeartRateMonitor) -> Void)? = nil) throws -> MonitorRun {
    let session = try ReplaySession(replayingPeripheralOf: "Captures/\(set)", faults: faults)
    // Bound before the monitor creates its CBCentralManager in start().
    session.makeCurrent()
    let monitor = HeartRateMonitor()
    var instants: [Int64] = []
    // unowned: the closure is stored on the monitor.
    monitor.onReading = { [unowned monitor] _ in
        instants.append(nanoseconds(session.now))
        onReading?(monitor)
    }
    monitor.start()
    try session.run()
    return MonitorRun(session: session, monitor: monitor, instants: instants)
}

/// A measurement event of a committed baseline (`baseline/heart_rate.jsonl`).
struct BaselineMeasurement {
    let timeNs: Int64
    let heartRate: Int
    /// In 1/1024 s, as sent.
    let rrIntervals: [Int]
    let energyExpended: Int?
    let sensorContact: HeartRateMonitor.SensorContact
}

/// The `measurement` events of a set's heart_rate baseline, in order, read with Foundation alone.
func baselineMeasurements(of set: String) throws -> [BaselineMeasurement] {
    let path = "Captures/\(set)/baseline/heart_rate.jsonl"
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let contacts: [String: HeartRateMonitor.SensorContact] = [
        "detected": .detected, "not_detected": .notDetected, "not_supported": .notSupported,
    ]
    var measurements: [BaselineMeasurement] = []
    for line in text.split(separator: "\n") {
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        guard let record = object as? [String: Any], record["event"] as? String == "measurement" else { continue }
        let timeNs = try #require(record["t_ns"] as? Int, "\(path): \(line)")
        let heartRate = try #require(record["heart_rate"] as? Int, "\(path): \(line)")
        // The core leaves sensor_contact out when the strap does not report it.
        let contactName = record["sensor_contact"] as? String ?? "not_supported"
        let contact = try #require(contacts[contactName], "\(path): sensor_contact \(contactName)")
        measurements.append(BaselineMeasurement(
            timeNs: Int64(timeNs),
            heartRate: heartRate,
            rrIntervals: (record["rr_intervals"] as? [Any] ?? []).compactMap { $0 as? Int },
            energyExpended: record["energy_expended"] as? Int,
            sensorContact: contact))
    }
    return measurements
}

/// The capture frame a trace event names (`frame`), if any.
func frameNumber(of event: TraceEvent) -> Int64? {
    if case .int(let frame)? = event.field("frame") { return frame }
    return nil
}

/// A duration as whole nanoseconds (the trace's and the baseline's unit).
func nanoseconds(_ duration: Duration) -> Int64 {
    let parts = duration.components
    return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
}
