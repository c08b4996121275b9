import Agent
import ArgumentParser
import CheckedInput
import CurlHTTP

/// `orderlive inspect URL`
struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch any Server-Sent Events stream, with reconnects and Last-Event-ID.",
        discussion: """
            Prints a readable, coloured view on a terminal, or one JSON object per line with --json:
              {"kind":"open","status":200,"content_type":"text/event-stream"}
              {"kind":"event","type":"message","data":"Hello","id":"abc"}
              {"kind":"comment","comment":"ping"}
              {"kind":"error","error":"stream ended","retry_in_ms":1000}
            SIGHUP drops the connection and reconnects at once. A 204 answer stops and exits 0.
            """
    )

    @Argument(help: "The stream URL (http or https).")
    var url: String

    @Option(name: [.customShort("H"), .customLong("header")], help: "A request header, \"Name: value\" (repeatable).")
    var headers: [String] = []

    @Option(help: "Send Authorization: Bearer TOKEN.")
    var bearer: String?

    @Flag(help: "Use the stored session (orderlive login): a fresh bearer token on every attempt.")
    var auth = false

    @OptionGroup var config: ConfigOption

    @Option(help: "The request method.")
    var method: String = "GET"

    @Option(help: "A request body.")
    var data: String?

    @Option(name: .customLong("last-event-id"), help: "The Last-Event-ID for the first request.")
    var lastEventID: String?

    @Option(name: .customLong("event"), help: "Show only events of this type (repeatable).")
    var eventTypes: [String] = []

    @Flag(help: "Show comment lines.")
    var comments = false

    @Option(name: .customLong("initial-delay"), help: "Reconnect base delay in milliseconds (0 allowed).")
    var initialDelay: Int = 1000

    @Option(name: .customLong("read-timeout"), help: "Reconnect after this many milliseconds without a byte.")
    var readTimeout: Int?

    @Option(help: "Exit 0 after N events.")
    var count: Int?

    @Option(help: "Exit 0 after S seconds.")
    var duration: Double?

    @Flag(name: .customLong("no-reconnect"), help: "Exit at the first lost connection (1 unless it ended cleanly).")
    var noReconnect = false

    @Flag(help: "One JSON object per line.")
    var json = false

    func run() async throws {
        var parsedHeaders = HTTPHeaders()
        for header in headers {
            let field = try InspectOptions.parseHeader(header)
            parsedHeaders.add(name: field.name, value: field.value)
        }
        if let duration, !(duration > 0 && duration < 1e9) {
            throw InspectUsageError("--duration must be a number of seconds above 0, got \(duration)")
        }
        if initialDelay < 0 { throw InspectUsageError("--initial-delay must be 0 or more milliseconds") }
        if let readTimeout, readTimeout <= 0 {
            throw InspectUsageError("--read-timeout must be above 0 milliseconds, got \(readTimeout)")
        }
        if let count, count <= 0 { throw InspectUsageError("--count must be above 0, got \(count)") }
        if auth, bearer != nil { throw InspectUsageError("--auth and --bearer cannot be used together") }
        let options = InspectOptions(
            url: url,
            headers: parsedHeaders,
            bearerToken: bearer,
            method: method.uppercased(),
            body: data,
            lastEventID: lastEventID ?? "",
            eventTypes: Set(eventTypes),
            showsComments: comments,
            initialDelay: .milliseconds(initialDelay),
            readTimeout: readTimeout.map { .milliseconds($0) },
            count: count,
            duration: duration.map { Checked.duration(seconds: $0, maximum: .seconds(1_000_000_000)) },
            reconnects: !noReconnect,
            json: json)
        let configuration = auth ? try await config.load() : nil
        let outcome = try await Inspector(options: options, logger: commandLogger("orderlive.inspect"))
            .run(authenticatedBy: configuration)
        if case .failed(let reason) = outcome { throw RuntimeFailure(description: reason) }
    }
}
