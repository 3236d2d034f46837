// libFuzzer entry for IngestCore's datagram reader (the Motion plugin JSON, base64 payloads and
// all): compiled with Sources/IngestCore/*.swift by CI/fuzz/run. The input is split into
// datagrams at 0xFF bytes (never valid UTF-8, so never inside a well-formed datagram), each fed
// at a later instant, then the core is timed out and finished: every path must return events.
// Each datagram also goes through a DatagramParser that keeps its state across the input's
// datagrams and through the general reader alone: the fast paths must read it exactly as the
// general reader does, or the target traps.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var core = IngestCore()
    let source = DatagramSource(address: "127.0.0.1", port: 50_000)
    var now = Duration.zero
    var events = 0
    var parser = DatagramParser()
    for datagram in bytes.split(separator: 0xFF, omittingEmptySubsequences: false) {
        now += .milliseconds(10)
        let datagram = Array(datagram)
        events &+= core.receive(datagram, from: source, now: now).count
        checkFastPaths(datagram, &parser)
    }
    events &+= core.handleTimeout(now: now + .seconds(60)).count
    events &+= core.finish(now: now + .seconds(61)).count
    return events < 0 ? 1 : 0
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
