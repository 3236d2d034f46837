/// The JSON type of a value that is not the one a member needs, for rejection details.
enum JSONType: Sendable, Hashable, CustomStringConvertible {
    case string, object, array, boolean, null, number

    /// "a string", "an object", …: how details name the type.
    var description: String {
        switch self {
        case .string: "a string"
        case .object: "an object"
        case .array: "an array"
        case .boolean: "a boolean"
        case .null: "null"
        case .number: "a number"
        }
    }
}
