import CaptureKit
import Foundation
import Testing

@testable import LiveCapture

@Suite struct BlueZMonitorTests {
    /// This machine's kernel has no Bluetooth; the success path needs one and cannot run here.
    @Test func kernelWithoutBluetoothGivesAPlainMessage() throws {
        let probe = socket(31, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1)
        let probeErrno = errno
        if probe >= 0 { close(probe) }
        try #require(probe < 0 && probeErrno == EAFNOSUPPORT, "this kernel has Bluetooth; the unsupported-kernel path cannot be checked here")
        do {
            _ = try BlueZMonitorSource()
            Issue.record("opening the monitor channel succeeded on a kernel without Bluetooth")
        } catch {
            #expect(error.kind == .bluetoothUnsupported)
            #expect(error.description.contains("this kernel has no Bluetooth support (AF_BLUETOOTH: EAFNOSUPPORT)"))
            #expect(error.hint.contains("H4 tap"))
            #expect(error.hint.contains("btsnoop"))
        }
    }

    @Test func permissionErrorsSayWhatCapabilityIsNeeded() {
        let error = BlueZMonitorSource.error(step: "bind(HCI_CHANNEL_MONITOR)", errno: EPERM)
        #expect(error.kind == .permissionDenied)
        #expect(error.hint.contains("CAP_NET_RAW"))
    }

    @Test func monitorRecordBecomesALinkType254Frame() throws {
        // opcode 3 (event), index 1, length 3, payload: Command Complete header bytes.
        let record: [UInt8] = [0x03, 0x00, 0x01, 0x00, 0x03, 0x00, 0x0e, 0x01, 0x05]
        var out = [UInt8](repeating: 0, count: 64)
        let length = try record.withUnsafeBytes { input in
            try out.withUnsafeMutableBytes { try BlueZMonitorSource.convertMonitorRecord(input, into: $0) }
        }
        #expect(Array(out[0..<length]) == [0x00, 0x01, 0x00, 0x03, 0x0e, 0x01, 0x05])
    }

    @Test func monitorRecordWithEmptyPayloadKeepsItsHeader() throws {
        let record: [UInt8] = [0x09, 0x00, 0x00, 0x02, 0x00, 0x00]
        var out = [UInt8](repeating: 0, count: 8)
        let length = try record.withUnsafeBytes { input in
            try out.withUnsafeMutableBytes { try BlueZMonitorSource.convertMonitorRecord(input, into: $0) }
        }
        #expect(Array(out[0..<length]) == [0x02, 0x00, 0x00, 0x09])
    }

    @Test(arguments: [[UInt8](), [0x03, 0x00, 0x01], [0x03, 0x00, 0x01, 0x00, 0x05, 0x00, 0x0e]])
    func monitorRecordWhoseLengthDisagreesIsRefused(record: [UInt8]) {
        var out = [UInt8](repeating: 0, count: 64)
        let result = record.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                Result { () throws(LiveCaptureError) -> Int in try BlueZMonitorSource.convertMonitorRecord(input, into: output) }
            }
        }
        if case .failure(let error) = result {
            #expect(error.kind == .readFailed)
        } else {
            Issue.record("a bad record was accepted")
        }
    }

    @Test func timestampControlMessageIsRead() {
        // struct cmsghdr (len 32, SOL_SOCKET, SCM_TIMESTAMP) + struct timeval {5 s, 7 µs}.
        var control = [UInt8](repeating: 0, count: 32)
        func put<T>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value) { control.replaceSubrange(offset..<offset + $0.count, with: $0) }
        }
        put(Int(32), at: 0)
        put(Int32(SOL_SOCKET), at: 8)
        put(Int32(29), at: 12)
        put(Int(5), at: 16)
        put(Int(7), at: 24)
        let ns = control.withUnsafeBytes { BlueZMonitorSource.timestamp(fromControl: $0) }
        #expect(ns == 5_000_007_000)
    }
}
