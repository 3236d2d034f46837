import Dispatch
import Synchronization

/// A capture file's SHA-256 checked against its manifest on another thread, while the caller goes
/// on to replay the capture.
///
/// Checking the digest reads the whole capture once, and the replay reads it again: done one
/// after the other, the check was a sixth of `tether replay` of a one-hour plugin set. Made by
/// ``CaptureSetDirectory/loadVerifyingAlongside(_:)``; nothing the replay found may be reported
/// before ``wait()`` has returned, since a capture that is not the sealed one can explain
/// anything the replay saw.
public final class CaptureDigestCheck: Sendable {
    private let outcome = Mutex<CaptureSetError?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts checking that `file`, the capture of the set named `set`, has the lower-case hex
    /// SHA-256 `expected`.
    init(set: String, file: String, expected: String) {
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let problem = Self.check(set: set, file: file, expected: expected)
            outcome.withLock { $0 = problem }
            finished.signal()
        }
    }

    private static func check(set: String, file: String, expected: String) -> CaptureSetError? {
        do throws(CaptureSetError) {
            let actual = try CaptureSetDirectory.sha256(ofFile: file)
            return actual == expected ? nil : .digestMismatch(set: set, file: file, expected: expected, actual: actual)
        } catch {
            return error
        }
    }

    /// Waits until the check is done; returns at once when it is. Any number of calls give the
    /// same answer.
    /// - Throws: ``CaptureSetError/digestMismatch(set:file:expected:actual:)``, or why the file
    ///   could not be read.
    public func wait() throws(CaptureSetError) {
        finished.wait()
        finished.signal()
        if let problem = outcome.withLock({ $0 }) { throw problem }
    }
}
