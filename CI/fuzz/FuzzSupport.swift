// Shared by every libFuzzer entry in CI/fuzz: compiled with Sources/CaptureKit/*.swift and one
// Fuzz<Reader>.swift by CI/fuzz/run. Errors are expected answers to bad bytes; a trap, sanitizer
// report or hang is a finding.

/// Reads every frame of `data` with the reader `open` makes, through `next()` and through
/// `withNextFrame` with a small buffer picked by the first byte, so records straddle refills as
/// well as fit whole.
func exerciseReader(_ data: UnsafePointer<UInt8>, _ size: Int, open: (ByteInput) throws(CaptureError) -> any CaptureReader) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let bufferSize = bytes.first.map { Int($0 % 32) + 1 } ?? 1
    for fast in [false, true] {
        do {
            let reader = try open(ByteInput(bytes: bytes, name: "<fuzz>", bufferSize: fast ? bufferSize : 4096))
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
