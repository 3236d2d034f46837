// libFuzzer entry for PcapReader; the driver is exerciseReader in FuzzSupport.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    exerciseReader(data, size) { input throws(CaptureError) in try PcapReader(input: input) }
}
