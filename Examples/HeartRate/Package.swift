// swift-tools-version: 6.0
import PackageDescription

/// HeartRate: a Bluetooth Heart Rate Service client written as a sans-I/O core, the way a user of
/// Tether writes one, plus its Tether integration, a command that replays its capture sets, and
/// Swift Testing tests that replay them in one call. Tether is a dependency by path; nothing in
/// Tether was changed to add this core (docs/extending.md in Tether walks through it).
let package = Package(
    name: "HeartRate",
    // macOS 15 to match Tether.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HeartRateCore", targets: ["HeartRateCore"]),
        .library(name: "HeartRateIntegration", targets: ["HeartRateIntegration"]),
        .executable(name: "hr-tether", targets: ["hr-tether"]),
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
        .testTarget(name: "HeartRateCoreTests", dependencies: ["HeartRateCore"]),
        .testTarget(
            name: "HeartRateIntegrationTests",
            dependencies: ["HeartRateIntegration", "HeartRateCore", .product(name: "TetherTesting", package: "Tether")]
        ),
    ]
)
