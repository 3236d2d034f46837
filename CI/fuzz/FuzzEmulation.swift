// libFuzzer entry for `tether emulate`'s capture scanner (Sources/Emulation): compiled by CI/fuzz/run
// with Sources/Emulation/*.swift (less the capture-set loader, CaptureScanner+Set.swift) against
// CaptureKit, MQTT and Dissectors built as modules. The first input byte picks the HCI link type;
// the rest is frames, each a u16 LE length then that many bytes (cut short at the end), 1 ms apart.
// The scanner reads them (ATT, SMP, advertising, links), then the plan is built and an emulator
// plays every recorded request back: every answer is an error or a value, never a trap. Then the
// same peripheral on the virtual link (Sources/Emulation/VirtualLink) is scanned, connected to,
// discovered, read, written and subscribed to, twice, and run to the end of its clock.

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
    var link = VirtualPeripheralLink(plan: plan)
    func drain(_ link: inout VirtualPeripheralLink, until limit: Int64) {
        // Bounded: a fuzzed capture must not keep the fuzzer busy forever.
        var steps = 0
        while let next = link.nextDeadlineNs, next <= limit, steps < 100_000 {
            _ = link.advance(to: next)
            steps += 1
        }
    }
    var now: Int64 = 0
    _ = link.startScan(services: nil, allowDuplicates: true, now: now)
    for _ in 0..<2 {
        _ = link.connect(now: now)
        drain(&link, until: now + 120_000_000_000)
        now = max(now, link.nextDeadlineNs ?? now)
        var operations: [VirtualPeripheralLink.Operation] = [.discoverServices(nil), .discoverServices([BluetoothUUID(0x180D)])]
        for service in plan.database.services {
            operations.append(.discoverCharacteristics(service: service.startHandle, nil))
            operations.append(.discoverIncludedServices(service: service.startHandle))
            for characteristic in service.characteristics {
                operations += [.discoverDescriptors(characteristic: characteristic.valueHandle), .setNotify(characteristic.valueHandle, true)]
            }
        }
        for pdu in peripheral.pdus where pdu.fromClient {
            guard let handle = pdu.handle else { continue }
            switch pdu.opcode {
            case 0x12, 0x52: operations.append(.write(handle, pdu.value, withResponse: pdu.opcode == 0x12))
            case 0x0A, 0x0C: operations.append(.read(handle))
            default: break
            }
        }
        for operation in operations.prefix(2_000) { _ = link.perform(operation, now: now) }
        _ = link.readRSSI(now: now)
        drain(&link, until: .max)
        _ = link.cancelConnection(now: now)
        drain(&link, until: .max)
    }
    return 0
}
