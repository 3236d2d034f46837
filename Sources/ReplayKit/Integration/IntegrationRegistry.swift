import BehaviourTrace
import CaptureKit
import CaptureSet

/// The integrations a replay may use, in the order their adapters run. The command line, the set
/// loader and the help text are built from one registry; `TetherIntegrations.builtIn` is Tether's.
public struct IntegrationRegistry: Sendable {
    /// The integrations, in adapter order.
    public private(set) var integrations: [any CoreIntegration]

    /// A registry of the given integrations.
    /// - Precondition: names and section names are unique (a programming error, caught at once
    ///   by ``validated()`` in tests and at the command line's start).
    public init(_ integrations: [any CoreIntegration] = []) {
        self.integrations = integrations
    }

    /// This registry with `integration` appended after the others.
    public func adding(_ integration: any CoreIntegration) -> IntegrationRegistry {
        var copy = self
        copy.integrations.append(integration)
        return copy
    }

    /// This registry with `more` appended.
    public func adding(contentsOf more: [any CoreIntegration]) -> IntegrationRegistry {
        var copy = self
        copy.integrations += more
        return copy
    }

    /// The registered core names, in order.
    public var names: [String] { integrations.map(\.name) }

    /// Every integration's ``CoreIntegration/correlations``, by core name: what a
    /// ``CorrelationTracker`` looks for in a trace of these cores.
    public var correlations: [TraceName: [TraceCorrelation]] {
        var byCore: [TraceName: [TraceCorrelation]] = [:]
        for integration in integrations where !integration.correlations.isEmpty {
            byCore[TraceName(integration.name), default: []] += integration.correlations
        }
        return byCore
    }

    /// The integration of the core called `name`.
    public func integration(named name: String) -> (any CoreIntegration)? {
        integrations.first { $0.name == name }
    }

    /// The integration that owns the manifest section `section`.
    public func integration(owningSection section: String) -> (any CoreIntegration)? {
        integrations.first { $0.sectionName == section }
    }

    /// The registry itself if names and sections are unique and well formed, else why not.
    public func validated() -> Result<IntegrationRegistry, IntegrationRegistryError> {
        var names = Set<String>()
        var sections = Set<String>()
        var flags = Set<String>()
        for integration in integrations {
            let name = integration.name
            guard !name.isEmpty, name.utf8.allSatisfy({ Self.isNameByte($0) }) else {
                return .failure(.init(message: "core name \"\(name)\" must be lower-case letters, digits, - and _"))
            }
            guard names.insert(name).inserted else { return .failure(.init(message: "core \(name) is registered twice")) }
            if let section = integration.sectionName {
                guard !CaptureSetManifest.reservedKeys.contains(section) else {
                    return .failure(.init(message: "core \(name): section \"\(section)\" is a manifest key of its own"))
                }
                guard sections.insert(section).inserted else {
                    return .failure(.init(message: "core \(name): section \"\(section)\" is claimed by another core"))
                }
            }
            for flag in integration.settings.compactMap(\.flag) where !flags.insert(flag).inserted {
                return .failure(.init(message: "core \(name): option --\(flag) is declared by another core"))
            }
        }
        return .success(self)
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
            || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
    }

    /// A list of the registered cores for messages: `ingest, messaging, session, widget`.
    public var namesText: String { names.isEmpty ? "(none)" : names.joined(separator: ", ") }

