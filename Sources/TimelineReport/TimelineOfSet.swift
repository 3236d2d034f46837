import CaptureKit
import CaptureSet
import ReplayKit

extension TimelineBuilder {
    /// An empty timeline for a replay of `set`: a lane per interface the manifest describes,
    /// named `if N` with its role and name, and the correlations `registry`'s cores declare.
    public init(for set: LoadedCaptureSet, registry: IntegrationRegistry) {
        var names: [Int: String] = [:]
        for interface in set.manifest.interfaces {
            names[interface.index] = (["if \(interface.index)"] + [interface.role?.rawValue, interface.name].compactMap { $0 })
                .joined(separator: " · ")
        }
        self.init(interfaces: names, correlations: registry.correlations)
    }

    /// Reads the replayed set's capture once more and adds every frame with the one-line
    /// dissection `tether inspect --frames` shows (one stateful dissector with every core's
    /// annotator, as inspect uses).
    /// - Throws: ``CaptureError`` when the capture cannot be read.
    public mutating func addFrames(of run: ReplayRun, registry: IntegrationRegistry) throws(CaptureError) {
        let set = run.captureSet
        let reader = try CaptureFile.open(path: set.capturePath)
        var dissector = AnnotatingFrameDissector(registry: registry, set: set)
        var number = 0
        var firstNs: Int64?
        while let frame = try reader.next() {
            number += 1
            let first = firstNs ?? frame.timestampNs
            firstNs = first
            let dissected = dissector.dissect(frame, interface: reader.interfaces[frame.interfaceIndex])
            self.frame(interface: frame.interfaceIndex, timeNs: frame.timestampNs &- first, number: number,
                       direction: AnnotatingFrameDissector.direction(of: frame, dissected), summary: dissected.summary)
        }
    }
}

/// A timeline report folder (`tether replay --html DIR`): each set's page written as soon as it
/// is replayed (so its timeline can be dropped), and `index.html` when every set is done.
public struct TimelineReportFolder {
    /// The folder the pages go into (it exists).
    public let folder: String
    private var entries: [TimelineIndexEntry] = []
    private var pages: Set<String> = []

    /// A report written into `folder`, which must exist.
    public init(folder: String) { self.folder = folder }

    /// Writes `report`'s page under a file name of its own and remembers it for the index.
    /// - Throws: ``CaptureSetError`` when the page cannot be written (an existing folder or
    ///   device of that name, a full disk).
    public mutating func add(_ report: TimelineSetReport) throws(CaptureSetError) {
        let page = TimelineDocument.pageName(for: report.name, taken: pages)
        pages.insert(page)
        try FileIO.writeOutput(TimelineDocument.page(report), to: FileIO.join(folder, page))
        entries.append(TimelineDocument.indexEntry(report, page: page))
    }

    /// Writes `index.html`, listing every page added with its verdict.
    public func finish() throws(CaptureSetError) {
        try FileIO.writeOutput(TimelineDocument.index(entries), to: FileIO.join(folder, "index.html"))
    }
}
