// swift-tools-version: 6.0
import PackageDescription

/// WatchSync: the kind of phone-side sync layer companion apps have — it sends each finished
/// workout to the Garmin watch app (Connect IQ) and to the Apple Watch (WatchConnectivity),
/// retries failed sends and queues while the watch is unreachable — written only against the two
/// SDKs' APIs. On iOS it imports ConnectIQ and WatchConnectivity; here it imports Tether's
/// facades of them, and its tests replay Tether's committed recordings through it
/// (docs/app-in-the-loop.md in Tether).
let package = Package(
    name: "WatchSync",
    platforms: [.macOS(.v15), .iOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "WatchSync", targets: ["WatchSync"]),
    ],
    dependencies: [
        .package(name: "Tether", path: "../.."),
    ],
    targets: [
        // The app's code: on Apple platforms the real SDKs, elsewhere Tether's facades.
        .target(
            name: "WatchSync",
            dependencies: [
                .product(name: "TetherConnectIQ", package: "Tether", condition: .when(platforms: [.linux])),
                .product(name: "TetherWatchConnectivity", package: "Tether", condition: .when(platforms: [.linux])),
            ]
        ),
        .testTarget(
            name: "WatchSyncTests",
            dependencies: ["WatchSync", .product(name: "TetherTesting", package: "Tether"), .product(name: "TetherWatchConnectivity", package: "Tether")]
        ),
    ]
)
