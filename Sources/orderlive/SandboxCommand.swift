import ArgumentParser
import Commands

/// `orderlive sandbox`
struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract: "Run the reference order backend on loopback (live SSE order feed at /v1/events)."
    )

    @Option(help: "The port to listen on (0 picks a free one).")
    var port: Int = 8070

    @Option(help: "The address to bind.")
    var host: String = "127.0.0.1"

    @Option(name: .customLong("event-interval"), help: "Milliseconds between live order events.")
    var eventInterval: Int = 1000

    @Flag(name: .customLong("require-auth"), help: "Require a valid bearer token on /v1/events and /v1/orders.")
    var requireAuth = false

    @Flag(help: "Serve a changing order book: the stream, GET /v1/orders and GET /v1/orders/{id} agree.")
    var orders = false

    @Option(name: .customLong("access-token-lifetime"), help: "Seconds an access token lives.")
    var accessTokenLifetime: Double = 900

    var options: ProcessCommands.SandboxOptions {
        var options = ProcessCommands.SandboxOptions()
        options.host = host
        options.port = port
        options.eventIntervalMilliseconds = eventInterval
        options.requiresAuthentication = requireAuth
        options.servesOrderBook = orders
        options.accessTokenLifetimeSeconds = accessTokenLifetime
        return options
    }

    func validate() throws {
        if let problem = options.problem { throw ValidationError(problem) }
    }

    func run() async throws {
        try await ProcessCommands.serveSandbox(options, console: .terminal())
    }
}

/// `orderlive demo`
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the Sandbox backend and the agent in one process and watch orders arrive live.",
        discussion: """
            The Sandbox creates and moves orders along at --rate changes per second; the agent (as orderlive run \
            builds it) streams them into its own SQLite store, fetching what events only announce. Every \
            --fault-every seconds the stream is cut, and once the access tokens expire, so reconnects and token \
            refreshes show. State goes to a temporary directory unless --state-dir is given.
            """
    )

    @Option(help: "Order changes per second at the Sandbox.")
    var rate: Double = 2

    @Option(help: "Stop after S seconds (default: until Ctrl-C).")
    var duration: Double?

    @Option(name: .customLong("state-dir"), help: "Keep the agent's state here instead of a temporary directory.")
    var stateDirectory: String?

    @Option(name: .customLong("fault-every"), help: "Seconds between stream cuts.")
    var faultEvery: Double = 12

    @Flag(help: "One JSON object per line (order changes, reconnects, refreshes) instead of the live view.")
    var json = false

    @Option(name: .customLong("api-port"), help: "The orders API and dispatch board port on 127.0.0.1 (a free one when taken).")
    var apiPort = 8090

    func validate() throws {
        guard rate > 0, rate <= 1000 else { throw ValidationError("--rate must be above 0 and at most 1000, got \(rate)") }
        if let duration, !(duration > 0 && duration < 1e7) { throw ValidationError("--duration must be above 0 seconds") }
        guard faultEvery >= 1, faultEvery < 1e7 else { throw ValidationError("--fault-every must be at least 1 second") }
        guard (1...65_535).contains(apiPort) else { throw ValidationError("--api-port must be 1 to 65535, got \(apiPort)") }
    }

    func run() async throws {
        try await Demo(options: Demo.Options(
            rate: rate, durationSeconds: duration, json: json, stateDirectory: stateDirectory, faultEverySeconds: faultEvery,
            apiPort: apiPort)).run()
    }
}
