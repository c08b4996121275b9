public import Agent
import AsyncSignals
import CheckedInput
import Foundation
import JSONToolkit
import Logging
import SQLiteStore
import StoreModel
import OrderSync
import Sandbox
import UnixSignals
import OrdersAPI
import PushIngest

/// `orderlive demo`: the Sandbox backend and the whole agent (as `orderlive run` builds it) in one
/// process on loopback. The Sandbox creates and moves orders along at `rate` changes per second; every
/// `faultEvery` the open stream is cut, and once the access tokens are revoked, so reconnects and
/// token refreshes happen on screen. The view shows each change as it lands in the local store.
public struct Demo: Sendable {
    /// What the demo does.
    public struct Options: Sendable {
        /// Order changes per second at the Sandbox.
        public var rate: Double = 2
        /// Stop after this long; nil runs until SIGINT/SIGTERM.
        public var duration: Duration?
        /// One JSON object per line instead of the readable view.
        public var json = false
        /// Where the agent keeps its state; nil for a temporary directory removed at the end.
        public var stateDirectory: String?
        /// How often the open stream is cut (and, the second time, the access tokens expired).
        public var faultEvery: Duration = .seconds(12)
        /// The orders API and dispatch board port on 127.0.0.1; when taken, a free one is used.
        public var apiPort = 8090

        /// Creates options from the command line's seconds.
        public init(rate: Double, durationSeconds: Double?, json: Bool, stateDirectory: String?, faultEverySeconds: Double, apiPort: Int) {
            self.init(
                rate: rate, duration: durationSeconds.map { Checked.duration(seconds: $0, maximum: .seconds(10_000_000)) }, json: json,
                stateDirectory: stateDirectory, faultEvery: Checked.duration(seconds: faultEverySeconds, maximum: .seconds(10_000_000)),
                apiPort: apiPort)
        }

        /// Creates options.
        public init(rate: Double = 2, duration: Duration? = nil, json: Bool = false, stateDirectory: String? = nil,
                    faultEvery: Duration = .seconds(12), apiPort: Int = 8090) {
            self.apiPort = apiPort
            self.rate = rate
            self.duration = duration
            self.json = json
            self.stateDirectory = stateDirectory
            self.faultEvery = faultEvery
        }
    }

    private let options: Options
    private let output: LineWriter

    /// Creates a demo writing to standard output.
    public init(options: Options, output: LineWriter = .standardOutput) {
        self.options = options
        self.output = output
    }

