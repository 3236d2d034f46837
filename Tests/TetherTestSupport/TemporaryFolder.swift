import Foundation

/// A fresh folder under the system's temporary folder, removed with everything in it when the
/// value goes away: what a test writes never outlives it.
///
/// `@unchecked Sendable`: immutable after `init`; its one stored property, `url`, is a `let`, and
/// the folder is removed only in `deinit`, once no thread holds the value any more.
public final class TemporaryFolder: @unchecked Sendable {
    /// The folder.
    public let url: URL

    /// Creates `tether-LABEL-UUID` under the temporary folder.
    public init(_ label: String = "tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("tether-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    // A removal that fails leaves a stray folder under /tmp, which is not the test's outcome.
    deinit { try? FileManager.default.removeItem(at: url) }

    /// A path inside the folder.
    public func path(_ name: String) -> URL { url.appendingPathComponent(name) }
}
