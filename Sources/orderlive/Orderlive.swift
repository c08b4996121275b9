// orderlive: the executable. ArgumentParser declarations of every command (DESIGN §5) that call into
// `Commands`, and the exit codes: 0 done, 1 a command that failed (one line on stderr), 2 a usage
// error. No rule and no output format lives here.

import Agent
import ArgumentParser
import Commands

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `orderlive`: argument parsing only; every command calls into `Commands`.
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

/// Runs a check from `Commands` in `validate()`: its usage error becomes ArgumentParser's, so it is
/// reported with the usage and exit 2 like every other argument error.
func usage<Checked>(_ check: @autoclosure () throws(CommandUsageError) -> Checked) throws {
    do {
        _ = try check()
    } catch {
        throw ValidationError(error.message)
    }
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
        } catch let failure as CommandFailure {
            LineWriter.standardError.write(line: "orderlive: \(failure.description)")
            code = 1
        } catch let usage as CommandUsageError {
            LineWriter.standardError.write(line: "orderlive: \(usage.message)")
            code = 2
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