    /// The integrations that replay a set with this manifest, in registry order.
    ///
    /// - Throws: ``ReplayError/manifest(path:line:field:problem:)`` for an interface whose
    ///   `core:` names no registered core or a core that does not replay its role, and for a
    ///   top-level section that no registered integration claims. The message names the
    ///   registered cores (and a close spelling, when there is one).
    public func select(for manifest: CaptureSetManifest, manifestPath: String) throws(ReplayError) -> [any CoreIntegration] {
        var chosen = Set<String>()
        for section in manifest.sections {
            guard let owner = integration(owningSection: section.name) else {
                let sections = integrations.compactMap(\.sectionName)
                throw .manifest(path: manifestPath, line: section.line, field: section.name,
                                problem: "no registered core claims the section `\(section.name)`"
                                    + Self.suggestion(for: section.name, among: sections)
                                    + " (registered cores: \(namesText); their sections: \(sections.isEmpty ? "(none)" : sections.joined(separator: ", ")))",
                                hint: "Fix the key's spelling, or register the core that owns it (docs/extending.md).")
            }
            if owner.selectedBySection { chosen.insert(owner.name) }
        }
        if manifest.interfaces.isEmpty {
            for integration in integrations where integration.replaysUndescribedInterfaces { chosen.insert(integration.name) }
        }
        let sectionNames = Set(manifest.sections.map(\.name))
        for (i, interface) in manifest.interfaces.enumerated() {
            if let core = interface.core {
                guard let owner = integration(named: core) else {
                    throw .manifest(path: manifestPath, line: manifest.sourceLines["interfaces[\(i)].core"], field: "interfaces[\(i)].core",
                                    problem: "\"\(core)\" is not a registered core" + Self.suggestion(for: core, among: names)
                                        + " (registered cores: \(namesText))",
                                    hint: "Fix the name, or register the core's integration (docs/extending.md).")
                }
                if let role = interface.role, role != .apiCalls, role != .context, !owner.replayedRoles.contains(role) {
                    throw .manifest(path: manifestPath, line: manifest.sourceLines["interfaces[\(i)].core"], field: "interfaces[\(i)].core",
                                    problem: "core \(core) does not replay `\(role)` interfaces (it replays \(owner.replayedRoles.map(\.rawValue).sorted().joined(separator: ", ")))",
                                    hint: "Name a core that replays this role, or fix the interface's role.")
                }
                chosen.insert(core)
                continue
            }
            guard let role = interface.role else {
                for integration in integrations where integration.replaysUndescribedInterfaces { chosen.insert(integration.name) }
                continue
            }
            if role == .apiCalls || role == .context { continue }
            if let owner = Self.owner(of: role, among: integrations, sections: sectionNames) { chosen.insert(owner.name) }
        }
        return integrations.filter { chosen.contains($0.name) }
    }

    /// The core an interface's frames go to when it does not name one: what ``select(for:manifestPath:)``
    /// decided, for the engine's routing.
    public func core(forUnnamed role: InterfaceRole?, selected: [any CoreIntegration], sections: Set<String>) -> String? {
        guard let role else { return selected.first { $0.replaysUndescribedInterfaces }?.name }
        return Self.owner(of: role, among: selected, sections: sections)?.name
    }

    /// Of the integrations that replay `role`: the one whose section the manifest has (unless
    /// another of the role's defaults has its section too), else the role's default, else the
    /// first that replays it.
    static func owner(of role: InterfaceRole, among integrations: [any CoreIntegration], sections: Set<String>) -> (any CoreIntegration)? {
        let candidates = integrations.filter { $0.replayedRoles.contains(role) }
        let hasSection: (any CoreIntegration) -> Bool = { $0.sectionName.map(sections.contains) ?? false }
        if let withSection = candidates.first(where: hasSection),
           !candidates.contains(where: { $0.name != withSection.name && $0.defaultForRoles.contains(role) && hasSection($0) }) {
            return withSection
        }
        return candidates.first { $0.defaultForRoles.contains(role) } ?? candidates.first
    }

    /// ` (did you mean "messaging"?)` when a registered name is one or two edits away.
    static func suggestion(for word: String, among candidates: [String]) -> String {
        let best = candidates.map { ($0, editDistance(word, $0)) }.min { $0.1 < $1.1 }
        guard let (name, distance) = best, distance <= 2, distance < max(word.count, 1) else { return "" }
        return " (did you mean \"\(name)\"?)"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// Why a registry cannot be used: two cores with one name, a section claimed twice.
public struct IntegrationRegistryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The sentence to print.
    public var message: String
    /// The sentence.
    public var description: String { message }
}
