// libFuzzer entry for the live-script loader (LiveScript(yaml:file:callNames:): YAML within the
// script budget, steps, durations, argument values), with every live host's call names. Compiled
// by CI/fuzz/run with Sources/LiveHosts/LiveScript.swift, BehaviourTrace's
// TraceEvent.swift, TraceName.swift, TracePayload.swift, TraceJSON.swift, TraceJSONParser.swift and Sources/JSONBytes into one module, against CaptureSet,
// CaptureKit, Durations and Yams built with the same sanitizers. Refusals are expected answers; a trap,
// sanitizer report or hang is a finding.

/// The call steps of `tether live messaging`, `session` and `widget` (their hosts' `scriptCalls`).
let fuzzedCallNames: Set<String> = [
    // messaging
    "register", "unregister", "register_device", "unregister_device", "unregister_all_devices", "app_status", "send", "open_app", "device_list",
    // session
    "activate", "update_context", "send_message", "send_message_data", "reply", "reply_data", "transfer_user_info",
    "transfer_complication", "cancel_user_info", "transfer_file", "cancel_file", "set_app_state", "set_paired", "connect", "disconnect", "crash",
    // widget
    "update_settings", "set_has_content", "did_open_url", "open_host_app", "refresh", "start_connection", "stop_connection", "list_devices",
    "update_devices", "query_properties", "set_properties", "list_scenes", "query_scenes", "update_scenes", "fire_scene",
    "container_changed", "mqtt_connect_failed",
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    do {
        let script = try LiveScript(yaml: text, file: "fuzz/script.yaml", callNames: fuzzedCallNames)
        _ = script.steps.count
    } catch {
        _ = error.description
    }
    return 0
}
