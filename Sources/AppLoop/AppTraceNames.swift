import BehaviourTrace

/// The app's own events in a trace (core `app`, docs/app-in-the-loop.md): what the facades write
/// for the calls the app made and the callbacks it was given, declared once for every facade and
/// both sessions.
extension TraceName {
    /// The app's core name.
    public static let app: TraceName = "app"
    /// A call the app made through a facade.
    public static let appCall: TraceName = "app_call"
    /// A callback a facade delivered to the app.
    public static let appCallback: TraceName = "callback"
    /// Something the app did that the host cannot answer as the device would.
    public static let appWarning: TraceName = "warning"
}
