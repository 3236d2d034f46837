import MonkeyC
@testable import SessionCore
import Testing
import TetherTestSupport

@Suite struct FrameCodecTests {
    @Test func headerShorterThanTenBytesIsTruncated() {
        for length in 0..<10 {
            #expect(throws: SessionFrameError(frame: 0, offset: length, problem: .truncated(
                expected: "the 10-byte frame header (channel, flags, id, total or offset)", needed: 10, available: length))) {
                try SessionFrame.decode(Array(repeating: 0, count: length))
            }
        }
    }

    @Test func firstFrameCarryingMoreThanItsTotalIsRejected() {
        #expect(throws: SessionFrameError.self) { try SessionFrame.decode(hex("05 03 01000000 02000000 aabbcc")) }
    }

    @Test func lastFlagMustMatchTheEndOfAFirstFrame() {
        // All of the item but no LAST.
        #expect(throws: SessionFrameError.self) { try SessionFrame.decode(hex("05 01 01000000 02000000 aabb")) }
        // LAST but not all of it.
        #expect(throws: SessionFrameError.self) { try SessionFrame.decode(hex("05 03 01000000 03000000 aabb")) }
    }

    @Test func continuationWithoutBytesIsRejected() {
        #expect(throws: SessionFrameError(frame: 0, offset: 10, problem: .continuationWithoutBytes)) {
            try SessionFrame.decode(hex("05 00 01000000 0a000000"))
        }
    }

    @Test func continuationPastTwoToTheThirtyTwoIsRejected() {
        #expect(throws: SessionFrameError(frame: 0, offset: 6, problem: .offsetOverflow(offset: 0xFFFF_FFFF, count: 1))) {
            try SessionFrame.decode(hex("08 02 01000000 ffffffff 00"))
        }
    }

    @Test func unknownChannelAndReservedFlagsAreValuesNotErrors() throws {
        let frame = try SessionFrame.decode(hex("2a c3 07000000 01000000 99"))
        #expect(frame.channel == SessionChannel(rawValue: 0x2A))
        #expect(!frame.channel.isKnown)
        #expect(!frame.flags.intersection(.reserved).isEmpty)
        #expect(frame.encode() == hex("2a c3 07000000 01000000 99"))
    }

    @Test func unknownControlOpIsAValue() throws {
        #expect(try SessionControl.decode([0x7F, 1, 2]) == .unknown(op: 0x7F, bytes: [1, 2]))
    }

    @Test func controlItemsOfTheWrongLengthAreErrors() {
        #expect(throws: SessionFrameError(frame: nil, offset: 10, problem: .trailingBytes(count: 1))) {
            try SessionControl.decode(hex("03 02 01000000 ffffffff 00"))
        }
        #expect(throws: SessionFrameError.self) { try SessionControl.decode(hex("03 02 01000000 ffff")) }
        #expect(throws: SessionFrameError.self) { try SessionControl.decode([]) }
    }

    @Test func payloadOffsetsOfMonkeyCErrorsAreIntoTheItem() {
        // File metadata: size, then a dictionary whose magic is wrong at item byte 4.
        #expect(throws: SessionFrameError(frame: nil, offset: 4, problem: .monkeyC(
            MonkeyCDecodingError(offset: 0, problem: .badMagic(found: [0xDE, 0xAD, 0xBE, 0xEF]))))) {
            try SessionItem.decode(channel: .fileMetadata, payload: hex("1a000000 deadbeef"))
        }
    }

    @Test func nonDictionariesAreNotPropertyLists() {
        #expect(throws: SessionFrameError.self) {
            try SessionItem.decode(channel: .userInfo, payload: try MonkeyCSerialization.encode([1, 2]))
        }
        #expect(SessionPropertyList.problem(in: ["k": nil]) != nil)
        #expect(SessionPropertyList.problem(in: [1: "v"]) != nil)
        #expect(SessionPropertyList.problem(in: ["k": .char(65)]) != nil)
        #expect(SessionPropertyList.problem(in: ["k": ["n": [1, 2.5, "s", .byteArray([1])]]]) == nil)
    }

    @Test func fragmentRoundTripsEveryLengthAtEveryFrameSize() throws {
        var rng = SplitMix64(seed: 0x5E55_0001)
        for frameLength in [20, 21, 23, 64, 244, 512] {
            for length in [0, 1, 9, 10, 11, 100, 1000] {
                let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let frames = SessionFrame.fragment(channel: .messageData, id: 9, payload: payload, maxFrameLength: frameLength)
                #expect(frames.allSatisfy { $0.encode().count <= frameLength })
                let item = try SessionReassembledItem.reassemble(frames.map { $0.encode() })
                #expect(item.payload == payload)
            }
        }
    }

    @Test func deviceIdentityTextRoundTripsAndRejectsGarbage() {
        #expect(SessionDeviceID("0FF1CE00-0000-4000-8000-0000000000A1") == watchID)
        #expect(watchID.description == "0ff1ce00-0000-4000-8000-0000000000a1")
        #expect(SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a") == nil)
        #expect(SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000ag") == nil)
        #expect(SessionDeviceID(bytes: [1, 2, 3]) == nil)
    }
}