    /// Runs until interrupted or `duration` elapses; returns how many order changes were shown.
    @discardableResult
    public func run() async throws -> Int {
        let temporary = options.stateDirectory == nil
        let directory = options.stateDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-demo-\(UUID().uuidString)").path
        defer { if temporary { try? FileManager.default.removeItem(atPath: directory) } }
        let silent = Logger(label: "orderlive.demo", factory: { _ in SwiftLogNoOpLogHandler() })
        let interval = Checked.duration(seconds: 1 / max(options.rate, 0.01), maximum: .seconds(100))
        let sandbox = Sandbox(
            configuration: SandboxConfiguration(
                port: 0, eventInterval: interval, heartbeatInterval: .seconds(5),
                auth: SandboxAuthConfiguration(accessTokenLifetime: .seconds(40), requiresAuthentication: true),
                feed: .orderBook, changesOrders: true),
            logger: silent)
        // The agent stops first and is waited for, then the Sandbox: each by asking, never by
        // cancelling a server's task (withServing).
        return try await withServing({ try await sandbox.run() }, stop: { await sandbox.stop() }) {
            var configuration = OrderliveConfiguration()
            configuration.upstream.baseURL = await sandbox.baseURL
            configuration.auth.identifier = SandboxUser.demo.identifier
            configuration.auth.refreshAhead = .seconds(10)
            configuration.stream.initialDelay = .milliseconds(300)
            configuration.stream.maximumDelay = .seconds(2)
            configuration.ingest.listen = "127.0.0.1:0"
            configuration.api.listen = "127.0.0.1:\(ListenCheck.problem(host: "127.0.0.1", port: options.apiPort) == nil ? options.apiPort : 0)"
            configuration.store.stateDirectory = directory
            let program: AgentProgram
            do {
                program = try AgentBuilder.build(
                    configuration: configuration, logger: silent,
                    environment: ["ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password])
            } catch {
                throw CommandFailure("\(error)")
            }
            // The demo's agent logs nowhere; how its run ended is not the demo's outcome.
            let shown = try await withServing({ try? await program.run(handlingSignals: false) }, stop: { await program.shutdown() }) {
                try await show(program: program, sandbox: sandbox, directory: directory, temporary: temporary)
            }
            if !options.json {
                let snapshot = program.state.snapshot
                output.write(line: "")
                output.write(line: "orderlive demo: \(shown) changes applied, \(snapshot.reconnects) reconnects, "
                    + "\(snapshot.tokenRefreshes) token refreshes" + (temporary ? "" : "; state kept in \(directory)"))
            }
            return shown
        }
    }

    /// Says where everything is (unless JSON lines were asked for), then watches.
    private func show(program: AgentProgram, sandbox: Sandbox, directory: String, temporary: Bool) async throws -> Int {
        var pushURL = "off"
        if let server = program.pushServer { pushURL = "http://127.0.0.1:\(await server.port)" }
        var boardURL = "off"
        if let server = program.apiServer { boardURL = "http://127.0.0.1:\(await server.port)/" }
        let backend = await sandbox.baseURL
        if !options.json {
            // Short lines: a line wider than the terminal wrapped its last word onto a line of
            // its own (a lone ")" after the board's address).
            output.write(line: "orderlive demo: backend (Sandbox) \(backend)  agent \(pushURL)")
            output.write(line: "orderlive demo: dispatch board \(boardURL) (open it in a browser)")
            if boardURL != "off" {
                output.write(line: "orderlive demo: change feed: orderlive inspect \(boardURL)v1/orders/stream")
            }
            output.write(line: "orderlive demo: state in \(directory)")
            output.write(line: "orderlive demo: \(format(options.rate)) changes/s; the stream is cut every "
                + "\(options.faultEvery.components.seconds) s, the tokens expire once")
            output.write(line: "orderlive demo: Ctrl-C to stop" + (temporary ? " (the state above is removed then)" : ""))
        }
        return try await watch(program: program, sandbox: sandbox)
    }

    /// Shows every change of the local store until the duration ends or a signal arrives; returns
    /// how many were shown.
    private func watch(program: AgentProgram, sandbox: Sandbox) async throws -> Int {
        let clock = ContinuousClock()
        let started = clock.now
        let end = options.duration.map { started + $0 }
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let stop = StopFlag()
        let signalTask = Task {
            for await _ in signals {
                stop.stop()
                return
            }
        }
        defer { signalTask.cancel() }
        var known: [String: (status: String, version: Int64?)] = [:]
        var shown = 0
        var faults = 0
        var nextFault = started + options.faultEvery
        var last = program.state.snapshot
        let terminal = !options.json && output.isTerminal
        // The view refreshes on a 200 ms tick: it reads the store the agent writes, as any reader would.
        while !stop.isStopped, end.map({ clock.now < $0 }) ?? true {
            try await Task.sleep(for: .milliseconds(200))
            if clock.now >= nextFault {
                faults += 1
                nextFault = clock.now + options.faultEvery
                if faults == 2 { sandbox.expireAccessTokens() }
                sandbox.orders.dropOpenStreams()
            }
            let orders = (try? await program.store.orders(status: nil)) ?? []
            var current: [String: (status: String, version: Int64?)] = [:]
            var lines: [String] = []
            for order in orders {
                current[order.id] = (order.status, order.version)
                let before = known[order.id]
                if let before, before.status == order.status, before.version == order.version { continue }
                lines.append(line(id: order.id, change: before == nil ? "created" : "changed",
                                  from: before?.status, to: order.status, version: order.version))
            }
            for (id, before) in known where current[id] == nil {
                lines.append(line(id: id, change: "deleted", from: before.status, to: nil, version: nil))
            }
            known = current
            shown += lines.count
            let snapshot = program.state.snapshot
            if snapshot.reconnects > last.reconnects {
                lines.append(event("stream.reconnected", "the stream was cut; reconnected from the stored cursor",
                                   count: snapshot.reconnects))
            }
            if snapshot.tokenRefreshes > last.tokenRefreshes {
                lines.append(event("auth.refreshed", "access token refreshed", count: snapshot.tokenRefreshes))
            }
            last = snapshot
            if terminal { output.write(text: "\r\u{1B}[2K") }
            for line in lines { output.write(line: line) }
            if terminal {
                output.write(text: "stream \(snapshot.stream.rawValue) · \(current.count) orders · \(shown) changes · "
                    + "\(snapshot.reconnects) reconnects · \(snapshot.tokenRefreshes) refreshes")
            }
        }
        if terminal { output.write(text: "\r\u{1B}[2K") }
        return shown
    }

    private func line(id: String, change: String, from: String?, to: String?, version: Int64?) -> String {
        if options.json {
            return "{" + [
                #""time":\#(JSONText.string(iso8601Now()))"#, #""kind":\#(JSONText.string("order.\(change)"))"#,
                #""order_id":\#(JSONText.string(id))"#, #""status":\#(to.map(JSONText.string) ?? "null")"#,
                #""previous_status":\#(from.map(JSONText.string) ?? "null")"#,
                #""version":\#(version.map(String.init) ?? "null")"#,
            ].joined(separator: ",") + "}"
        }
        let what = switch change {
        case "created": "new → \(to ?? "")"
        case "deleted": "deleted    (was \(from ?? ""))"
        default: "\(from ?? "") → \(to ?? "")"
        }
        return "\(localTimeOfDay())  order \(id.padding(toLength: 4, withPad: " ", startingAt: 0))  \(what)"
            + (version.map { "  v\($0)" } ?? "")
    }

    private func event(_ kind: String, _ text: String, count: Int) -> String {
        if options.json {
            return #"{"time":\#(JSONText.string(iso8601Now())),"kind":\#(JSONText.string(kind)),"count":\#(count)}"#
        }
        return "\(localTimeOfDay())  — \(text) (\(count))"
    }

    private func format(_ value: Double) -> String {
        value == value.rounded() ? String(Checked.int64(clamping: value)) : String(value)
    }
}

private func iso8601Now() -> String {
    JSONLogHandler.timestamp()
}
