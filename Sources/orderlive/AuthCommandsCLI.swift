import Agent
import ArgumentParser
import AuthSession
import CurlHTTP
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--config FILE`, shared by every command that reads configuration.
struct ConfigOption: ParsableArguments {
    @Option(name: .customLong("config"), help: "The configuration file (default: ./orderlive.yaml if present).")
    var file: String?

    func load() async throws -> OrderliveConfiguration {
        do {
            return try await ConfigurationLoader.load(file: file)
        } catch {
            throw RuntimeFailure(description: "configuration: \(error.message)")
        }
    }
}

/// Quiet logging for the auth commands: their own messages say what happened.
func authCommandLogger() -> Logger {
    commandLogger("orderlive", level: .critical)
}

/// `orderlive login`
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log in to the order backend and store the session.",
        discussion: """
            The password comes from --password-stdin, else auth.password_file, else ORDERLIVE_AUTH_PASSWORD, \
            else a prompt without echo when standard input is a terminal. It is never stored: only the \
            tokens are, in <state_dir>/credentials.json (0600).
            """
    )

    @OptionGroup var config: ConfigOption

    @Option(help: "The login identifier (default: auth.identifier).")
    var identifier: String?

    @Flag(name: .customLong("password-stdin"), help: "Read the password from the first line of standard input.")
    var passwordStdin = false

    func run() async throws {
        let configuration = try await config.load()
        guard let identifier = identifier ?? (configuration.auth.identifier.isEmpty ? nil : configuration.auth.identifier)
        else { throw ValidationError("no identifier: pass --identifier or set auth.identifier") }
        let password: String
        if passwordStdin {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw RuntimeFailure(description: "--password-stdin: standard input had no password line")
            }
            password = line
        } else if let configured = SessionFactory(configuration: configuration).password() {
            password = configured
        } else if let typed = readPasswordWithoutEcho(prompt: "Password for \(identifier): "), !typed.isEmpty {
            password = typed
        } else {
            throw RuntimeFailure(description: "no password: use --password-stdin, auth.password_file or ORDERLIVE_AUTH_PASSWORD")
        }
        let logger = authCommandLogger()
        let snapshot = try await CurlLoop.withLoop(logger: logger) { loop in
            do {
                let session = try SessionFactory(configuration: configuration).session(
                    loop: loop, identifier: identifier, password: { password }, logger: logger)
                return try await session.login(password: password)
            } catch let error as AuthError {
                if error.kind == .transient {
                    throw RuntimeFailure(description: "cannot reach the backend at \(configuration.upstream.baseURL): \(error.message)")
                }
                throw RuntimeFailure(description: error.message)
            }
        }
        let role = snapshot.role.map { ", role \($0)" } ?? ""
        let stores = snapshot.storeIDs.isEmpty ? "" : ", stores \(snapshot.storeIDs.joined(separator: ", "))"
        LineWriter.standardOutput.write(line: "Logged in as \(identifier): user \(snapshot.userID ?? "?")\(role)\(stores).")
        LineWriter.standardOutput.write(line: "Session saved in \(configuration.store.stateDirectory)/credentials.json")
    }
}

/// `orderlive logout`
struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke the session upstream (best effort, 2 s) and delete local credentials."
    )

    @OptionGroup var config: ConfigOption

    @Flag(help: "Also delete the local order database (orderlive.sqlite).")
    var wipe = false

    func run() async throws {
        let configuration = try await config.load()
        let logger = authCommandLogger()
        let confirmed = try await CurlLoop.withLoop(logger: logger) { loop in
            do {
                return try await SessionFactory(configuration: configuration).session(loop: loop, logger: logger)
                    .logout(timeout: .seconds(2))
            } catch let error as AuthError {
                throw RuntimeFailure(description: error.message)
            }
        }
        LineWriter.standardOutput.write(line: confirmed
            ? "Logged out: the session was revoked upstream and local credentials deleted."
            : "Logged out locally: credentials deleted (the backend did not confirm the revocation).")
        if wipe {
            do {
                let removed = try await ConfiguredStore.wipe(configuration, logger: authCommandLogger())
                LineWriter.standardOutput.write(line: removed.isEmpty
                    ? "No local order database to wipe."
                    : "Wiped local orders: \(removed.joined(separator: ", ")).")
            } catch {
                throw RuntimeFailure(description: "could not wipe local orders: \(error)")
            }
        }
    }
}

/// `orderlive status`
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the session state from the state directory (never a token).",
        discussion: "Works whether or not the agent is running. With SQLite it makes no network request; "
            + "with PostgreSQL (store.backend) it reads the account's rows from the shared database."
    )

    @OptionGroup var config: ConfigOption

    @Flag(help: "One JSON object.")
    var json = false

    func run() async throws {
        let configuration = try await config.load()
        let logger = authCommandLogger()
        let snapshot = try await CurlLoop.withLoop(logger: logger) { loop in
            do {
                return try await SessionFactory(configuration: configuration).session(loop: loop, logger: logger).snapshot
            } catch let error as AuthError {
                throw RuntimeFailure(description: error.message)
            }
        }
        let store: StoreStatus?
        do {
            switch configuration.store.backend {
            case .sqlite:
                store = try await StateDirectory(configuration.store.stateDirectory).storeStatus()
            case .postgres:
                store = try await ConfiguredStore.withReader(configuration, logger: logger) { try await StoreStatus($0) }
            }
        } catch {
            throw RuntimeFailure(description: "cannot read the order database: \(error)")
        }
        // The running agent's stream state, or what was last known (DESIGN §5).
        let stream = StreamStatusFile.read(for: configuration)
        if json {
            LineWriter.standardOutput.write(line: StatusOutput.json(snapshot, store: store, stream: stream))
        } else {
            for line in StatusOutput.lines(
                snapshot, stateDirectory: configuration.store.stateDirectory, store: store, stream: stream) {
                LineWriter.standardOutput.write(line: line)
            }
        }
    }
}