@Suite struct GarbageTests {
    @Test func randomBytesNeverTrapAnyDecoder() {
        var rng = SplitMix64(seed: 0x5E55_0002)
        for _ in 0..<20_000 {
            let length = Int(rng.next() % 80)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Bias towards plausible headers so the deeper paths run too.
            if length > 1, rng.chance(0.5) { bytes[0] = UInt8(rng.next() % 10) }
            if length > 1, rng.chance(0.5) { bytes[1] = [0x03, 0x01, 0x00, 0x02, 0x07][Int(rng.next() % 5)] }
            _ = try? SessionFrame.decode(bytes)
            _ = try? SessionControl.decode(bytes)
            _ = try? SessionReassembledItem.decodeItem([bytes])
            for channel in 0...9 {
                _ = try? SessionItem.decode(channel: SessionChannel(rawValue: UInt8(channel)), payload: bytes)
            }
        }
    }

    @Test func mutatedVectorsAreDecodedOrRefusedWithTypedErrors() {
        var rng = SplitMix64(seed: 0x5E55_0003)
        for _ in 0..<5_000 {
            let vector = linkVectors[Int(rng.next() % UInt64(linkVectors.count))]
            var frames = vector.bytes
            let index = Int(rng.next() % UInt64(frames.count))
            guard !frames[index].isEmpty else { continue }
            let position = Int(rng.next() % UInt64(frames[index].count))
            frames[index][position] ^= UInt8(1 << (rng.next() % 8))
            do {
                _ = try SessionReassembledItem.decodeItem(frames)
            } catch {
                // The offset points into the frame it names, or into the item's reassembled bytes.
                if let frame = error.frame {
                    #expect(frames.indices.contains(frame), "\(error)")
                    #expect((0...(frames.indices.contains(frame) ? frames[frame].count : 0)).contains(error.offset), "\(error)")
                } else {
                    #expect((0...frames.reduce(0) { $0 + $1.count }).contains(error.offset), "\(error)")
                }
                #expect(!error.description.isEmpty)
            }
        }
    }

    @Test func randomFramesIntoABoundCoreOnlyCauseViolations() {
        var rng = SplitMix64(seed: 0x5E55_0004)
        var pair = Pair(seed: 4)
        var core = pair.watch.core
        for step in 0..<20_000 {
            var bytes = (0..<Int(rng.next() % 40)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if bytes.count > 10, rng.chance(0.7) {
                bytes[0] = UInt8(rng.next() % 10)
                bytes[1] = UInt8(rng.next() % 0x40)
                bytes[2] = UInt8(rng.next() % 4)
                bytes[3...5] = [0, 0, 0]
            }
            let actions = core.receive(bytes, now: .milliseconds(Int64(step)))
            for action in actions {
                if case .event(.violation(_, let detail)) = action { #expect(!detail.isEmpty) }
            }
            if step % 1000 == 0 { _ = core.handleTimeout(now: .milliseconds(Int64(step))) }
        }
        pair.watch.core = core
        #expect(pair.watch.core.activationState == .activated)
    }
}
