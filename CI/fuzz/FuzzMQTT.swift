// libFuzzer entry for the MQTT decoder and stream framer: compiled with Sources/MQTT/*.swift by
// CI/fuzz/run. The first input byte picks the protocol level (bit 0: 3.1.1 or 5) and the TCP
// segment size (bits 1–7, 1–128 bytes); the rest is one direction of a stream, cut into segments
// and framed. Every packet that decodes must encode again and decode to the same packet: a
// failure there is a decoder or encoder bug, so it traps (libFuzzer saves the input).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let version: MQTTVersion = bytes[0] & 1 == 0 ? .v3_1_1 : .v5
    let segment = Int(bytes[0] >> 1) + 1
    var framer = MQTTStreamFramer(maximumPacketLength: 2048)
    var offset = 1
    while offset < size {
        let end = min(offset + segment, size)
        framer.feed(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) { item in
            guard case .packet(let packetBytes) = item,
                  case .success(let packet) = MQTTPacket.decode(packetBytes, version: version) else { return }
            let encoded: [UInt8]
            do {
                encoded = try packet.encoded(version: version)
            } catch {
                fatalError("a decoded packet does not encode: \(error) — \(packet)")
            }
            let again = encoded.withUnsafeBytes { MQTTPacket.decode($0, version: version) }
            guard case .success(let second) = again, second == packet else {
                fatalError("round trip differs: \(packet) → \(again)")
            }
        }
        offset = end
    }
    return 0
}
