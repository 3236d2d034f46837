import CaptureSet

extension SectionSchema {
    /// The schema of `integration`'s section; `nil` when it has no section or declares no field.
    public init?(of integration: any CoreIntegration) {
        guard let name = integration.sectionName else { return nil }
        let fields = integration.settings + integration.sectionFields
        guard !fields.isEmpty else { return nil }
        self.init(sectionName: name, fields: fields)
    }

}

extension ReplayError {
    /// A section value its schema refused, as replay reports a manifest error.
    init(_ violation: SectionSchemaViolation) {
        self = .manifest(path: violation.path, line: violation.line, field: violation.field, problem: violation.problem, hint: violation.hint)
    }
}
