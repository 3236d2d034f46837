import Foundation
import GRDB
import IngestCore
import IngestStore
import Testing

/// The durable SQLite sink: round trip, idempotence, durability, WAL.
@Suite struct SQLiteIngestStoreTests {
    static let source = DatagramSource(address: "::1", port: 50_000)

    /// A fresh database path in its own temporary directory.
    func temporaryPath() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("IngestStoreTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("ingest.sqlite").path
    }

    /// Points of every payload kind, as IngestCore produces them.
    func samplePoints() -> [DataPoint] {
        func point(_ name: String, _ type: String, _ payload: [UInt8], _ value: DataValue, timeNs: Int64 = 1_674_790_238_123_456_700) -> DataPoint {
            DataPoint(source: Self.source, timeNs: timeNs, name: name, type: type, value: value, payload: payload)
        }
        return [
            point("v1/1/x", "float64", [0x40, 0x5E, 0xDD, 0x2F, 0x1A, 0x9F, 0xBE, 0x77], .float64(123.456)),
            point("v1/1/n", "int64", [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE], .int64(-2)),
            point("v1/1/v", "vector_2d", [0x3F, 0xF0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0], .vector2D(1, 2)),
            point("1/gnss", "string/nmea", Array("$GPGGA,é".utf8), .string("$GPGGA,é")),
            point("blob", "cbor", [0, 1, 0xFF], .bytes([0, 1, 0xFF]), timeNs: Int64.max),
            point("empty", "bytes", [], .bytes([]), timeNs: 0),
        ]
    }

    func chunk(_ sequence: Int, _ points: [DataPoint], streamStartNs: Int64 = 42) -> IngestChunk {
        IngestChunk(source: Self.source, streamStartNs: streamStartNs, sequence: sequence, dataPoints: points,
                    byteCount: points.reduce(0) { $0 + $1.payload.count })
    }

    @Test func dataPointsRoundTripExactly() throws {
        let store = try SQLiteIngestStore(path: try temporaryPath())
        let points = samplePoints()
        try store.store(chunk(1, Array(points[0..<3])))
        try store.store(chunk(2, Array(points[3...])))
        #expect(try store.dataPoints() == points)
        #expect(try store.chunkCount() == 2)
        #expect(try store.dataPointCount() == points.count)
    }

    @Test func storingAChunkTwiceKeepsItOnce() throws {
        let store = try SQLiteIngestStore(path: try temporaryPath())
        let first = chunk(1, samplePoints())
        #expect(try store.store(first) == true)
        #expect(try store.store(first) == false)
        #expect(try store.chunkCount() == 1)
        #expect(try store.dataPoints() == samplePoints())
    }

