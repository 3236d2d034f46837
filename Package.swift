// swift-tools-version: 6.0
import PackageDescription

/// Tether: record BLE and UDP traffic into annotated capture sets and replay them, on a virtual
/// clock, against sans-I/O protocol cores. See README.md and docs/ for the shape of the package.
let package = Package(
    name: "Tether",
    // macOS 15, iOS 18, watchOS 11: the package uses Synchronization's Mutex and
    // String(validating:as:), both new in those releases (Swift 6's standard library). Linux is the
    // primary platform; on macOS the live features that need Linux (BlueZ, inotify, the kernel's
    // socket drop counter) say so at run time. iOS and watchOS are for the app-in-the-loop modules
    // (TetherTesting, TetherConnectIQ, TetherWatchConnectivity and what they link), which open no
    // socket; docs/app-in-the-loop.md says what was compiled for which platform.
    platforms: [.macOS(.v15), .iOS(.v18), .watchOS(.v11)],
    products: [
        .executable(name: "tether", targets: ["tether"]),
        .library(name: "CaptureKit", targets: ["CaptureKit"]),
        .library(name: "CaptureSet", targets: ["CaptureSet"]),
        .library(name: "Dissectors", targets: ["Dissectors"]),
        .library(name: "MQTT", targets: ["MQTT"]),
        .library(name: "IngestCore", targets: ["IngestCore"]),
        .library(name: "MonkeyC", targets: ["MonkeyC"]),
        .library(name: "MessagingCore", targets: ["MessagingCore"]),
        .library(name: "SessionCore", targets: ["SessionCore"]),
        .library(name: "WidgetCore", targets: ["WidgetCore"]),
        .library(name: "BehaviourTrace", targets: ["BehaviourTrace"]),
        .library(name: "ReplayKit", targets: ["ReplayKit"]),
        .library(name: "TetherIntegrations", targets: ["TetherIntegrations"]),
        .library(name: "TetherCLI", targets: ["TetherCLI"]),
        .library(name: "TetherTesting", targets: ["TetherTesting"]),
        .library(name: "TetherConnectIQ", targets: ["TetherConnectIQ"]),
        .library(name: "TetherWatchConnectivity", targets: ["TetherWatchConnectivity"]),
        .library(name: "TetherCoreBluetooth", targets: ["TetherCoreBluetooth"]),
        .library(name: "AppLoop", targets: ["AppLoop"]),
        .library(name: "TetherLive", targets: ["TetherLive"]),
        .library(name: "Emulation", targets: ["Emulation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
    ],
    targets: [
        // System libraries. Only LiveCapture links them, so the cores and readers build without them.
        .systemLibrary(
            name: "CPcap",
            pkgConfig: "libpcap",
            providers: [.apt(["libpcap-dev"])]
        ),
        .systemLibrary(
            name: "CBluetooth",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev"])]
        ),

        // Capture files: pcap, pcapng, btsnoop, PacketLogger. No dependencies, so the fuzz targets
        // can compile it alone.
        .target(name: "CaptureKit"),
        // Durations as people write them (`40ms`, `1.5s`, `2h`), read one way everywhere.
        .target(name: "Durations"),
        // A capture set on disk: manifest.yaml, capture.pcapng, baselines.
        .target(
            name: "CaptureSet",
            dependencies: [
                "CaptureKit", "Durations",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // HCI → ACL → L2CAP → ATT, GATT mapping; Ethernet/SLL/IP → UDP.
        .target(name: "Dissectors", dependencies: ["CaptureKit", "MQTT"]),
        // MQTT 3.1.1 and 5 control packets: decoding, encoding, framing a byte stream. No I/O.
        .target(name: "MQTT"),
        // Redaction of a capture set: addresses, names, keys, MQTT credentials (and IP addresses)
        // replaced consistently across the capture, the manifest and the traces.
        .target(name: "Redaction", dependencies: ["CaptureKit", "CaptureSet", "Dissectors", "JSONBytes", "MQTT"]),

        // The cores: pure Swift, no I/O, no clock.
        // The seeded and system random sources the cores take as inputs (one SplitMix64 for all).
        .target(name: "CoreRandom"),
        .target(name: "IngestCore", dependencies: ["JSONBytes"]),
        // Monkey C value serialization (Connect IQ messages; SessionCore's property lists).
        .target(name: "MonkeyC"),
        // The phone side of the Connect IQ companion link: devices, apps, send/receive, the link.
        .target(name: "MessagingCore", dependencies: ["MonkeyC", "CoreRandom", .product(name: "DequeModule", package: "swift-collections")]),
        // WatchConnectivity-style sessions over Tether's session link, phone and watch roles.
        .target(name: "SessionCore", dependencies: ["MonkeyC", "CoreRandom", .product(name: "DequeModule", package: "swift-collections")]),
        // The host-app ↔ widget channel (App Group container, refreshes, open-URL, IoT over MQTT), host and widget roles.
        .target(name: "WidgetCore", dependencies: ["CoreRandom", "JSONBytes"]),
        // Byte-level JSON shared by every reader and writer: string escaping, UTF-8 validation, hex digits.
        .target(name: "JSONBytes"),
        // The durable SQLite sink for IngestCore's chunks.
        .target(
            name: "IngestStore",
            dependencies: ["IngestCore", "StoreFiles", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // What every durable store shares: one writer per store (a lock file naming its holder),
        // and telling a SQLite file from another file before SQLite opens it.
        .target(name: "StoreFiles"),

        // The behaviour trace: events, JSON Lines reading and writing, trace diff. What a live host
        // and a replay both write, so "replay reproduces what really happened" is one `tether diff`.
        .target(name: "BehaviourTrace", dependencies: ["CaptureKit", "JSONBytes"]),
        // Monkey C values as JSON in traces and API-call records (the messaging, session and widget
        // integrations share it).
        .target(name: "MonkeyCTrace", dependencies: ["MonkeyC", "BehaviourTrace"]),
        // Virtual-clock replay that knows no core: the engine, the adapter and integration
        // protocols, set loading, expectations, reports, JUnit, frame matching.
        .target(name: "ReplayKit", dependencies: ["BehaviourTrace", "CaptureKit", "CaptureSet", "CoreRandom", "Dissectors", "Durations", "JSONBytes", "MQTT", .product(name: "DequeModule", package: "swift-collections")]),

        // The timeline report of `tether replay --html`: a model built while a replay streams, and
        // self-contained HTML pages (script, style and data inline). Knows no core and reads no capture.
        .target(name: "TimelineReport", dependencies: ["BehaviourTrace", "ReplayKit", "CaptureKit", "CaptureSet"]),

        // Live sources: libpcap, the BlueZ monitor channel; the incremental recorder. BlueZ exists
        // on Linux only: elsewhere CBluetooth is not linked and the monitor channel refuses to open.
        .target(name: "LiveCapture", dependencies: [
            "CPcap", .target(name: "CBluetooth", condition: .when(platforms: [.linux])), "CaptureKit", "CaptureSet", .product(name: "DequeModule", package: "swift-collections"),
        ]),
        // Batched datagram reads (recvmmsg, a GNU extension Swift's Glibc module does not show).
        .target(name: "CDatagramBatch"),
        // What every live host shares: the BLE bridge, scripts and their loop, tap recording, the
        // trace file, the realtime UDP sender.
        .target(
            name: "LiveHosts",
            dependencies: [
                "JSONBytes", "BehaviourTrace", "LiveCapture", "CaptureKit", "CaptureSet", "Durations",
                .product(name: "Yams", package: "Yams"),
            ]
        ),

        // One integration per core: everything replay needs about the core beyond the core itself
        // (its adapter, responder, driver, API-call records, trace mapping, manifest section and
        // settings), registered in one list, TetherIntegrations.builtIn. Each core's live host is a
        // target of its own (`…Live`, in the integration's `Live/` folder): replay, TetherTesting
        // and the SDK facades then link no socket, libpcap, BlueZ, NIO or SQLite code, so they can
        // build for Apple platforms.
        .target(
            name: "IngestIntegration",
            dependencies: ["ReplayKit", "BehaviourTrace", "IngestCore", "CaptureKit", "CaptureSet", "Dissectors", "CoreRandom", "JSONBytes"],
            path: "Sources/Integrations/Ingest",
            exclude: ["Live"]
        ),
        .target(
            name: "IngestLive",
            dependencies: [
                "IngestIntegration", "ReplayKit", "BehaviourTrace", "IngestCore", "IngestStore", "CaptureKit", "CaptureSet", "Dissectors", "LiveHosts", "LiveCapture",
                "CDatagramBatch", "CoreRandom", "JSONBytes",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/Integrations/Ingest/Live"
        ),
        .target(
            name: "MessagingIntegration",
            dependencies: ["ReplayKit", "BehaviourTrace", "MonkeyCTrace", "MessagingCore", "MonkeyC", "CaptureKit", "CaptureSet", "Dissectors", "CoreRandom"],
            path: "Sources/Integrations/Messaging",
            exclude: ["Live"]
        ),
        .target(
            name: "MessagingLive",
            dependencies: ["MessagingIntegration", "ReplayKit", "BehaviourTrace", "MonkeyCTrace", "MessagingCore", "MonkeyC", "CaptureKit", "CaptureSet", "LiveHosts", "LiveCapture"],
            path: "Sources/Integrations/Messaging/Live"
        ),
        .target(
            name: "SessionIntegration",
            dependencies: ["ReplayKit", "BehaviourTrace", "MonkeyCTrace", "SessionCore", "MonkeyC", "CaptureKit", "CaptureSet", "Dissectors"],
            path: "Sources/Integrations/Session",
            exclude: ["Live"]
        ),
        .target(
            name: "SessionLive",
            dependencies: [
                "SessionIntegration", "ReplayKit", "BehaviourTrace", "MonkeyCTrace", "SessionCore", "MonkeyC", "CaptureKit", "CaptureSet", "LiveHosts", "LiveCapture",
                "StoreFiles", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/Integrations/Session/Live"
        ),
        .target(
            name: "WidgetIntegration",
            dependencies: ["ReplayKit", "BehaviourTrace", "MonkeyCTrace", "WidgetCore", "MonkeyC", "MQTT", "CaptureKit", "CaptureSet", "Dissectors", "JSONBytes"],
            path: "Sources/Integrations/Widget",
            exclude: ["Live"]
        ),
        .target(
            name: "WidgetLive",
            dependencies: ["WidgetIntegration", "ReplayKit", "BehaviourTrace", "MonkeyCTrace", "WidgetCore", "MonkeyC", "MQTT", "CaptureKit", "CaptureSet", "Durations", "LiveHosts", "LiveCapture", "JSONBytes"],
            path: "Sources/Integrations/Widget/Live"
        ),
        // The list of Tether's own integrations.
        .target(
            name: "TetherIntegrations",
            dependencies: ["ReplayKit", "IngestIntegration", "MessagingIntegration", "SessionIntegration", "WidgetIntegration"],
            path: "Sources/Integrations/BuiltIn"
        ),
        // `tether emulate`: a recorded peripheral's GATT database and answers rebuilt from a capture,
        // and the generic responder that plays them back. Sans-I/O.
        .target(name: "Emulation", dependencies: ["CaptureKit", "CaptureSet", "Dissectors"]),
        // `tether emulate`'s live side: the responder behind a Bumble bridge (Harness/rigs/emulate_bridge.py).
        .target(name: "EmulationLive", dependencies: ["Emulation", "LiveHosts", "LiveCapture", "BehaviourTrace", "CaptureSet", "Dissectors"]),
        // One call from Swift Testing or XCTest: replay a set, get verdicts and the trace as values.
        // The `central` core: a capture's recorded peripheral on a virtual link (Emulation's
        // VirtualPeripheralLink), for the app's own CoreBluetooth code. Not one of `tether replay`'s cores.
        .target(name: "CentralIntegration", dependencies: ["ReplayKit", "BehaviourTrace", "Emulation", "Dissectors", "CaptureSet"],
                path: "Sources/Integrations/Central"),
        .target(name: "TetherTesting", dependencies: [
            "ReplayKit", "BehaviourTrace", "CaptureSet", "CaptureKit", "TetherIntegrations", "AppLoop", "TimelineReport", "CentralIntegration",
            .product(name: "DequeModule", package: "swift-collections"),
        ]),
        // What an SDK facade talks to: a core's host, replayed (TetherTesting's ReplaySession) or
        // live. Knows no core and no SDK.
        .target(name: "AppLoop", dependencies: ["BehaviourTrace", .product(name: "DequeModule", package: "swift-collections")]),
        // Garmin's Connect IQ Mobile SDK for iOS as Swift sees it, backed by MessagingCore through
        // an AppLoop host: the user's own companion-app code runs in the loop.
        .target(name: "TetherConnectIQ", dependencies: ["AppLoop", "BehaviourTrace", "MessagingCore", "MonkeyC", "MonkeyCTrace", "MonkeyCFoundation"]),
        // The SDK facades bound to a live host instead of a recording (LiveSession): the app's code
        // against the device, recorded as a capture set that ReplaySession replays with the same code.
        .target(name: "TetherLive", dependencies: ["AppLoop", "BehaviourTrace", "CaptureSet", "LiveCapture", "LiveHosts", "MessagingCore", "MessagingIntegration", "MessagingLive",
                                             "SessionCore", "SessionIntegration", "SessionLive"]),
        // Apple's WatchConnectivity (iOS side) as Swift sees it, backed by SessionCore through an
        // AppLoop host.
        .target(name: "TetherWatchConnectivity", dependencies: ["AppLoop", "BehaviourTrace", "SessionCore", "MonkeyC", "MonkeyCTrace", "MonkeyCFoundation"]),
        // Apple's CoreBluetooth (central role) as Swift sees it, backed by the `central` core
        // through an AppLoop host.
        .target(name: "TetherCoreBluetooth", dependencies: ["AppLoop", "BehaviourTrace"]),
        // Foundation values an app hands an SDK, to and from Monkey C values, under each SDK's
        // rules (what a Connect IQ message or a property list may hold): one converter for both facades.
        .target(name: "MonkeyCFoundation", dependencies: ["MonkeyC"]),

        // A behaviour trace written for other tools' viewers (Chrome trace-event JSON for Perfetto).
        .target(name: "TraceExport", dependencies: ["BehaviourTrace", "JSONBytes"]),

        // The command-line tool: commands live in a library so tests can call them.
        .target(
            name: "TetherCLI",
            dependencies: [
                "CaptureKit", "CaptureSet", "Dissectors", "Durations", "IngestCore", "IngestStore", "ReplayKit", "BehaviourTrace",
                "LiveCapture", "LiveHosts", "MessagingCore", "SessionCore", "WidgetCore", "MonkeyC", "MQTT",
                "IngestIntegration", "MessagingIntegration", "SessionIntegration", "WidgetIntegration", "TetherIntegrations", "Redaction",
                "IngestLive", "MessagingLive", "SessionLive", "WidgetLive",
                "TraceExport",
                "TimelineReport",
                "Emulation", "EmulationLive",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "tether", dependencies: ["TetherCLI", "TetherIntegrations"]),
        // A `tether` whose ingest core traps on purpose: the sweep's worker processes are tested
        // against it (Tests/TetherCLITests/SweepTrapTests.swift).
        .executableTarget(
            name: "tether-trap-fixture", dependencies: ["TetherCLI", "TetherIntegrations", "IngestIntegration", "ReplayKit", "BehaviourTrace", "CaptureSet"],
            path: "Tests/Fixtures/TetherTrapFixture"
        ),
        .executableTarget(
            name: "TetherBench",
            dependencies: ["CaptureKit", "Dissectors", "IngestCore", "ReplayKit", "BehaviourTrace", "CaptureSet", "MessagingCore", "SessionCore", "MonkeyC", "MQTT", "IngestIntegration", "MessagingIntegration", "SessionIntegration", "TetherIntegrations", "MonkeyCTrace", "IngestLive"]
        ),

        // Helpers shared by the test targets (a seeded generator, a temporary folder).
        .target(name: "TetherTestSupport", dependencies: ["CoreRandom", "TetherConnectIQ", "TetherWatchConnectivity"], path: "Tests/TetherTestSupport"),

        .testTarget(name: "CaptureKitTests", dependencies: ["TetherTestSupport", "CaptureKit"]),
        .testTarget(name: "CaptureSetTests", dependencies: ["CaptureSet", "CaptureKit"]),
        .testTarget(name: "DissectorsTests", dependencies: ["TetherTestSupport", "Dissectors", "CaptureKit", "MQTT"]),
        .testTarget(
            name: "RedactionTests",
            dependencies: ["TetherTestSupport", "Redaction", "CaptureKit", "CaptureSet", "Dissectors", "MQTT", "ReplayKit", "BehaviourTrace", "TetherIntegrations"]
        ),
        .testTarget(name: "MQTTTests", dependencies: ["TetherTestSupport", "MQTT"]),
        .testTarget(name: "IngestCoreTests", dependencies: ["TetherTestSupport", "IngestCore"]),
        .testTarget(name: "MonkeyCTests", dependencies: ["TetherTestSupport", "MonkeyC"]),
        .testTarget(name: "MessagingCoreTests", dependencies: ["TetherTestSupport", "MessagingCore", "MonkeyC"]),
        .testTarget(name: "SessionCoreTests", dependencies: ["TetherTestSupport", "SessionCore", "MonkeyC"]),
        .testTarget(name: "WidgetCoreTests", dependencies: ["TetherTestSupport", "WidgetCore"]),
        .testTarget(
            name: "IngestStoreTests",
            dependencies: ["IngestStore", "IngestCore", "StoreFiles", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(name: "StoreFilesTests", dependencies: ["StoreFiles"]),
        .testTarget(name: "BehaviourTraceTests", dependencies: ["TetherTestSupport", "BehaviourTrace"]),
        .testTarget(name: "TraceExportTests", dependencies: ["TetherTestSupport", "TraceExport", "BehaviourTrace"]),
        .testTarget(
            name: "ReplayKitTests",
            dependencies: ["TetherTestSupport", "ReplayKit", "BehaviourTrace", "TetherIntegrations", "IngestIntegration", "IngestCore", "CaptureKit", "CaptureSet", "Dissectors", .product(name: "Yams", package: "Yams")]
        ),
        .testTarget(
            name: "IntegrationsTests",
            dependencies: [
                "TetherTestSupport", "ReplayKit", "BehaviourTrace", "MonkeyCTrace", "TetherIntegrations", "IngestIntegration", "MessagingIntegration", "SessionIntegration", "WidgetIntegration",
                "CentralIntegration", "Emulation", "IngestLive", "MessagingLive", "SessionLive", "WidgetLive",
                "IngestCore", "IngestStore", "MessagingCore", "SessionCore", "WidgetCore", "MonkeyC", "MQTT", "LiveHosts", "LiveCapture", "CaptureKit", "CaptureSet", "Dissectors",
                .product(name: "Yams", package: "Yams"), .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "TimelineReportTests", dependencies: ["TimelineReport", "ReplayKit", "BehaviourTrace", "CaptureSet"]),
        .testTarget(name: "AppLoopTests", dependencies: ["AppLoop"]),
        .testTarget(name: "DurationsTests", dependencies: ["Durations"]),
        .testTarget(name: "TetherTestingTests", dependencies: ["TetherTesting", "ReplayKit", "BehaviourTrace", "TetherIntegrations", "CaptureSet"]),
        .testTarget(name: "MonkeyCFoundationTests", dependencies: ["MonkeyCFoundation", "MonkeyC"]),
        .testTarget(name: "TetherConnectIQTests", dependencies: ["TetherTestSupport", "TetherConnectIQ", "TetherTesting", "BehaviourTrace"]),
        .testTarget(name: "TetherCoreBluetoothTests", dependencies: ["TetherCoreBluetooth", "TetherTesting", "BehaviourTrace", "Emulation", "CaptureKit", "Dissectors"]),
        .testTarget(name: "TetherWatchConnectivityTests", dependencies: ["TetherTestSupport", "TetherWatchConnectivity", "TetherTesting", "BehaviourTrace"]),
        .testTarget(name: "LiveCaptureTests", dependencies: ["TetherTestSupport", "LiveCapture", "CaptureKit", "CaptureSet"]),
        .testTarget(name: "EmulationTests", dependencies: ["TetherTestSupport", "Emulation", "CaptureKit", "CaptureSet", "Dissectors", "SessionCore"]),
        .testTarget(name: "JSONBytesTests", dependencies: ["JSONBytes", "TetherTestSupport"]),
        .testTarget(
            name: "TetherCLITests",
            dependencies: ["TetherTestSupport", "TetherCLI", "TetherIntegrations", "CaptureKit", "CaptureSet", "Dissectors", "ReplayKit", "BehaviourTrace", "IngestCore", "IngestStore", "LiveHosts", "IngestIntegration", "MessagingIntegration", "SessionIntegration", "WidgetIntegration", "Redaction",
                          "IngestLive", "MessagingLive", "SessionLive", "WidgetLive", "TetherLive", "TetherConnectIQ", "TetherWatchConnectivity", "TetherTesting"],
            exclude: ["Golden"]
        ),
    ]
)
