// swift-tools-version: 6.0
import PackageDescription

/// HeartRate: a Bluetooth Heart Rate Service client written as a sans-I/O core, the way a user of
/// Tether writes one, plus its Tether integration, a command that replays its capture sets, and
/// Swift Testing tests that replay them in one call. Tether is a dependency by path; nothing in
/// Tether was changed to add this core (docs/extending.md in Tether walks through it). Beside it,
/// HeartRateMonitor: a plain CoreBluetooth app class whose tests replay the same sets through
/// TetherCoreBluetooth.
let package = Package(
    name: "HeartRate",
    // macOS 15 and iOS 18 to match Tether. iOS is declared for HeartRateMonitor, which imports
    // the real CoreBluetooth there; nothing is compiled for iOS here (no Apple SDK on this machine).
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "HeartRateCore", targets: ["HeartRateCore"]),
        .library(name: "HeartRateIntegration", targets: ["HeartRateIntegration"]),
        .executable(name: "hr-tether", targets: ["hr-tether"]),
        .library(name: "HeartRateMonitor", targets: ["HeartRateMonitor"]),
    ],
    dependencies: [
        .package(name: "Tether", path: "../.."),
    ],
    targets: [
        // The GATT-level Heart Rate client and its codecs: no I/O, no clock, no dependencies.
        .target(name: "HeartRateCore"),
        // The core as Tether's replay sees it: its manifest section, adapter and settings.
        .target(
            name: "HeartRateIntegration",
            dependencies: [
                "HeartRateCore",
                .product(name: "ReplayKit", package: "Tether"),
                .product(name: "Dissectors", package: "Tether"),
            ]
        ),
        // `tether` with the heart_rate core registered.
        .executableTarget(
            name: "hr-tether",
            dependencies: [
                "HeartRateIntegration",
                .product(name: "TetherCLI", package: "Tether"),
                .product(name: "TetherIntegrations", package: "Tether"),
            ]
        ),
        // An app's heart-rate strap client written against CoreBluetooth only: on Apple platforms
        // the real framework, on Linux Tether's facade of it.
        .target(
            name: "HeartRateMonitor",
            dependencies: [
                .product(name: "TetherCoreBluetooth", package: "Tether", condition: .when(platforms: [.linux])),
            ]
        ),
        .testTarget(name: "HeartRateCoreTests", dependencies: ["HeartRateCore"]),
        .testTarget(
            name: "HeartRateIntegrationTests",
            dependencies: [
                "HeartRateIntegration", "HeartRateCore", .product(name: "TetherTesting", package: "Tether"),
                .product(name: "ReplayKit", package: "Tether"), .product(name: "Dissectors", package: "Tether"),
            ]
        ),
        // HeartRateMonitor against the recorded straps, replayed by TetherTesting.ReplaySession.
        .testTarget(
            name: "HeartRateMonitorTests",
            dependencies: [
                "HeartRateMonitor",
                .product(name: "TetherTesting", package: "Tether"),
                .product(name: "TetherCoreBluetooth", package: "Tether"),
            ]
        ),
    ]
)
