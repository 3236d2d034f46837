import BehaviourTrace
import CaptureKit
import CaptureSet

/// What a set's recorded API calls say that an SDK learns outside the link.
enum RecordedCalls {
    /// The virtual instant (since the capture's first frame) of the first call the recorded app
    /// made to one of `cores` (`core` named, or unlabelled for `unlabelledCore`), host facts left
    /// out; `nil` when there is none or the capture cannot be read.
    static func firstAppCallInstant(in set: LoadedCaptureSet, cores: Set<String>, unlabelledCore: String?,
                                    hostFacts: [String: Set<String>]) -> Duration? {
        let callInterfaces = Set(set.manifest.interfaces.filter { $0.role == .apiCalls }.map(\.index))
        guard !callInterfaces.isEmpty, let reader = try? CaptureFile.open(path: set.capturePath) else { return nil }
        var firstFrameNs: Int64?
        var found: Int64?
        while found == nil, (try? reader.withNextFrame({ view in
            let first = firstFrameNs ?? view.timestampNs
            firstFrameNs = first
            guard callInterfaces.contains(view.interfaceIndex),
                  let record = try? JSONLiteral.parseObject(view.data, label: "frame \(view.number)"),
                  case .string(let call)? = record["call"] else { return }
            let core: String? = if case .string(let named)? = record["core"] { named } else { unlabelledCore }
            guard let core, cores.contains(core), !(hostFacts[core] ?? []).contains(call) else { return }
            found = max(0, view.timestampNs - first)
        })) == true {}
        return found.map { .nanoseconds($0) }
    }

    /// The URL of the first recorded `device_list` call (Garmin Connect Mobile opening the app
    /// after device selection): from the `api-calls` interface, else the manifest's hand-written
    /// `messaging.api_calls`. `nil` when neither has one, or the capture cannot be read (the
    /// replay itself reports that).
    static func firstDeviceSelectionURL(in set: LoadedCaptureSet) -> String? {
        let callInterfaces = Set(set.manifest.interfaces.filter { $0.role == .apiCalls }.map(\.index))
        var found: String?
        if !callInterfaces.isEmpty, let reader = try? CaptureFile.open(path: set.capturePath) {
            while found == nil, (try? reader.withNextFrame({ view in
                guard callInterfaces.contains(view.interfaceIndex) else { return }
                guard let record = try? JSONLiteral.parseObject(view.data, label: "frame \(view.number)") else { return }
                if case .string("device_list")? = record["call"], case .string(let url)? = record["url"] { found = url }
            })) == true {}
        }
        if let found { return found }
        guard let section = set.manifest.section(named: "messaging"), case .sequence(let calls, _)? = section.value["api_calls"] else { return nil }
        for call in calls {
            if case .scalar("device_list", _, _)? = call["call"], case .scalar(let url, _, _)? = call["url"] { return url }
        }
        return nil
    }
}
