import Foundation

/// The fuzz targets, by the name given in `ORDERLIVE_FUZZ_TARGET`.
enum FuzzTarget: String, CaseIterable {
    /// The Gorush request reader and envelope, then the push translator over every notification.
    case gorush
    /// Standard Webhooks header parsing and verification, and sign → verify round trips.
    case webhooks
    /// The token pair decoder of login and refresh answers.
    case tokenPair = "token-pair"
    /// The response policy: status, content type, `Retry-After`.
    case responsePolicy = "response-policy"
    /// The upstream single-order and page decoders.
    case orders
    /// The event translator (DESIGN §3's table).
    case events
    /// The configuration loader: a YAML file, or environment variables.
    case configuration
    /// The orders API's tokens file (consumers and their scopes).
    case tokens
    /// The cleartext listener's protocol sniffer: HTTP/2's preface or HTTP/1.x.
    case protocolChoice = "protocol-choice"
    /// An outgoing webhook endpoint's stored delivery options, and address ranges.
    case webhookOptions = "webhook-options"

    /// The target named by the environment; `gorush` when unset (libFuzzer calls before any flag).
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["ORDERLIVE_FUZZ_TARGET"] ?? "gorush"
        guard let target = FuzzTarget(rawValue: name) else {
            fatalError("ORDERLIVE_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue)), got \(name)")
        }
        return target
    }()

    func run(_ bytes: [UInt8]) {
        switch self {
        case .gorush: Targets.gorush(bytes)
        case .webhooks: Targets.webhooks(bytes)
        case .tokenPair: Targets.tokenPair(bytes)
        case .responsePolicy: Targets.responsePolicy(bytes)
        case .orders: Targets.orders(bytes)
        case .events: Targets.events(bytes)
        case .configuration: Targets.configuration(bytes)
        case .tokens: Targets.tokens(bytes)
        case .protocolChoice: Targets.protocolChoice(bytes)
        case .webhookOptions: Targets.webhookOptions(bytes)
        }
    }
}

/// Stops the fuzzer with a finding.
func violated(_ invariant: String) -> Never {
    fatalError("invariant violated: \(invariant)")
}

/// A little-endian integer from the first bytes (zero-padded).
func integer<T: FixedWidthInteger>(_ bytes: ArraySlice<UInt8>, as _: T.Type) -> T {
    var value = T.zero
    for (index, byte) in bytes.prefix(MemoryLayout<T>.size).enumerated() {
        value |= T(truncatingIfNeeded: byte) << (8 * index)
    }
    return value
}