    @Test func differentChunkUnderStoredIdentityIsRefused() throws {
        let store = try SQLiteIngestStore(path: try temporaryPath())
        try store.store(chunk(1, Array(samplePoints()[0..<2])))
        #expect(throws: IngestStoreError.conflictingChunk(path: store.path, source: Self.source.description, streamStartNs: 42, sequence: 1)) {
            try store.store(chunk(1, Array(samplePoints()[1..<3])))
        }
        #expect(try store.dataPoints() == Array(samplePoints()[0..<2]))
    }

    @Test func chunksOfOtherStreamsOrSequencesAreDistinct() throws {
        let store = try SQLiteIngestStore(path: try temporaryPath())
        let points = Array(samplePoints()[0..<1])
        try store.store(chunk(1, points, streamStartNs: 1))
        try store.store(chunk(2, points, streamStartNs: 1))
        try store.store(chunk(1, points, streamStartNs: 2))
        var otherPort = chunk(1, points, streamStartNs: 1)
        otherPort.source.port = 50_001
        try store.store(otherPort)
        #expect(try store.chunkCount() == 4)
    }

    @Test func committedChunksSurviveReopening() throws {
        let path = try temporaryPath()
        let store = try SQLiteIngestStore(path: path)
        try store.store(chunk(1, samplePoints()))
        try store.close()
        let reopened = try SQLiteIngestStore(path: path)
        #expect(try reopened.dataPoints() == samplePoints())
        // Idempotence holds across the reopen too.
        #expect(try reopened.store(chunk(1, samplePoints())) == false)
    }

    @Test func committedChunksSurviveWithoutClose() throws {
        let path = try temporaryPath()
        // A second store on the same file, as a restarted process would open it while the first
        // never closed: the WAL holds the commit.
        let writer = try SQLiteIngestStore(path: path)
        try writer.store(chunk(1, samplePoints()))
        let reader = try SQLiteIngestStore(path: path)
        #expect(try reader.dataPoints() == samplePoints())
        withExtendedLifetime(writer) {}
    }

    @Test func databaseIsInWALMode() throws {
        let store = try SQLiteIngestStore(path: try temporaryPath())
        #expect(try store.journalMode() == "wal")
    }

    @Test func unopenablePathThrowsNamingIt() {
        let path = "/nonexistent-directory-\(UUID().uuidString)/ingest.sqlite"
        #expect {
            _ = try SQLiteIngestStore(path: path)
        } throws: { error in
            guard let error = error as? IngestStoreError, case .cannotOpen(let failedPath, _) = error else { return false }
            return failedPath == path
        }
    }

    @Test func chunksFromTheCoreAreStoredInArrivalOrder() throws {
        let store = try SQLiteIngestStore(path: try temporaryPath())
        var core = IngestCore(configuration: .init(flushBytes: 16))
        var expected: [DataPoint] = []
        for i in 0..<25 {
            let value = Double(i)
            let bits = value.bitPattern
            let payload = (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * UInt64($0))) }
            let base64 = payload.withUnsafeBytes { Data($0).base64EncodedString() }
            let datagram = Array(#"{"t":"\#(100 + i)","d":[{"n":"v1/1/x","t":"float64","p":"\#(base64)"}]}"#.utf8)
            for event in core.receive(datagram, from: Self.source, now: .milliseconds(i * 10)) {
                switch event {
                case .dataPoint(let point): expected.append(point)
                case .chunkReady(let chunk): try store.store(chunk)
                default: break
                }
            }
        }
        for case .chunkReady(let chunk) in core.finish(now: .seconds(1)) { try store.store(chunk) }
        #expect(expected.count == 25)
        #expect(try store.dataPoints() == expected)
        #expect(try store.chunkCount() == 13)
    }
}

/// Chunks stored several at a time, one row each, and databases from before that.
@Suite struct SQLiteIngestStoreBatchTests {
    let base = SQLiteIngestStoreTests()

    @Test func severalChunksInOneCallAreStoredInOrder() throws {
        let store = try SQLiteIngestStore(path: try base.temporaryPath())
        let points = base.samplePoints()
        let chunks = [base.chunk(1, Array(points[0..<2])), base.chunk(2, Array(points[2..<5])), base.chunk(3, Array(points[5...]))]
        #expect(try store.store(chunks) == 3)
        #expect(try store.dataPoints() == points)
        #expect(try store.chunkCount() == 3)
        #expect(try store.dataPointCount() == points.count)
    }

    @Test func aBatchRepeatingStoredChunksCountsOnlyTheNewOnes() throws {
        let store = try SQLiteIngestStore(path: try base.temporaryPath())
        let points = base.samplePoints()
        try store.store(base.chunk(1, Array(points[0..<3])))
        #expect(try store.store([base.chunk(1, Array(points[0..<3])), base.chunk(2, Array(points[3...]))]) == 1)
        #expect(try store.dataPoints() == points)
    }

