// swift-tools-version:6.2
import PackageDescription

// Release-mode benchmarks, kept out of the main package so `make test` never builds the reference
// implementations. Run with `make bench` from the repository root.
let package = Package(
    name: "orderlive-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "orderlive", path: ".."),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", exact: "1.13.4"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.45.0"),
    ],
    targets: [
        .executableTarget(
            name: "orderlive-bench",
            dependencies: [
                .product(name: "ServerSentEvents", package: "orderlive"),
                .product(name: "CurlHTTP", package: "orderlive"),
                .product(name: "AuthSession", package: "orderlive"),
                .product(name: "AsyncSignals", package: "orderlive"),
                .product(name: "EventStream", package: "orderlive"),
                .product(name: "Sandbox", package: "orderlive"),
                .product(name: "SQLiteStore", package: "orderlive"),
                .product(name: "StoreModel", package: "orderlive"),
                .product(name: "PostgresStore", package: "orderlive"),
                .product(name: "OrderSync", package: "orderlive"),
                .product(name: "Agent", package: "orderlive"),
                .product(name: "Commands", package: "orderlive"),
                .product(name: "Telemetry", package: "orderlive"),
                .product(name: "WebhookDelivery", package: "orderlive"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
        // The workloads `make bench-instructions` counts under callgrind: synchronous on purpose, since
        // Debian 12's valgrind 3.19 stops with an internal error on any Swift concurrency program.
        .executableTarget(
            name: "orderlive-instructions",
            dependencies: [
                .product(name: "ServerSentEvents", package: "orderlive"),
                .product(name: "Sandbox", package: "orderlive"),
                .product(name: "SQLiteStore", package: "orderlive"),
                .product(name: "StoreModel", package: "orderlive"),
                .product(name: "OrderSync", package: "orderlive"),
                .product(name: "PushIngest", package: "orderlive"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ]
)
