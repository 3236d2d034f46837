import Dissectors
import ReplayKit
import Testing

/// A BLE link's MTU exchange as the phone-side adapters keep it (``ATTMTUExchange``).
@Suite struct ATTMTUExchangeTests {
    func record(_ opcode: ATTOpcode, _ value: [UInt8]) -> ATTRecord {
        ATTRecord(connectionHandle: 0x40, direction: .sent, opcode: opcode, handle: nil, value: value)
    }

    @Test func aRequestOffersTheClientsMTUAndAResponseTheServers() {
        #expect(ATTMTUExchange.offer(in: record(.exchangeMTURequest, [0x00, 0x02]))! == (client: 512, server: nil))
        #expect(ATTMTUExchange.offer(in: record(.exchangeMTUResponse, [0xF7, 0x00]))! == (client: nil, server: 247))
    }

    @Test func aShortValueOffersNothingAndOtherOpcodesAreNoOffer() {
        #expect(ATTMTUExchange.offer(in: record(.exchangeMTURequest, [0x17]))! == (client: nil, server: nil))
        #expect(ATTMTUExchange.offer(in: record(.writeCommand, [0x00, 0x02])) == nil)
    }

    @Test func thePayloadIsTheSmallerOfferLessTheHeader() {
        var mtu = ATTMTUExchange()
        mtu.note(client: 512, server: nil)
        #expect(mtu.maxPayload == 20)
        mtu.note(client: nil, server: 247)
        #expect(mtu.maxPayload == 244)
        mtu.note(client: nil, server: nil)
        #expect(mtu == ATTMTUExchange(client: 512, server: 247))
    }

    @Test func thePayloadIsNeverBelowTheDefaultMTUs() {
        #expect(ATTMTUExchange().maxPayload == 20)
        #expect(ATTMTUExchange(client: 10, server: 10).maxPayload == 20)
    }
}
