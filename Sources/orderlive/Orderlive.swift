import Agent
import ArgumentParser
import CurlHTTP
import EventStream
import Logging
import Sandbox
import StoreModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `orderlive`: argument parsing only; every command calls into `Agent` or `Sandbox`.
struct Orderlive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orderlive",
        abstract: "Keeps a delivery business's orders live: SSE stream, push ingestion, local store.",
        version: OrderliveVersion.current,
        subcommands: [
            Run.self, Inspect.self, Login.self, Logout.self, Status.self, Orders.self, DeadLetters.self, Journal.self, StoreCommand.self,
            Webhooks.self, Push.self,
            SandboxCommand.self, DemoCommand.self,
        ]
    )
}

/// A runtime failure: one line on stderr, exit 1.
struct RuntimeFailure: Error, CustomStringConvertible {
    var description: String
}

@main
enum Main {
    static func main() async {
        let code: Int32
        do {
            var command = try Orderlive.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            code = 0
        } catch let failure as RuntimeFailure {
            LineWriter.standardError.write(line: "orderlive: \(failure.description)")
            code = 1
        } catch let usage as InspectUsageError {
            LineWriter.standardError.write(line: "orderlive: \(usage.message)")
            code = 2
        } catch let error as CurlError {
            LineWriter.standardError.write(line: "orderlive: \(error.description)")
            code = 1
        } catch {
            let exit = Orderlive.exitCode(for: error)
            let message = Orderlive.fullMessage(for: error)
            if exit == .success {
                if !message.isEmpty { LineWriter.standardOutput.write(line: message) }
                code = 0
            } else if exit == .validationFailure {
                // ArgumentParser says 64 (EX_USAGE); orderlive's contract says 2 for usage errors.
                LineWriter.standardError.write(line: message)
                code = 2
            } else {
                if !message.isEmpty { LineWriter.standardError.write(line: message) }
                code = exit.rawValue
            }
        }
        exit(code)
    }
}

/// Logging for commands whose own output is the product: on stderr, warnings and errors unless `level` says otherwise.
func commandLogger(_ label: String, level: Logger.Level = .warning) -> Logger {
    var logger = Logger(label: label) { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = level
    return logger
}

/// Reads the configured store (either engine; nil when there is no SQLite file yet), the error
/// naming what could not be read.
func readStore<T: Sendable>(
    _ config: ConfigOption, _ body: @escaping @Sendable (any OrderReader) async throws -> T
) async throws -> T? {
    let configuration = try await config.load()
    do {
        return try await ConfiguredStore.withReader(configuration, logger: authCommandLogger(), body)
    } catch {
        throw RuntimeFailure(description: "cannot read the order database: \(error)")
    }
}
