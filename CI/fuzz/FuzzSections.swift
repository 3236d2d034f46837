// libFuzzer entry for the manifest sections of Tether's cores: the manifest is read as replay
// reads it (CaptureSetDirectory.decodeManifest, within the YAML budget), then each `messaging:`,
// `session:` and `ingest:` section is checked against its integration's schema (SectionSchema,
// with MessagingSectionSchema, SessionSectionSchema, IngestSectionSchema), and every scalar of the
// input is also tried as each setting's command-line value. Compiled by CI/fuzz/run into the
// CaptureSet module with Sources/CaptureSet/*.swift (except CaptureDigest.swift) and the three
// *SectionSchema.swift files; no core is compiled in. Refusals are expected answers; a trap,
// sanitizer report or hang is a finding.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    let schemas = [
        SectionSchema(sectionName: "messaging", fields: MessagingSectionSchema.settings + MessagingSectionSchema.fields),
        SectionSchema(sectionName: "session", fields: SessionSectionSchema.settings + SessionSectionSchema.fields),
        SectionSchema(sectionName: "ingest", fields: IngestSectionSchema.settings),
    ]
    // The command line's path: the whole input, and each of its lines, as every setting's value.
    let settings = MessagingSectionSchema.settings + SessionSectionSchema.settings + IngestSectionSchema.settings
    for candidate in [text] + text.split(separator: "\n").prefix(8).map(String.init) {
        for setting in settings {
            switch setting.value(from: candidate, option: "--\(setting.flag ?? setting.key)") {
            case .success(let value): _ = value
            case .failure(let error): _ = error.description
            }
        }
    }
    do {
        let manifest = try CaptureSetDirectory.decodeManifest(text, path: "fuzz/set/manifest.yaml")
        for schema in schemas {
            guard let section = manifest.section(named: schema.sectionName) else { continue }
            do {
                let findings = try schema.validate(section, manifestPath: "fuzz/set/manifest.yaml")
                _ = findings.warnings.joined()
            } catch {
                _ = error.description
            }
        }
    } catch {
        _ = error.description
    }
    return 0
}
