@_exported import IngestIntegration
@_exported import MessagingIntegration
@_exported import ReplayKit
@_exported import SessionIntegration
@_exported import WidgetIntegration

/// Tether's own integrations, in the order their adapters run.
public enum TetherIntegrations {
    /// Ingest, messaging, session, widget: the one list the command line, the set loader and the
    /// help text are built from. A user's core is added after them:
    /// `TetherIntegrations.builtIn.adding(HeartRateIntegration())`.
    public static let builtIn = IntegrationRegistry([
        IngestIntegration(), MessagingIntegration(), SessionIntegration(), WidgetIntegration(),
    ])
}
