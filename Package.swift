// swift-tools-version:6.2
import PackageDescription
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Settings for every target of ours: Swift 6 language mode (the package default), warnings as errors,
/// and internal imports by default: an import is internal unless written `public`/`package import`
/// because the file's public or package declarations show that module's types. MemberImportVisibility
/// (a file uses another module's members only if it imports that module) is checked in debug builds,
/// which `make test` compiles: in the release fuzz build the compiler attributes libc's `timespec` and
/// `tm` members to CoreFoundation instead of Glibc and refuses files that import only Foundation or
/// Glibc (docs/DEVELOPMENT.md). What the debug build proves holds for every configuration.
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility", .when(configuration: .debug)),
]

let package = Package(
    name: "orderlive",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "orderlive", targets: ["orderlive"]),
        .library(name: "CheckedInput", targets: ["CheckedInput"]),
        .library(name: "AsyncSignals", targets: ["AsyncSignals"]),
        .library(name: "CoalescedLogging", targets: ["CoalescedLogging"]),
        .library(name: "JSONToolkit", targets: ["JSONToolkit"]),
        .library(name: "ServerSentEvents", targets: ["ServerSentEvents"]),
        .library(name: "CurlHTTP", targets: ["CurlHTTP"]),
        .library(name: "EventStream", targets: ["EventStream"]),
        .library(name: "Sandbox", targets: ["Sandbox"]),
        .library(name: "AuthSession", targets: ["AuthSession"]),
        .library(name: "StoreModel", targets: ["StoreModel"]),
        .library(name: "SQLiteStore", targets: ["SQLiteStore"]),
        .library(name: "PostgresStore", targets: ["PostgresStore"]),
        .library(name: "OrderSync", targets: ["OrderSync"]),
        .library(name: "PushIngest", targets: ["PushIngest"]),
        .library(name: "LocalHTTP", targets: ["LocalHTTP"]),
        .library(name: "OrdersAPI", targets: ["OrdersAPI"]),
        .library(name: "Agent", targets: ["Agent"]),
        .library(name: "Commands", targets: ["Commands"]),
        .library(name: "WebhookDelivery", targets: ["WebhookDelivery"]),
        .library(name: "Telemetry", targets: ["Telemetry"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.0.0", traits: [.defaults, "YAML"]),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.0.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        // NIO is Hummingbird's own foundation: LocalHTTP adds its channel handlers (HTTP version, bounds, limits).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        // HTTP/2 on both listeners (DESIGN §14): framing, HPACK, flow control and its abuse limits.
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.45.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.9.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        // The second store engine (DESIGN §12): PostgreSQL over NIO, TLS per `sslmode` with NIOSSL.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // JWTs on the orders API (DESIGN §14): verification by a well-kept library, no signature code of ours.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // OTLP export of metrics, logs and traces (DESIGN §14) over HTTP and gRPC (`telemetry.protocol`,
        // `OTEL_EXPORTER_OTLP_PROTOCOL`): without the gRPC trait, swift-otel stops the process with a
        // fatalError when that standard variable says `grpc`. Spans are made through
        // swift-distributed-tracing, which Hummingbird already brings.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP", "OTLPGRPC"]),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(
            name: "CheckedInput",
            swiftSettings: strict
        ),
        .target(
            name: "AsyncSignals",
            swiftSettings: strict
        ),
        .target(
            name: "CoalescedLogging",
            dependencies: ["AsyncSignals", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(
            name: "JSONToolkit",
            dependencies: ["CheckedInput"],
            swiftSettings: strict
        ),
        .target(
            name: "ServerSentEvents",
            swiftSettings: strict
        ),
        .target(
            name: "CurlHTTP",
            dependencies: [
                "AsyncSignals",
                "CCurl",
                "CheckedInput",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict,
            // GnuTLS's constructor looks this symbol up through the dynamic linker, so every
            // executable linking CurlHTTP must export it (GnuTLSInitialization.swift says why).
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=_gnutls_global_init_skip"])]
        ),
        .target(
            name: "EventStream",
            dependencies: [
                "AsyncSignals",
                "CheckedInput",
                "ServerSentEvents",
                "CurlHTTP",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "AuthSession",
            dependencies: [
                "CheckedInput",
                "JSONToolkit",
                "CurlHTTP",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            // The store's vocabulary, apart from its engines: no database linked.
            name: "StoreModel",
            dependencies: ["CheckedInput", "JSONToolkit"],
            swiftSettings: strict
        ),
        .target(
            name: "SQLiteStore",
            dependencies: [
                "AsyncSignals", "StoreModel", .product(name: "GRDB", package: "GRDB.swift"),
                // The C API under GRDB, for the per-event statements (DirectStatement).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "PostgresStore",
            dependencies: [
                "AsyncSignals", "StoreModel", "CheckedInput",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "OrderSync",
            dependencies: [
                "AsyncSignals", "StoreModel", "CheckedInput", "CoalescedLogging", "JSONToolkit", "ServerSentEvents",
                "AuthSession", "CurlHTTP", "EventStream",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        .target(
            // The one HTTP floor under both listeners: HTTP/1 child channel, bounds, limits, errors, routes.
            name: "LocalHTTP",
            dependencies: [
                "AsyncSignals", "CheckedInput", "CoalescedLogging", "COpenSSL", "JSONToolkit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "OrdersAPI",
            dependencies: [
                "AsyncSignals", "StoreModel", "CheckedInput", "CoalescedLogging", "JSONToolkit", "LocalHTTP", "ServerSentEvents",
                "WebhookSigning",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "WebhookSigning",
            dependencies: ["CheckedInput", "COpenSSL"],
            swiftSettings: strict
        ),
        .target(
            name: "WebhookDelivery",
            dependencies: [
                "AsyncSignals", "CheckedInput", "CurlHTTP", "JSONToolkit", "StoreModel", "WebhookSigning",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "PushIngest",
            dependencies: [
                "AsyncSignals", "StoreModel", "CheckedInput", "COpenSSL", "CoalescedLogging", "JSONToolkit", "LocalHTTP", "WebhookSigning",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Sandbox",
            dependencies: [
                "AsyncSignals",
                "CheckedInput",
                "JSONToolkit",
                "ServerSentEvents",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Agent",
            dependencies: [
                "AsyncSignals", "StoreModel",
                "CheckedInput", "LocalHTTP",
                "JSONToolkit",
                
                "CurlHTTP",
                "EventStream",
                "AuthSession",
                "SQLiteStore",
                "PostgresStore",
                "OrderSync",
                "PushIngest",
                "OrdersAPI",
                "WebhookSigning",
                "WebhookDelivery",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
        .target(
            // The operator's commands: each command's rules and output, between the executable's
            // argument declarations and the agent's runtime.
            name: "Commands",
            dependencies: [
                "Agent", "AsyncSignals", "AuthSession", "CheckedInput", "CurlHTTP", "EventStream", "JSONToolkit", "SQLiteStore",
                "OrderSync", "OrdersAPI", "PushIngest", "Sandbox", "ServerSentEvents", "StoreModel", "Telemetry", "WebhookDelivery",
                "WebhookSigning",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Telemetry",
            dependencies: [
                "Agent", "CoalescedLogging",
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "orderlive",
            dependencies: [
                "Agent", "Commands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .target(
            // The small layer of the test kit: clocks, randomness, captured logs, child-process
            // helpers. No in-house module beyond AsyncSignals, so a unit test links no server.
            name: "TestKit",
            dependencies: [
                "AsyncSignals",
                .product(name: "Logging", package: "swift-log"), .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            path: "Tests/TestKit",
            swiftSettings: strict
        ),
        .target(
            // The large layer: real servers on 127.0.0.1 (push listener, orders API, Sandbox,
            // PostgreSQL, Chromium) over a real store in a temporary directory.
            name: "TestHarnesses",
            dependencies: [
                "AsyncSignals", "StoreModel", "AuthSession", "CurlHTTP", "EventStream", "SQLiteStore", "OrderSync", "PushIngest", "Sandbox",
                "OrdersAPI", "ServerSentEvents", "TestKit", "LocalHTTP", "WebhookSigning", "JSONToolkit", "CheckedInput",
                .product(name: "Logging", package: "swift-log"), .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/TestHarnesses",
            swiftSettings: strict
        ),
        .testTarget(
            name: "CheckedInputTests",
            dependencies: ["CheckedInput"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CoalescedLoggingTests",
            dependencies: [
                "AsyncSignals", "CoalescedLogging", "TestKit", .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AsyncSignalsTests",
            dependencies: ["AsyncSignals", "TestKit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "JSONToolkitTests",
            dependencies: ["JSONToolkit"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ServerSentEventsTests",
            dependencies: ["ServerSentEvents"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CurlHTTPTests",
            dependencies: [
                "AsyncSignals", "CheckedInput", "CurlHTTP", "Sandbox", "TestHarnesses", "TestKit", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "EventStreamTests",
            dependencies: [
                "AsyncSignals", "EventStream", "Sandbox", "CurlHTTP", "ServerSentEvents", "TestKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AuthSessionTests",
            dependencies: [
                "AuthSession", "Sandbox", "CurlHTTP", "TestKit", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SQLiteStoreTests",
            dependencies: [
                "SQLiteStore", "StoreModel", "ServerSentEvents", "Sandbox", "CurlHTTP", "EventStream", "TestHarnesses", "TestKit",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            // The store's behaviour, one body of tests over both engines (SQLite and PostgreSQL).
            name: "StoreEngineTests",
            dependencies: [
                "AsyncSignals", "StoreModel", "SQLiteStore", "OrderSync", "PostgresStore", "TestHarnesses", "TestKit",
                "CurlHTTP", "OrdersAPI", "WebhookSigning",
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "OrderSyncTests",
            dependencies: [
                "OrderSync", "StoreModel", "AsyncSignals", "JSONToolkit", "SQLiteStore", "ServerSentEvents", "Sandbox", "AuthSession",
                "CurlHTTP", "EventStream", "TestHarnesses", "TestKit", .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PushIngestTests",
            dependencies: [
                "PushIngest", "StoreModel", "AsyncSignals", "JSONToolkit", "SQLiteStore", "CurlHTTP", "LocalHTTP", "TestHarnesses", "TestKit",
                "WebhookSigning",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"), .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            // The listener floor's NIO handlers on embedded channels (STYLE: no sockets needed).
            name: "LocalHTTPTests",
            dependencies: [
                "CheckedInput", "LocalHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "OrdersAPITests",
            dependencies: [
                "OrdersAPI", "StoreModel", "SQLiteStore", "CurlHTTP", "AsyncSignals", "TestHarnesses", "TestKit", "WebhookSigning",
                "LocalHTTP", .product(name: "HTTPTypes", package: "swift-http-types"),
                // FeedHeartbeatTests: the connection handler on an embedded channel and loop.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CommandsTests",
            dependencies: [
                "Commands", "Agent", "CurlHTTP", "EventStream", "SQLiteStore", "Sandbox", "ServerSentEvents", "StoreModel", "TestKit",
                .product(name: "Logging", package: "swift-log"), .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AgentTests",
            dependencies: [
                "Agent", "StoreModel", "AsyncSignals", "AuthSession", "Sandbox", "SQLiteStore", "CurlHTTP", "PushIngest", "WebhookDelivery", "WebhookSigning",
                "EventStream", "LocalHTTP", "OrderSync", "OrdersAPI", "PostgresStore", "Telemetry", "CheckedInput",
                .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "OTel", package: "swift-otel"),
                .product(name: "InMemoryLogging", package: "swift-log"), .product(name: "Prometheus", package: "swift-prometheus"),
                "TestHarnesses", "TestKit", .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
    ]
)

// The libFuzzer executables (docs/FUZZING.md). They exist only when ORDERLIVE_FUZZ is set, because
// they link only with `--sanitize=fuzzer` (libFuzzer brings `main`); and they are targets of this
// package, not of a separate one, because SwiftPM instruments only the root package's targets for
// coverage: from a separate package, the parsers under test ran blind. `make fuzz-build` sets it.
if ProcessInfo.processInfo.environment["ORDERLIVE_FUZZ"] != nil {
    package.targets += [
        .executableTarget(name: "ParserFuzz", dependencies: ["ServerSentEvents"], path: "Fuzz/Sources/ParserFuzz"),
        .executableTarget(
            name: "InputFuzz",
            dependencies: [
                "Agent", "AuthSession", "CurlHTTP", "EventStream", "JSONToolkit", "SQLiteStore", "OrderSync", "OrdersAPI", "PushIngest",
                "StoreModel", "ServerSentEvents", "WebhookSigning", "LocalHTTP", "CheckedInput",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            path: "Fuzz/Sources/InputFuzz"
        ),
    ]
}
