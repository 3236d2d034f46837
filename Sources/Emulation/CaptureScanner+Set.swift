import CaptureKit
import CaptureSet
import Dissectors

// Kept apart from the frame scanner: the fuzz target (CI/fuzz/FuzzEmulation.swift) builds the
// scanner without the capture-set loader and its YAML and crypto dependencies.
extension CaptureScanner {
    /// Scans the set at `setPath`. `verify` checks the capture's recorded SHA-256 first.
    public static func scan(setPath: String, verify: Bool = true) throws(EmulationError) -> RecordedPeripheral {
        let loaded: LoadedCaptureSet
        do {
            loaded = try CaptureSetDirectory.load(setPath, verify: verify)
        } catch {
            throw .cannotLoad(set: setPath, reason: "\(error)")
        }
        let named = GATTHandleName.table(loaded.manifest.gattHandles.map(\.nameTexts))
        let reader: any CaptureReader
        do {
            reader = try CaptureFile.open(path: loaded.capturePath)
        } catch {
            throw .unreadableCapture(file: loaded.capturePath, frame: 0, reason: "\(error)")
        }
        var scan = Scan()
        var lastFrame = 0
        while true {
            let frame: CaptureFrame?
            do {
                frame = try reader.next()
            } catch {
                throw .unreadableCapture(file: loaded.capturePath, frame: lastFrame, reason: "\(error)")
            }
            guard let frame else { break }
            lastFrame = frame.number
            if scan.captureStartNs == nil { scan.captureStartNs = frame.timestampNs }
            guard frame.interfaceIndex < reader.interfaces.count else { continue }
            let linkType = reader.interfaces[frame.interfaceIndex].linkType
            guard bluetoothLinkTypes.contains(linkType) else { continue }
            scan.add(frame, linkType: linkType)
        }
        guard scan.bluetoothFrames > 0 else {
            throw .noBluetoothInterface(file: loaded.capturePath, linkTypes: reader.interfaces.map(\.linkType.rawValue))
        }
        guard !scan.records.isEmpty else { throw .noGATTTraffic(file: loaded.capturePath, frames: scan.bluetoothFrames) }
        var peripheral = scan.finish()
        peripheral.namedHandles = named
        return peripheral
    }

}

extension EmulationPlan {
    /// Scans the set at `setPath` and builds the plan.
    public init(setPath: String, verify: Bool = true, useResponders: Bool = true) throws(EmulationError) {
        let peripheral = try CaptureScanner.scan(setPath: setPath, verify: verify)
        try self.init(peripheral: peripheral, file: setPath, useResponders: useResponders)
    }
}