    @Test func aBatchWithAConflictingChunkStoresNoneOfIt() throws {
        let store = try SQLiteIngestStore(path: try base.temporaryPath())
        let points = base.samplePoints()
        try store.store(base.chunk(1, Array(points[0..<2])))
        #expect(throws: IngestStoreError.conflictingChunk(path: store.path, source: SQLiteIngestStoreTests.source.description, streamStartNs: 42, sequence: 1)) {
            try store.store([base.chunk(2, Array(points[2..<4])), base.chunk(1, Array(points[4...]))])
        }
        #expect(try store.chunkCount() == 1)
        #expect(try store.dataPoints() == Array(points[0..<2]))
    }

    @Test func aChunkWithoutPointsRoundTrips() throws {
        let store = try SQLiteIngestStore(path: try base.temporaryPath())
        try store.store(base.chunk(1, []))
        try store.store(base.chunk(2, Array(base.samplePoints()[0..<1])))
        #expect(try store.dataPoints() == Array(base.samplePoints()[0..<1]))
        #expect(try store.chunkCount() == 2)
    }

    @Test func aVersion1DatabaseIsConvertedKeepingEveryPointInOrder() throws {
        let path = try base.temporaryPath()
        let points = base.samplePoints()
        // The schema and rows Tether's first store wrote: one data_point row per point.
        let old = try DatabaseQueue(path: path)
        try old.write { db in
            try db.execute(sql: """
                CREATE TABLE chunk (id INTEGER PRIMARY KEY, address TEXT NOT NULL, port INTEGER NOT NULL,
                    stream_start_ns INTEGER NOT NULL, sequence INTEGER NOT NULL, byte_count INTEGER NOT NULL,
                    point_count INTEGER NOT NULL, UNIQUE (address, port, stream_start_ns, sequence));
                CREATE TABLE data_point (id INTEGER PRIMARY KEY, chunk_id INTEGER NOT NULL REFERENCES chunk(id),
                    time_ns INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, payload BLOB NOT NULL);
                PRAGMA user_version = 1;
                """)
            for (chunkID, range) in [(1, 0..<4), (2, 4..<6)] {
                try db.execute(sql: "INSERT INTO chunk VALUES (?, '::1', 50000, 42, ?, 0, ?)", arguments: [chunkID, chunkID, range.count])
                for point in points[range] {
                    try db.execute(sql: "INSERT INTO data_point (chunk_id, time_ns, name, type, payload) VALUES (?, ?, ?, ?, ?)",
                                   arguments: [chunkID, point.timeNs, point.name, point.type, Data(point.payload)])
                }
            }
        }
        try old.close()

        let store = try SQLiteIngestStore(path: path)
        #expect(try store.dataPoints() == points)
        #expect(try store.dataPointCount() == 6)
        #expect(try store.store(base.chunk(1, Array(points[0..<4]))) == false)
        #expect(try store.store(base.chunk(3, Array(points[0..<1]))) == true)
    }

    @Test func damagedPackedPointsAreReportedAsCorrupt() throws {
        let path = try base.temporaryPath()
        let store = try SQLiteIngestStore(path: path)
        try store.store(base.chunk(1, base.samplePoints()))
        let other = try DatabaseQueue(path: path)
        // Cut the blob inside its first point's name.
        try other.write { db in try db.execute(sql: "UPDATE chunk SET points = substr(points, 1, 15)") }
        #expect {
            _ = try store.dataPoints()
        } throws: { error in
            guard let error = error as? IngestStoreError, case .corrupt(let failedPath, let detail) = error else { return false }
            return failedPath == path && detail.contains("chunk row 1")
        }
    }

    @Test func aDatabaseFromANewerTetherIsNotOpened() throws {
        let path = try base.temporaryPath()
        let newer = try DatabaseQueue(path: path)
        try newer.write { db in try db.execute(sql: "PRAGMA user_version = 99") }
        try newer.close()
        #expect {
            _ = try SQLiteIngestStore(path: path)
        } throws: { error in
            guard let error = error as? IngestStoreError, case .cannotOpen(let failedPath, let underlying) = error else { return false }
            return failedPath == path && underlying.contains("99")
        }
    }
}
