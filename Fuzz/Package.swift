// swift-tools-version:6.2
import PackageDescription

// The libFuzzer target for the SSE parser, kept out of the main package: it only links with
// `--sanitize=fuzzer`. Run it with `make fuzz` from the repository root (docs/FUZZING.md).
let package = Package(
    name: "orderlive-fuzz",
    dependencies: [
        .package(name: "orderlive", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "ParserFuzz",
            dependencies: [.product(name: "ServerSentEvents", package: "orderlive")]
        ),
    ]
)
