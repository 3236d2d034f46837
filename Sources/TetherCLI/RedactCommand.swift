import ArgumentParser
import CaptureSet
import Redaction

/// `tether redact SET --out NEW`: a copy of a capture set with its identifying values replaced.
struct RedactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redact",
        abstract: "Copy a capture set with Bluetooth addresses, device names, keys and MQTT credentials replaced.",
        discussion: """
            Replaces, consistently across capture.pcapng, manifest.yaml, baseline/ and live/: \
            Bluetooth device addresses (in every HCI command and event parameter that holds one, \
            advertising and EIR data, SMP key distribution, then wherever else their bytes stand in \
            a frame, and wherever a text spells them, in either byte order), device names, link \
            keys, IRKs, LTKs, out-of-band data, PINs and passkeys, MQTT client ids, user names and \
            passwords (and the widget account they are made from), and with --ip the IPv4 and IPv6 \
            addresses (checksums fixed). Texts are changed only in the values that hold these, never \
            in keys, core, event or call names. The same value gets the same placeholder everywhere; \
            every placeholder has the original's length, so TCP sequence numbers and offsets stay \
            valid. The new set is sealed and replays with the same verdicts (docs/redaction.md says \
            what is kept and why).

            Last, every byte of every new file is searched for every original value. If one is \
            left, nothing is written: the error lists each by file, byte offset and kind (never the \
            value). --allow-survivors writes the set anyway and lists them.

            It prints how many values of each kind it replaced, and the replacements per file.

              tether redact Captures/ciq-clean --out /tmp/ciq-clean-redacted
              tether redact Captures/widget-broker-drop --out /tmp/shared/broker-drop --ip
            """
    )

    @Argument(help: "The capture set to redact, e.g. Captures/ciq-clean. It is only read.")
    var set: String

    @Option(name: .long, help: "The new set's folder: must not exist (or be empty) and must not be inside SET.")
    var out: String

    @Flag(name: .long, help: "Replace IPv4 and IPv6 addresses too (documentation ranges 192.0.2.0/24, 2001:db8::/32), fixing the checksums.")
    var ip = false

    @Flag(name: .customLong("keep-names"), help: "Keep device names as they are.")
    var keepNames = false

    @Flag(name: .customLong("allow-survivors"), help: "Write the set even if the last search finds original values in it, and list them.")
    var allowSurvivors = false

    func validate() throws {
        guard CaptureSetDirectory.isCaptureSet(set) else {
            throw ValidationError("\(set) has no manifest.yaml, so it is not a capture set. Give a folder such as Captures/<name>.")
        }
    }

    func run() throws {
        let report: RedactionReport
        do {
            report = try SetRedactor.redact(
                set: set, to: out, options: RedactionOptions(ip: ip, keepNames: keepNames, allowSurvivors: allowSurvivors))
        } catch {
            throw CommandFailure.failed("cannot redact \(set): \(error)")
        }
        for warning in report.warnings { Terminal.warn("tether: warning: \(warning)") }
        if !report.survivors.isEmpty {
            Terminal.warn("tether: warning: \(report.survivors.count) original value(s) left in \(out) (--allow-survivors): listed below")
        }
        for line in report.lines { print(line) }
        print("Next: tether replay \(out), then tether inspect \(out) --frames")
    }
}
