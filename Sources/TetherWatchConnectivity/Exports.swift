// Apps import only the SDK module and use Foundation's types (`Data`, `URL`, `Progress`,
// `Date`) through it, as `import WatchConnectivity` gives them on iOS.
@_exported import Foundation
