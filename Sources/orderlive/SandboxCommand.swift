import Agent
import ArgumentParser
import CheckedInput
import Logging
import Sandbox
import UnixSignals

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

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535, got \(port)") }
        guard eventInterval > 0 else { throw ValidationError("--event-interval must be above 0 ms") }
        guard accessTokenLifetime > 0, accessTokenLifetime < 1e9 else {
            throw ValidationError("--access-token-lifetime must be above 0 seconds")
        }
    }

    func run() async throws {
        var logger = Logger(label: "orderlive.sandbox") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .info
        let sandbox = Sandbox(
            configuration: SandboxConfiguration(
                host: host, port: port, eventInterval: .milliseconds(eventInterval),
                auth: SandboxAuthConfiguration(
                    accessTokenLifetime: Checked.duration(seconds: accessTokenLifetime, maximum: .seconds(1_000_000_000)),
                    requiresAuthentication: requireAuth),
                feed: orders ? .orderBook : .synthetic, changesOrders: orders),
            logger: logger)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                let host = self.host
                group.addTask {
                    try await sandbox.run { port in
                        let url = "http://\(host):\(port)"
                        LineWriter.standardError.write(line: "orderlive sandbox: listening on \(url) (events at \(url)/v1/events)")
                        let user = SandboxUser.demo
                        LineWriter.standardError.write(
                            line: "orderlive sandbox: demo login \(user.identifier) / \(user.password)")
                    }
                }
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { return }
                }
                // The first task to end (a signal, or the server failing) ends the sandbox.
                _ = try await group.next()
                group.cancelAll()
            }
        } catch {
            throw RuntimeFailure(description: "the sandbox could not serve on \(host):\(port): \(error)")
        }
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
        let options = Demo.Options(
            rate: rate, duration: duration.map { Checked.duration(seconds: $0, maximum: .seconds(10_000_000)) }, json: json,
            stateDirectory: stateDirectory, faultEvery: Checked.duration(seconds: faultEvery, maximum: .seconds(10_000_000)),
            apiPort: apiPort)
        do {
            try await Demo(options: options).run()
        } catch let error as DemoError {
            throw RuntimeFailure(description: error.description)
        }
    }
}
