import ArgumentParser
import Commands

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
        var command = InspectCommand(url: url)
        command.headers = headers
        command.bearer = bearer
        command.usesSession = auth
        command.method = method
        command.data = data
        command.lastEventID = lastEventID
        command.eventTypes = eventTypes
        command.comments = comments
        command.initialDelay = initialDelay
        command.readTimeout = readTimeout
        command.count = count
        command.duration = duration
        command.noReconnect = noReconnect
        command.json = json
        try await command.run { try await config.load() }
    }
}
