/// The version of Tether itself, written into every manifest it creates so a capture set says which
/// recorder made it.
public enum TetherVersion {
    /// Semantic version of this build of Tether.
    public static let current = "0.1.0"
}
