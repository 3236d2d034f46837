// libFuzzer entry for IngestCore's datagram reader (the Motion plugin JSON, base64 payloads and
// all): compiled with Sources/IngestCore/*.swift by CI/fuzz/run. The input is split into
// datagrams at 0xFF bytes (never valid UTF-8, so never inside a well-formed datagram), each fed
// at a later instant, then the core is timed out and finished: every path must return events.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var core = IngestCore()
    let source = DatagramSource(address: "127.0.0.1", port: 50_000)
    var now = Duration.zero
    var events = 0
    for datagram in bytes.split(separator: 0xFF, omittingEmptySubsequences: false) {
        now += .milliseconds(10)
        events &+= core.receive(Array(datagram), from: source, now: now).count
    }
    events &+= core.handleTimeout(now: now + .seconds(60)).count
    events &+= core.finish(now: now + .seconds(61)).count
    return events < 0 ? 1 : 0
}
