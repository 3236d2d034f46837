// libFuzzer entry for BehaviourTrace's trace reader (TraceFile.decode, the JSON Lines of traces and
// baselines): compiled with Sources/BehaviourTrace/TraceEvent.swift, TraceName.swift, TracePayload.swift, TraceJSON.swift and TraceJSONParser.swift by CI/fuzz/run. Errors are expected
// answers to bad bytes; a decoded trace is re-encoded and decoded again, which must agree.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let events = try? TraceFile.decode(bytes, file: "<fuzz>") else { return 0 }
    let again = try? TraceFile.decode(TraceFile.encodeBytes(events), file: "<fuzz-again>")
    if again == nil { fatalError("a decoded trace did not decode again after encoding") }
    return 0
}
