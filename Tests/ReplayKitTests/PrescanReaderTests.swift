import CaptureKit
import CaptureSet
import Foundation
import ReplayKit
import Testing

/// The walk a responder's prescan makes before replay (``PrescanReader``).
@Suite struct PrescanReaderTests {
    /// A pcapng file of two interfaces (0: H4 with direction, 1: `api-calls`) and four frames,
    /// the first at 5 s on the capture's clock.
    func capture() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("prescan-\(UUID().uuidString).pcapng").path
        let writer = try PcapngWriter(path: path)
        _ = try writer.addInterface(CaptureInterface(linkType: .bluetoothHCIH4WithPHDR))
        _ = try writer.addInterface(CaptureInterface(linkType: .user0))
        let record = Array(#"{"core":"demo","call":"send"}"#.utf8)
        let hci: [UInt8] = [0, 0, 0, 0, 0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
        try writer.write(CaptureFrame(number: 1, interfaceIndex: 1, timestampNs: 5_000_000_000, originalLength: record.count, data: record))
        try writer.write(CaptureFrame(number: 2, interfaceIndex: 0, timestampNs: 5_000_000_250, originalLength: hci.count, data: hci))
        try writer.write(CaptureFrame(number: 3, interfaceIndex: 1, timestampNs: 6_000_000_000, originalLength: record.count, data: record))
        try writer.write(CaptureFrame(number: 4, interfaceIndex: 0, timestampNs: 6_000_000_500, originalLength: hci.count, data: hci))
        try writer.close()
        return path
    }

    @Test func framesCarryTheirVirtualTimeFromTheCapturesFirstFrame() throws {
        let path = try capture()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var walk = try PrescanReader(capturePath: path, interfaces: [ManifestInterface(index: 1, linkType: .user0, role: .apiCalls)])
        var seen: [(Int, Int64, Bool, Bool)] = []
        while let frame = try walk.next() {
            seen.append((frame.number, frame.timeNs, frame.described?.role == .apiCalls, frame.isBLE()))
        }
        #expect(seen.map(\.0) == [1, 2, 3, 4])
        #expect(seen.map(\.1) == [0, 250, 1_000_000_000, 1_000_000_500])
        #expect(seen.map(\.2) == [true, false, true, false])
        #expect(seen.map(\.3) == [false, true, false, true])
    }

    @Test func anInterfaceIsBLEByItsDescribedRoleElseByItsLinkType() {
        let h4 = LinkType.bluetoothHCIH4WithPHDR
        #expect(PrescanReader.Frame.isBLE(linkType: h4, described: nil))
        #expect(!PrescanReader.Frame.isBLE(linkType: .ethernet, described: nil))
        #expect(!PrescanReader.Frame.isBLE(linkType: h4, described: ManifestInterface(index: 0, linkType: h4, role: .apiCalls)))
        #expect(PrescanReader.Frame.isBLE(linkType: .ethernet, described: ManifestInterface(index: 0, linkType: .ethernet, role: .bleHCI)))
    }

    @Test func aBLEInterfaceGivenToAnotherCoreIsNotThisCores() {
        let h4 = LinkType.bluetoothHCIH4WithPHDR
        let session = ManifestInterface(index: 0, linkType: h4, role: .bleHCI, core: "session")
        #expect(!PrescanReader.Frame.isBLE(linkType: h4, described: session, forCore: "messaging"))
        #expect(PrescanReader.Frame.isBLE(linkType: h4, described: session, forCore: "session"))
        #expect(PrescanReader.Frame.isBLE(linkType: h4, described: session))
        #expect(PrescanReader.Frame.isBLE(linkType: h4, described: ManifestInterface(index: 0, linkType: h4, role: .bleHCI), forCore: "messaging"))
    }

    @Test func dissectionUsesOneDissectorPerInterfaceMadeOnce() throws {
        let path = try capture()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var walk = try PrescanReader(capturePath: path, interfaces: [])
        var made = 0
        var dissected = 0
        while let frame = try walk.next() {
            guard frame.isBLE() else { continue }
            _ = walk.dissect(frame) { _ in made += 1 }
            dissected += 1
        }
        #expect(dissected == 2)
        #expect(made == 1)
    }
}
