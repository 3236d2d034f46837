// What an IngestCore is configured with and what it reports: its limits, its events and the
// reasons they carry, the chunks it hands over, its counters. The state machine is IngestCore.swift.

/// Limits and timers of an ``IngestCore``.
public struct IngestConfiguration: Sendable, Hashable {
    /// A stream ends when no datagram came from its source for this long.
    public var idleTimeout: Duration = .seconds(15)
    /// A stream's buffered points are handed on at the latest this long after the first of them arrived.
    public var flushInterval: Duration = .milliseconds(100)
    /// A stream's buffered points are handed on as soon as their payloads add up to this many bytes.
    public var flushBytes: Int = 10_000
    /// A larger datagram is rejected as ``RejectionReason/oversize`` (9216 is the iOS/macOS UDP limit).
    public var maxDatagramBytes: Int = 9216
    /// A gap is reported when the time between two data datagrams exceeds `gapFactor` × the learned period.
    public var gapFactor: Double = 4

    /// Creates a configuration; every limit has the default of the Motion plugin protocol.
    public init(
        idleTimeout: Duration = .seconds(15),
        flushInterval: Duration = .milliseconds(100),
        flushBytes: Int = 10_000,
        maxDatagramBytes: Int = 9216,
        gapFactor: Double = 4
    ) {
        self.idleTimeout = idleTimeout
        self.flushInterval = flushInterval
        self.flushBytes = flushBytes
        self.maxDatagramBytes = maxDatagramBytes
        self.gapFactor = gapFactor
    }
}

/// Why a datagram was refused. The raw value is the name used in logs and traces.
public enum RejectionReason: String, Sendable, Hashable, CaseIterable {
    /// Longer than ``IngestConfiguration/maxDatagramBytes``.
    case oversize = "oversize"
    /// The datagram, or a `string` payload, is not valid UTF-8.
    case notUTF8 = "not_utf8"
    /// Not one JSON value (trailing commas and whitespace are allowed).
    case notJSON = "not_json"
    /// A required member (`t`, `n`, `p`, an entry in `d`) is absent.
    case missingField = "missing_field"
    /// A member has the wrong JSON type, or `end` is not the string `"true"`.
    case wrongFieldType = "wrong_field_type"
    /// A payload is not strict, padded, standard-alphabet base64.
    case badBase64 = "bad_base64"
    /// A payload's length does not fit its type (float64/int64 need 8 bytes, vector_2d 16, vector_3d 24).
    case payloadLength = "payload_length"
    /// The sample time is not a decimal string of seconds since the Unix epoch.
    case badTime = "bad_time"
    /// Valid JSON that is none of the known messages.
    case unknownMessage = "unknown_message"
}

/// Why a stream ended.
public enum StreamEndCause: String, Sendable, Hashable {
    /// The plugin sent `{"end": "true"}`.
    case endMessage = "end_message"
    /// No datagram came for ``IngestConfiguration/idleTimeout``.
    case idleTimeout = "idle_timeout"
    /// The caller called ``IngestCore/finish(now:)``.
    case finished = "finished"
}

/// Accepted data points of one stream, handed to a sink as a unit.
///
/// A chunk is identified by `source`, `streamStartNs` and `sequence`; a sink that stores it twice
/// should keep it once. Its points are held packed (``packedPoints``), the form a store keeps.
public struct IngestChunk: Sendable, Hashable {
    /// The stream's sender.
    public var source: DatagramSource
    /// Core time (`now`, in nanoseconds) at which the stream started; it identifies the stream.
    /// Strictly increasing across the streams of one core, so two streams never share it.
    public var streamStartNs: Int64
    /// Numbered from 1 in each stream, without holes.
    public var sequence: Int
    /// The points in arrival order, packed; empty when the core does not keep them
    /// (``IngestCore/keepsChunkPoints``).
    public var packedPoints: PackedDataPoints
    /// How many points the chunk holds: `packedPoints.count`, also when the core counted them
    /// without keeping them.
    public var dataPointCount: Int
    /// Sum of the points' payload lengths.
    public var byteCount: Int

    /// Creates a chunk of `dataPoints` (packed: see ``PackedDataPoints`` for what is kept).
    public init(source: DatagramSource, streamStartNs: Int64, sequence: Int, dataPoints: [DataPoint], byteCount: Int) {
        self.init(source: source, streamStartNs: streamStartNs, sequence: sequence, packedPoints: PackedDataPoints(dataPoints),
                  dataPointCount: dataPoints.count, byteCount: byteCount)
    }

