import Agent
import Foundation
import LocalHTTP
import Testing

/// Issue 11: every integer key, from a file or the environment, is checked text with an upper
/// bound, so no configured value can overflow where it is used (a read timeout of Int.max
/// milliseconds once trapped converting to nanoseconds).
@Suite(.timeLimit(.minutes(5))) struct ConfigurationBoundsTests {
    static let integerKeys = [
        "upstream.connect_timeout_ms", "upstream.request_timeout_ms", "auth.refresh_ahead_s",
        "stream.initial_delay_ms", "stream.max_delay_ms", "stream.reset_after_s", "stream.idle_timeout_ms",
        "ingest.max_body_bytes", "ingest.max_notifications", "ingest.dedupe_window_s", "ingest.high_water_jobs",
        "ingest.read_timeout_ms", "ingest.max_connections", "sync.max_attempts", "sync.page_size",
        "ingest.max_streams_per_connection", "api.max_streams_per_connection",
    ]

    /// The edge values of the sweep, and which error each gets.
    static let edges: [(text: String, error: String)] = [
        ("-9223372036854775808", "must be at least"), ("9223372036854775807", "must be at most"),
        ("18446744073709551616", "must be a whole number"), ("1e308", "must be a whole number"),
        ("NaN", "must be a whole number"), ("0x10", "must be a whole number"), ("+5", "must be a whole number"),
        ("1.5", "must be a whole number"), ("٣", "must be a whole number"),
    ]

    private func failure(environment: [String: String]) async -> String {
        do {
            _ = try await ConfigurationLoader.load(
                file: nil, environment: ["HOME": "/home/courier"].merging(environment) { $1 },
                currentDirectory: "/nonexistent")
            return "no error"
        } catch {
            return error.message
        }
    }

    private static func variable(_ key: String) -> String {
        "ORDERLIVE_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    @Test(arguments: integerKeys)
    func everyEdgeValueIsRefusedNamingTheKey(_ key: String) async {
        for (text, error) in Self.edges {
            let message = await failure(environment: [Self.variable(key): text])
            #expect(message.contains("'\(key)'") && message.contains(error), "\(key)=\(text): \(message)")
        }
    }

    @Test func theLargestAcceptedValuesLoadAndOneMoreIsRefused() async throws {
        let largest = ["stream.max_delay_ms": "86400000", "ingest.read_timeout_ms": "86400000",
                       "ingest.dedupe_window_s": "31622400", "ingest.max_connections": "1000000",
                       "api.max_streams_per_connection": "100000"]
        let environment = Dictionary(uniqueKeysWithValues: largest.map { (Self.variable($0.key), $0.value) })
        let configuration = try await ConfigurationLoader.load(
            file: nil, environment: environment.merging(["HOME": "/home/courier"]) { $1 }, currentDirectory: "/nonexistent")
        #expect(configuration.ingest.readTimeout == .seconds(86_400))
        #expect(configuration.ingest.maximumConnections == 1_000_000)
        #expect(configuration.api.http2.maximumStreamsPerConnection == 100_000 && !configuration.api.http2.cleartext)
        for (key, value) in largest {
            let over = String((Int(value) ?? 0) + 1)
            let message = await failure(environment: [Self.variable(key): over])
            #expect(message == "'\(key)' must be at most \(value), got \(over)", "\(message)")
        }
    }

    /// Found by the configuration fuzzer: `Yams.load` traps on a key written twice. Now an error
    /// naming it.
    @Test func aKeyOrSectionWrittenTwiceIsAnErrorNotATrap() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dup-\(UUID().uuidString).yaml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (yaml, message) in [
            ("stream:\n  max_delay_ms: 1\n  max_delay_ms: 2\n", "'max_delay_ms'"),
            ("stream:\n  max_delay_ms: 1\nstream:\n  idle_timeout_ms: 2\n", "'stream'"),
        ] {
            try yaml.write(toFile: path, atomically: true, encoding: .utf8)
            do {
                _ = try await ConfigurationLoader.load(file: path, environment: ["HOME": "/home/courier"],
                                                       currentDirectory: "/nonexistent")
                Issue.record("a duplicate was accepted: \(yaml)")
            } catch {
                #expect(error.message.hasPrefix("\(path) is not valid YAML") && error.message.contains("duplicated key")
                    && error.message.contains(message), "\(error.message)")
            }
        }
    }
}
