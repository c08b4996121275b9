public import Agent
import CheckedInput
import CurlHTTP

/// `orderlive inspect URL` as typed: the arguments before they are checked, and the run.
public struct InspectCommand: Sendable {
    /// The stream URL.
    public var url: String
    /// `-H "Name: value"` arguments.
    public var headers: [String] = []
    /// `--bearer TOKEN`.
    public var bearer: String?
    /// `--auth`: the stored session's token on every attempt.
    public var usesSession = false
    /// `--method`.
    public var method = "GET"
    /// `--data`.
    public var data: String?
    /// `--last-event-id`.
    public var lastEventID: String?
    /// `--event` (repeatable).
    public var eventTypes: [String] = []
    /// `--comments`.
    public var comments = false
    /// `--initial-delay` in milliseconds.
    public var initialDelay = 1000
    /// `--read-timeout` in milliseconds.
    public var readTimeout: Int?
    /// `--count`.
    public var count: Int?
    /// `--duration` in seconds.
    public var duration: Double?
    /// `--no-reconnect`.
    public var noReconnect = false
    /// `--json`.
    public var json = false

    /// Creates the command for `url` with `inspect`'s defaults.
    public init(url: String) {
        self.url = url
    }

    /// The checked options; the usage error names the argument to fix.
    public func options() throws(CommandUsageError) -> InspectOptions {
        var parsedHeaders = HTTPHeaders()
        for header in headers {
            let field = try InspectOptions.parseHeader(header)
            parsedHeaders.add(name: field.name, value: field.value)
        }
        if let duration, !(duration > 0 && duration < 1e9) {
            throw CommandUsageError("--duration must be a number of seconds above 0, got \(duration)")
        }
        if initialDelay < 0 { throw CommandUsageError("--initial-delay must be 0 or more milliseconds") }
        if let readTimeout, readTimeout <= 0 {
            throw CommandUsageError("--read-timeout must be above 0 milliseconds, got \(readTimeout)")
        }
        if let count, count <= 0 { throw CommandUsageError("--count must be above 0, got \(count)") }
        if usesSession, bearer != nil { throw CommandUsageError("--auth and --bearer cannot be used together") }
        return InspectOptions(
            url: url, headers: parsedHeaders, bearerToken: bearer, method: method.uppercased(), body: data,
            lastEventID: lastEventID ?? "", eventTypes: Set(eventTypes), showsComments: comments,
            initialDelay: .milliseconds(initialDelay), readTimeout: readTimeout.map { .milliseconds($0) }, count: count,
            duration: duration.map { Checked.duration(seconds: $0, maximum: .seconds(1_000_000_000)) },
            reconnects: !noReconnect, json: json)
    }

    /// Watches the stream until it ends, `count` or `duration` is reached, or a signal stops it; the
    /// session comes from `configuration` with `usesSession`. A failure when the stream could not be
    /// watched to a clean end.
    public func run(configuration: () async throws -> OrderliveConfiguration) async throws {
        let options = try options()
        let configured = usesSession ? try await configuration() : nil
        let outcome: Inspector.Outcome
        do {
            outcome = try await Inspector(options: options, logger: commandLogger("orderlive.inspect"))
                .run(authenticatedBy: configured)
        } catch let error as CurlError {
            throw CommandFailure(error.description)
        }
        if case .failed(let reason) = outcome { throw CommandFailure(reason) }
    }
}
