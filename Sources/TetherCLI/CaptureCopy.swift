import CaptureKit

/// Copies every frame of a capture into a pcapng writer, interface by interface as the source
/// describes them, with comments, custom options, flags and drop statistics: the common path of
/// `import`, `export --format pcapng` and `annotate`.
struct CaptureCopy {
    /// Frames copied.
    var frames = 0
    /// The first frame's timestamp, for turning frame times into capture-relative times.
    var firstTimeNs: Int64?
    /// Frame count per source interface.
    var framesPerInterface: [Int: Int] = [:]
    /// The source's warnings (a truncated tail, chiefly).
    var warnings: [CaptureWarning] = []
    /// The source's interfaces, as finally described.
    var interfaces: [CaptureInterface] = []

    /// Copy `reader` into `writer`. `edit` may change each frame before it is written (add a
    /// comment, say). Statistics blocks are written at the end for interfaces that have any.
    static func copy(
        from reader: any CaptureReader, to writer: PcapngWriter, progress: ProgressDisplay? = nil,
        edit: (inout CaptureFrame) -> Void = { _ in }
    ) throws -> CaptureCopy {
        var result = CaptureCopy()
        // The reader's interface index → the writer's (the same numbers, since both count from 0 in
        // order of description, but kept explicit so a skipped interface could never misnumber).
        var written: [Int: Int] = [:]
        while var frame = try reader.next() {
            if written[frame.interfaceIndex] == nil {
                for index in reader.interfaces.indices where written[index] == nil {
                    var interface = reader.interfaces[index]
                    // Statistics seen so far are written once, at the end.
                    interface.statistics = InterfaceStatistics()
                    written[index] = try writer.addInterface(interface)
                }
            }
            guard let target = written[frame.interfaceIndex] else {
                throw CommandFailure.failed("\(reader.path): frame \(frame.number) names interface \(frame.interfaceIndex), which the file never described")
            }
            if result.firstTimeNs == nil { result.firstTimeNs = frame.timestampNs }
            result.frames += 1
            result.framesPerInterface[frame.interfaceIndex, default: 0] += 1
            edit(&frame)
            frame.interfaceIndex = target
            try writer.write(frame)
            progress?.update(bytesRead: reader.bytesRead, frames: result.frames)
        }
        progress?.clear()
        // Interfaces described after the last frame are kept too.
        for index in reader.interfaces.indices where written[index] == nil {
            var interface = reader.interfaces[index]
            interface.statistics = InterfaceStatistics()
            written[index] = try writer.addInterface(interface)
        }
        for (index, interface) in reader.interfaces.enumerated() {
            let statistics = interface.statistics
            if statistics.received != nil || statistics.interfaceDropped != nil || statistics.osDropped != nil,
               let target = written[index] {
                try writer.writeStatistics(interfaceIndex: target, statistics)
            }
        }
        result.warnings = reader.warnings.filter { $0.kind != .skippedUnknown }
        result.interfaces = reader.interfaces
        return result
    }
}
