/// One answer per capture interface, worked out on the interface's first frame and kept: a
/// prescan asks of every frame whether its interface is one it reads, and looking the manifest's
/// description up for each frame copied the description (its texts and parameters) each time.
///
/// Indices come from frames the reader has checked against its interfaces, so the table holds at
/// most one entry per interface the file describes.
///
/// Inlinable: a prescan in another module asks it of every frame, and unspecialized each call
/// looked up the generic type's metadata.
public struct PerInterface<Value> {
    @usableFromInline var answers: [Value?] = []

    /// An empty table.
    @inlinable public init() {}

    /// The answer for interface `index`, made by `answer` the first time it is asked.
    @inlinable
    public mutating func value(for index: Int, _ answer: () -> Value) -> Value {
        if index < answers.count, let known = answers[index] { return known }
        let made = answer()
        if index >= answers.count { answers.append(contentsOf: repeatElement(nil, count: index + 1 - answers.count)) }
        answers[index] = made
        return made
    }
}
