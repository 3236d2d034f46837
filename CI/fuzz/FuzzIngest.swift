// libFuzzer entry for IngestCore's datagram reader (the Motion plugin JSON, base64 payloads and
// all): compiled with Sources/IngestCore/*.swift by CI/fuzz/run. The input is split into
// datagrams at 0xFF bytes (never valid UTF-8, so never inside a well-formed datagram), each fed
// at a later instant, then the core is timed out and finished: every path must return events.
// Each datagram also goes through a DatagramParser that keeps its state across the input's
// datagrams and through the general reader alone: the fast paths must read it exactly as the
// general reader does, or the target traps. The points the chunks hold (packed) must be the
// points reported one by one, and the input read as a packed-points buffer (what the store reads
// back from its file) must give a value or an error, never a trap.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var core = IngestCore()
    let source = DatagramSource(address: "127.0.0.1", port: 50_000)
    var now = Duration.zero
    var events = 0
    var parser = DatagramParser()
    var reported = PackedDataPoints()
    var chunked: [DataPoint] = []
    func take(_ made: [IngestEvent]) {
        events &+= made.count
        for event in made {
            switch event {
            case .dataPoint(let point): reported.append(point)
            case .chunkReady(let chunk):
                guard chunk.packedPoints.count == chunk.dataPointCount else {
                    fatalError("a chunk packed \(chunk.packedPoints.count) points and counts \(chunk.dataPointCount)")
                }
                chunked += chunk.dataPoints
            default: break
            }
        }
    }
    for datagram in bytes.split(separator: 0xFF, omittingEmptySubsequences: false) {
        now += .milliseconds(10)
        let datagram = Array(datagram)
        take(core.receive(datagram, from: source, now: now))
        checkFastPaths(datagram, &parser)
    }
    take(core.handleTimeout(now: now + .seconds(60)))
    take(core.finish(now: now + .seconds(61)))
    // Compared packed: a NaN value is not equal to itself, its bytes are.
    guard PackedDataPoints(chunked) == reported else {
        fatalError("the chunks hold other points than were reported")
    }
    checkPackedReader(Array(bytes))
    return events < 0 ? 1 : 0
}

private func checkPackedReader(_ bytes: [UInt8]) {
    do {
        let packed = try PackedDataPoints(validating: bytes)
        var points: [DataPoint] = []
        do {
            try packed.decode(source: DatagramSource(address: "::1", port: 1), into: &points)
        } catch {
            return  // a payload that does not fit its type: an error, as it should be
        }
        guard points.count == packed.count else {
            fatalError("packed points \(bytes): \(packed.count) counted, \(points.count) read")
        }
        // Packing what was read and reading it again gives the same buffer (either format in,
        // the current one out). Compared packed: a NaN value is not equal to itself.
        let repacked = PackedDataPoints(points)
        do {
            let again = try PackedDataPoints(validating: repacked.bytes).dataPoints(source: DatagramSource(address: "::1", port: 1))
            guard PackedDataPoints(again) == repacked else {
                fatalError("packed points \(bytes) read back differently after repacking")
            }
        } catch {
            fatalError("packed points \(bytes) repacked to a buffer that does not read: \(error)")
        }
    } catch {
        return  // refused with an offset, as it should be
    }
}

private func checkFastPaths(_ datagram: [UInt8], _ parser: inout DatagramParser) {
    datagram.withUnsafeBytes { raw in
        var texts = EntryTextCache()
        let general: Result<MotionMessage, MotionMessage.Rejection>
        do throws(MotionMessage.Rejection) {
            general = .success(try MotionMessage.parseWithGeneralReader(raw, texts: &texts))
        } catch {
            general = .failure(error)
        }
        let fast: Result<MotionMessage, MotionMessage.Rejection>
        do throws(MotionMessage.Rejection) {
            try parser.parse(raw)
            fast = .success(parser.output.message)
        } catch {
            fast = .failure(error)
        }
        guard fast == general else {
            fatalError("DatagramParser read \(datagram) as \(fast), the general reader as \(general)")
        }
    }
}