    init(source: DatagramSource, streamStartNs: Int64, sequence: Int, packedPoints: PackedDataPoints, dataPointCount: Int, byteCount: Int) {
        self.source = source
        self.streamStartNs = streamStartNs
        self.sequence = sequence
        self.packedPoints = packedPoints
        self.dataPointCount = dataPointCount
        self.byteCount = byteCount
    }

    /// The points in arrival order, unpacked: each with the chunk's source and its value decoded
    /// from its payload. Empty when the core does not keep them.
    ///
    /// A point whose payload does not fit its type (the core never makes one; a ``DataPoint``
    /// built by hand may be one) reads back with its payload as ``DataValue/bytes(_:)``, the value
    /// the core gives a type it cannot decode.
    public var dataPoints: [DataPoint] {
        get { packedPoints.dataPointsDecodingLeniently(source: source) }
        set {
            packedPoints = PackedDataPoints(newValue)
            dataPointCount = newValue.count
        }
    }
}

/// What the core reports; the caller carries out `chunkReady` and records the rest.
public enum IngestEvent: Sendable, Hashable {
    /// One accepted data point, in datagram entry order.
    case dataPoint(DataPoint)
    /// The plugin named itself.
    case pluginName(DatagramSource, String)
    /// The plugin said it stops sending; `streamEnded(_, .endMessage)` follows.
    case endMessage(DatagramSource)
    /// A Motion V1 message: `d` is one base64 string. Recognised, not decoded further.
    case legacyV1(DatagramSource, timeNs: Int64?, payload: [UInt8])
    /// The datagram was refused whole; nothing of it was used.
    case rejected(DatagramSource, RejectionReason, detail: String)
    /// The first message from a source with no open stream.
    case streamStarted(DatagramSource)
    /// The stream is closed; the next message from its source starts a new one.
    case streamEnded(DatagramSource, StreamEndCause)
    /// The stream's sending rate was learned, or changed by more than 20 %.
    case rateLearned(DatagramSource, hertz: Double)
    /// A data datagram's sample time is earlier than the previous one's of the same stream.
    case timeWentBackwards(DatagramSource, previousNs: Int64, currentNs: Int64)
    /// Data datagrams arrived `gapNs` apart, more than ``IngestConfiguration/gapFactor`` × the learned period.
    case gap(DatagramSource, gapNs: Int64, expectedPeriodNs: Int64)
    /// Hand this chunk to the sink.
    case chunkReady(IngestChunk)
}

/// Running totals. `datagrams == accepted + rejected` always holds.
public struct IngestCounters: Sendable, Hashable {
    /// Every datagram given to ``IngestCore/receive(_:from:now:)-([UInt8],_,_)``.
    public var datagrams: Int = 0
    /// Datagrams that were a valid message.
    public var accepted: Int = 0
    /// Refused datagrams, by reason.
    public var rejectedByReason: [RejectionReason: Int] = [:]
    /// Accepted data points.
    public var dataPoints: Int = 0
    /// Accepted Motion V1 messages.
    public var legacyV1Messages: Int = 0
    /// Accepted plugin name messages.
    public var nameMessages: Int = 0
    /// Accepted end messages.
    public var endMessages: Int = 0
    /// Streams started.
    public var streamsStarted: Int = 0
    /// Streams ended, for any cause.
    public var streamsEnded: Int = 0
    /// Chunks handed on.
    public var chunks: Int = 0
    /// Times a stream's sample time went backwards.
    public var timeWentBackwards: Int = 0
    /// Gaps reported.
    public var gaps: Int = 0

    /// All refused datagrams.
    public var rejected: Int { rejectedByReason.values.reduce(0, +) }

    /// Creates counters, all zero by default.
    public init(
        datagrams: Int = 0, accepted: Int = 0, rejectedByReason: [RejectionReason: Int] = [:],
        dataPoints: Int = 0, legacyV1Messages: Int = 0, nameMessages: Int = 0, endMessages: Int = 0,
        streamsStarted: Int = 0, streamsEnded: Int = 0, chunks: Int = 0, timeWentBackwards: Int = 0, gaps: Int = 0
    ) {
        self.datagrams = datagrams
        self.accepted = accepted
        self.rejectedByReason = rejectedByReason
        self.dataPoints = dataPoints
        self.legacyV1Messages = legacyV1Messages
        self.nameMessages = nameMessages
        self.endMessages = endMessages
        self.streamsStarted = streamsStarted
        self.streamsEnded = streamsEnded
        self.chunks = chunks
        self.timeWentBackwards = timeWentBackwards
        self.gaps = gaps
    }
}
