import CaptureKit
import Foundation
import Testing

@testable import LiveCapture

/// A link type 254 source that hands out fixed frames once, then returns.
///
/// `@unchecked Sendable`: immutable after `init`; its stored properties, `frames` and `interface`,
/// are `let`s, and every method only reads them.
final class ScriptedMonitorSource: LiveSource, @unchecked Sendable {
    let frames: [[UInt8]]
    let interface = CaptureInterface(linkType: .bluetoothLinuxMonitor, name: BlueZMonitorSource.deviceName)
    var idleInterval: Duration { .milliseconds(100) }
    var notices: [String] { [] }

    init(frames: [[UInt8]]) { self.frames = frames }

    func run(_ handler: (LiveSourceEvent) throws -> Void) throws {
        for (index, frame) in frames.enumerated() {
            try frame.withUnsafeBytes { data in
                try handler(.frame(LiveFrameView(timestampNs: Int64(index), originalLength: data.count, data: data)))
            }
        }
    }
    func stop() {}
    func statistics() -> InterfaceStatistics? { nil }
    func close() {}
}

@Suite struct MonitorAdapterFilterTests {
    /// Monitor frames: adapter index (BE), opcode (BE), payload.
    static let adapter0Event: [UInt8] = [0x00, 0x00, 0x00, 0x03, 0x0E, 0x01]
    static let adapter1Event: [UInt8] = [0x00, 0x01, 0x00, 0x03, 0x0E, 0x02]
    static let systemNote: [UInt8] = [0xFF, 0xFF, 0x00, 0x0C, 0x41]
    static let tooShort: [UInt8] = [0x00]

    func passed(adapter: UInt16) throws -> [[UInt8]] {
        let filter = MonitorAdapterFilter(ScriptedMonitorSource(frames: [Self.adapter0Event, Self.adapter1Event, Self.systemNote, Self.tooShort]), adapter: adapter)
        var kept: [[UInt8]] = []
        try filter.run { event in
            if case .frame(let frame) = event { kept.append(Array(frame.data)) }
        }
        return kept
    }

    @Test func keepsItsAdapterAndRecordsOfNoAdapter() throws {
        #expect(try passed(adapter: 0) == [Self.adapter0Event, Self.systemNote, Self.tooShort])
        #expect(try passed(adapter: 1) == [Self.adapter1Event, Self.systemNote, Self.tooShort])
    }

    @Test func adapterNamesGiveTheirIndex() {
        #expect(MonitorAdapterFilter.adapterIndex("hci0") == 0)
        #expect(MonitorAdapterFilter.adapterIndex("hci12") == 12)
        #expect(MonitorAdapterFilter.adapterIndex("hci") == nil)
        #expect(MonitorAdapterFilter.adapterIndex("hcix") == nil)
        #expect(MonitorAdapterFilter.adapterIndex("eth0") == nil)
        #expect(MonitorAdapterFilter.adapterIndex("hci99999") == nil)
    }

    @Test func theInterfaceSaysWhichAdapterItHolds() {
        let filter = MonitorAdapterFilter(ScriptedMonitorSource(frames: []), adapter: 2)
        #expect(filter.interface.linkType == .bluetoothLinuxMonitor)
        #expect(filter.interface.description?.contains("hci2") == true)
    }
}
