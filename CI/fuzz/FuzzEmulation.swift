// libFuzzer entry for `tether emulate`'s capture scanner (Sources/Emulation): compiled by CI/fuzz/run
// with Sources/Emulation/*.swift (less the capture-set loader, CaptureScanner+Set.swift) against
// CaptureKit, MQTT and Dissectors built as modules. The first input byte picks the HCI link type;
// the rest is frames, each a u16 LE length then that many bytes (cut short at the end), 1 ms apart.
// The scanner reads them (ATT, SMP, advertising, links), then the plan is built and an emulator
// plays every recorded request back: every answer is an error or a value, never a trap.

import CaptureKit
import Dissectors

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let linkTypes: [LinkType] = [.bluetoothHCIH4WithPHDR, .bluetoothHCIH4, .bluetoothLinuxMonitor]
    let linkType = linkTypes[Int(bytes[0]) % linkTypes.count]
    var frames: [CaptureFrame] = []
    var offset = 1
    while offset + 2 <= bytes.count {
        let length = min(Int(bytes[offset]) | Int(bytes[offset + 1]) << 8, bytes.count - offset - 2)
        let frame = Array(bytes[(offset + 2)..<(offset + 2 + length)])
        frames.append(CaptureFrame(number: frames.count + 1, interfaceIndex: 0, timestampNs: Int64(frames.count) * 1_000_000,
                                   originalLength: frame.count, data: frame))
        offset += 2 + length
    }
    let peripheral: RecordedPeripheral
    do {
        peripheral = try CaptureScanner.scan(frames: frames, linkType: linkType, name: "<fuzz>")
    } catch {
        _ = error.description
        return 0
    }
    _ = peripheral.initiatives.count
    _ = peripheral.pairings.map { ($0.kind, $0.associationModel) }
    let plan: EmulationPlan
    do {
        plan = try EmulationPlan(peripheral: peripheral, file: "<fuzz>")
    } catch {
        _ = error.description
        return 0
    }
    _ = plan.summary
    _ = plan.notes
    _ = plan.advertisedServices
    _ = plan.staticAddress
    var emulator = Emulator(script: plan.script, database: plan.database, policy: .attError, sessionLink: plan.sessionLink,
                            initiatives: peripheral.initiatives)
    for _ in 0..<2 {
        _ = emulator.connect()
        _ = emulator.initiative
        for pdu in peripheral.pdus where pdu.fromClient {
            guard let handle = pdu.handle else { continue }
            switch pdu.opcode {
            case 0x12, 0x52: _ = emulator.write(handle: handle, value: pdu.value)
            case 0x0A: _ = emulator.read(handle: handle)
            case 0x0C: _ = emulator.read(handle: handle, offset: pdu.value.count >= 2 ? Int(pdu.value[0]) | Int(pdu.value[1]) << 8 : 0)
            default: break
            }
        }
    }
    return 0
}
