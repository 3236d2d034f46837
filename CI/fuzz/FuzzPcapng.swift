// libFuzzer entry for PcapngReader: compiled together with Sources/CaptureKit/*.swift by CI/fuzz/run.
// Errors are expected answers to bad bytes; a trap, sanitizer report or hang is a finding.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The first byte picks a buffer size, so records straddle refills as well as fit whole.
    let bufferSize = bytes.first.map { Int($0 % 32) + 1 } ?? 1
    for fast in [false, true] {
        do {
            let reader = try PcapngReader(input: ByteInput(bytes: bytes, name: "<fuzz>", bufferSize: fast ? bufferSize : 4096))
            if fast {
                var sum = 0
                while try reader.withNextFrame({ view in sum &+= view.data.count &+ Int(truncatingIfNeeded: view.timestampNs) }) {}
                _ = reader.interfaces.count &+ sum
            } else {
                while let frame = try reader.next() { _ = frame.data.count }
            }
            _ = reader.warnings.map(\.description)
        } catch {
            _ = String(describing: error)
        }
    }
    return 0
}
