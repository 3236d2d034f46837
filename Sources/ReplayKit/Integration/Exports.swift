// What an integration written outside Tether needs with `import ReplayKit` alone: the trace
// (TraceEvent, TraceValue), the capture set (InterfaceRole, ManifestSection, FrameMatchingMode) and
// the capture's link types.
@_exported import BehaviourTrace
@_exported import CaptureKit
@_exported import CaptureSet
