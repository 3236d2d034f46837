// Apps import only the SDK module and use Foundation's types (`UUID`, `Data`, `NSNumber`,
// `NSError`) through it, as `import CoreBluetooth` gives them on iOS.
@_exported import Foundation
