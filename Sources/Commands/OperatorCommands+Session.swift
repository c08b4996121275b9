import Agent
import AuthSession
import CurlHTTP

/// `orderlive login`, `logout` and `status`: the session with the order backend, and what the state
/// directory (or the shared database) says about the agent.
extension OperatorCommands {

    /// Where `login` takes the password from, in the order it looks.
    public enum PasswordSource: Sendable {
        /// The first line of standard input (`--password-stdin`).
        case standardInputLine
        /// `auth.password_file`, else `ORDERLIVE_AUTH_PASSWORD`, else a prompt without echo on a terminal.
        case configuredOrPrompt
    }

    /// Logs in as `identifier` (default `auth.identifier`) and stores the session's tokens.
    public func login(identifier: String?, password source: PasswordSource) async throws {
        let configured = configuration.auth.identifier
        guard let identifier = identifier ?? (configured.isEmpty ? nil : configured) else {
            throw CommandUsageError("no identifier: pass --identifier or set auth.identifier")
        }
        let password: String
        switch source {
        case .standardInputLine:
            guard let line = console.readAnswer(), !line.isEmpty else {
                throw CommandFailure("--password-stdin: standard input had no password line")
            }
            password = line
        case .configuredOrPrompt:
            if let configured = SessionFactory(configuration: configuration).password() {
                password = configured
            } else if let typed = readPasswordWithoutEcho(prompt: "Password for \(identifier): "), !typed.isEmpty {
                password = typed
            } else {
                throw CommandFailure("no password: use --password-stdin, auth.password_file or ORDERLIVE_AUTH_PASSWORD")
            }
        }
        let (configuration, logger) = (configuration, quietLogger())
        let snapshot = try await CurlLoop.withLoop(logger: logger) { loop in
            do {
                let session = try SessionFactory(configuration: configuration).session(
                    loop: loop, identifier: identifier, password: { password }, logger: logger)
                return try await session.login(password: password)
            } catch let error as AuthError {
                if error.kind == .transient {
                    throw CommandFailure("cannot reach the backend at \(configuration.upstream.baseURL): \(error.message)")
                }
                throw CommandFailure(error.message)
            }
        }
        let role = snapshot.role.map { ", role \($0)" } ?? ""
        let stores = snapshot.storeIDs.isEmpty ? "" : ", stores \(snapshot.storeIDs.joined(separator: ", "))"
        console.write("Logged in as \(identifier): user \(snapshot.userID ?? "?")\(role)\(stores).")
        console.write("Session saved in \(configuration.store.stateDirectory)/credentials.json")
    }

    /// Revokes the session upstream (best effort, 2 s), deletes the local credentials and, with
    /// `wipe`, the local order database.
    public func logout(wipe: Bool) async throws {
        let (configuration, logger) = (configuration, quietLogger())
        let confirmed = try await CurlLoop.withLoop(logger: logger) { loop in
            do {
                return try await SessionFactory(configuration: configuration).session(loop: loop, logger: logger)
                    .logout(timeout: .seconds(2))
            } catch let error as AuthError {
                throw CommandFailure(error.message)
            }
        }
        console.write(confirmed
            ? "Logged out: the session was revoked upstream and local credentials deleted."
            : "Logged out locally: credentials deleted (the backend did not confirm the revocation).")
        guard wipe else { return }
        do {
            let removed = try await ConfiguredStore.wipe(configuration, logger: logger)
            console.write(removed.isEmpty
                ? "No local order database to wipe."
                : "Wiped local orders: \(removed.joined(separator: ", ")).")
        } catch {
            throw CommandFailure("could not wipe local orders: \(error)")
        }
    }

    /// The session, the store and the stream's state, never a token: lines, or one JSON object.
    public func status(json: Bool) async throws {
        let (configuration, logger) = (configuration, quietLogger())
        let snapshot = try await CurlLoop.withLoop(logger: logger) { loop in
            do {
                return try await SessionFactory(configuration: configuration).session(loop: loop, logger: logger).snapshot
            } catch let error as AuthError {
                throw CommandFailure(error.message)
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
            throw CommandFailure("cannot read the order database: \(error)")
        }
        // The running agent's stream state, or what was last known (DESIGN §5).
        let stream = StreamStatusFile.read(for: configuration)
        if json {
            console.write(StatusDocument.json(snapshot, store: store, stream: stream))
        } else {
            for line in StatusOutput.lines(
                snapshot, stateDirectory: configuration.store.stateDirectory, store: store, stream: stream) {
                console.write(line)
            }
        }
    }
}
