// Apps import only the SDK module and use Foundation's types (`UUID`, `URL`, `Data`) through it,
// as `import ConnectIQ` gives them on iOS.
@_exported import Foundation
