public import Agent
import CheckedInput
import Logging
import Foundation
import Sandbox
import Telemetry
import UnixSignals

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The commands that are a long-running process: `orderlive run` (the agent) and `orderlive sandbox`
/// (the reference order backend).
public enum ProcessCommands {
    /// Runs the agent as `configuration` says until SIGINT/SIGTERM; the one logging bootstrap of the
    /// process (STYLE 7) happens here, as `log.level` and `log.format` say.
    ///
    /// With `telemetry.*` or `OTEL_*` export on (DESIGN §14), every log record also goes to the
    /// collector, and the push endpoint makes spans; the exporters run in the agent's service group.
    public static func runAgent(_ configuration: OrderliveConfiguration) async throws {
        let console = LogOutput.factory(configuration.log, standardErrorIsTerminal: isatty(2) == 1)
        let export: TelemetryExport?
        do {
            let environment = ProcessInfo.processInfo.environment
            export = try TelemetryExport.make(
                configuration.telemetry, version: OrderliveVersion.current,
                instanceID: configuration.telemetry.isOn(environment: environment)
                    ? StateDirectory(configuration.store.stateDirectory).instanceID() : nil,
                attributes: configuration.telemetryResourceAttributes, environment: environment, diagnostics: Logger(label: "orderlive.telemetry", factory: console))
        } catch {
            throw CommandFailure(error.description)
        }
        // One bootstrap for every case: the console's lines get the trace ids from the provider (with
        // traces on); exported records (with logs on) carry their span context themselves.
        let (exported, level) = (export?.logHandler, configuration.log.level)
        LoggingSystem.bootstrap({ label, provider in
            var printing = console(label)
            if provider != nil { printing.metadataProvider = provider }
            guard let exported else { return printing }
            var exporting = exported(label)
            exporting.logLevel = level
            return MultiplexLogHandler([printing, exporting])
        }, metadataProvider: export?.metadataProvider)
        let logger = Logger(label: "orderlive")
        if let export { logger.info("telemetry exported", metadata: ["telemetry.export": "\(export.summary)"]) }
        let program: AgentProgram
        do {
            program = try AgentBuilder.build(
                configuration: configuration, logger: logger,
                telemetry: AgentTelemetry(
                    tracer: export?.tracer, metrics: export?.metricsFactory, metricsInterval: export?.metricsInterval ?? .seconds(60),
                    services: export?.services ?? [], losses: export?.losses))
        } catch {
            throw CommandFailure(error.description)
        }
        do {
            try await program.run(handlingSignals: true)
        } catch {
            throw CommandFailure("\(error)")
        }
    }

    /// What `orderlive sandbox` serves.
    public struct SandboxOptions: Sendable {
        /// The address to bind.
        public var host = "127.0.0.1"
        /// The port (0 picks a free one).
        public var port = 8070
        /// Milliseconds between live order events.
        public var eventIntervalMilliseconds = 1000
        /// Require a valid bearer token on the events and orders.
        public var requiresAuthentication = false
        /// Serve a changing order book instead of synthetic events.
        public var servesOrderBook = false
        /// Seconds an access token lives.
        public var accessTokenLifetimeSeconds: Double = 900

        /// Creates the defaults.
        public init() {}

        /// What is wrong with the options, or nil.
        public var problem: String? {
            guard (0...65_535).contains(port) else { return "--port must be 0...65535, got \(port)" }
            guard eventIntervalMilliseconds > 0 else { return "--event-interval must be above 0 ms" }
            guard accessTokenLifetimeSeconds > 0, accessTokenLifetimeSeconds < 1e9 else {
                return "--access-token-lifetime must be above 0 seconds"
            }
            return nil
        }
    }

    /// Serves the Sandbox until SIGINT/SIGTERM, its address and demo login on `console`'s notes.
    public static func serveSandbox(_ options: SandboxOptions, console: Console) async throws {
        var logger = Logger(label: "orderlive.sandbox") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .info
        let sandbox = Sandbox(
            configuration: SandboxConfiguration(
                host: options.host, port: options.port, eventInterval: .milliseconds(options.eventIntervalMilliseconds),
                auth: SandboxAuthConfiguration(
                    accessTokenLifetime: Checked.duration(seconds: options.accessTokenLifetimeSeconds, maximum: .seconds(1_000_000_000)),
                    requiresAuthentication: options.requiresAuthentication),
                feed: options.servesOrderBook ? .orderBook : .synthetic, changesOrders: options.servesOrderBook),
            logger: logger)
        do {
            // Each task says whether it was the server's.
            try await withThrowingTaskGroup(of: Bool.self) { group in
                let host = options.host
                group.addTask {
                    try await sandbox.run { port in
                        let url = "http://\(host):\(port)"
                        console.note("orderlive sandbox: listening on \(url) (events at \(url)/v1/events)")
                        let user = SandboxUser.demo
                        console.note("orderlive sandbox: demo login \(user.identifier) / \(user.password)")
                    }
                    return true
                }
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { return false }
                    return false
                }
                // The first task to end (a signal, or the server failing) ends the sandbox: after a
                // signal it is stopped gracefully and waited for, not cancelled, which can trap in
                // swift-nio on a connection accepted but not yet served (Sandbox.stop()).
                if try await group.next() == false {
                    await sandbox.stop()
                    _ = try await group.next()
                }
                group.cancelAll()
            }
        } catch {
            throw CommandFailure("the sandbox could not serve on \(options.host):\(options.port): \(error)")
        }
    }
}
