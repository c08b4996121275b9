// swift-tools-version:6.2
import PackageDescription

// The libFuzzer targets, kept out of the main package: they only link with `--sanitize=fuzzer`.
// `ParserFuzz` is the SSE parser; `InputFuzz` every other parser of input from outside, one target
// at a time by `ORDERLIVE_FUZZ_TARGET`. Run them with `make fuzz` from the repository root
// (docs/FUZZING.md).
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
        .executableTarget(
            name: "InputFuzz",
            dependencies: [
                .product(name: "Agent", package: "orderlive"),
                .product(name: "AuthSession", package: "orderlive"),
                .product(name: "CurlHTTP", package: "orderlive"),
                .product(name: "EventStream", package: "orderlive"),
                .product(name: "OrderStore", package: "orderlive"),
                .product(name: "OrderSync", package: "orderlive"),
                .product(name: "PushIngest", package: "orderlive"),
                .product(name: "ServerSentEvents", package: "orderlive"),
            ]
        ),
    ]
)
