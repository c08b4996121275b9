import CheckedInput
import AuthSession
import CurlHTTP
import Foundation
import Logging

/// What `login`, `logout`, `status` and `inspect --auth` share: a session built from configuration.
public enum AuthCommands {
    /// Reads the password at the moment a login needs it: `auth.password_file`, else
    /// `ORDERLIVE_AUTH_PASSWORD`. One trailing newline of a file is dropped.
    public static func passwordSource(
        _ configuration: OrderliveConfiguration,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> @Sendable () -> String? {
        let file = configuration.auth.passwordFile
        let fromEnvironment = environment[ConfigurationLoader.passwordVariable]
        return {
            if !file.isEmpty {
                guard var text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
                if text.hasSuffix("\n") { text.removeLast() }
                if text.hasSuffix("\r") { text.removeLast() }
                return text.isEmpty ? nil : text
            }
            return fromEnvironment.flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// The credential store of the configured state directory, encrypted when a key file is set.
    /// A key file that cannot be read or has the wrong size is an error (nothing is written unencrypted).
    public static func makeStore(configuration: OrderliveConfiguration) throws(AuthError) -> CredentialStore {
        let keyFile = configuration.auth.credentialsKeyFile
        let cipher = keyFile.isEmpty ? nil : try CredentialCipher(key: CredentialCipher.loadKey(path: keyFile))
        return CredentialStore(directory: configuration.store.stateDirectory, cipher: cipher)
    }

    /// A session over the configured backend and state directory.
    public static func makeSession(
        configuration: OrderliveConfiguration, loop: CurlLoop, identifier: String? = nil,
        password: (@Sendable () -> String?)? = nil, observe: @escaping @Sendable (AuthEvent) -> Void = { _ in },
        logger: Logger
    ) throws(AuthError) -> Session {
        let upstream = configuration.upstream
        let client = AuthClient(
            loop: loop,
            endpoints: .init(baseURL: upstream.baseURL, loginPath: upstream.loginPath,
                             refreshPath: upstream.refreshPath, logoutPath: upstream.logoutPath),
            connectTimeout: upstream.connectTimeout, requestTimeout: upstream.requestTimeout, tls: upstream.tls)
        let configuredIdentifier = configuration.auth.identifier.isEmpty ? nil : configuration.auth.identifier
        return Session(
            dependencies: Session.Dependencies(
                client: client, store: try makeStore(configuration: configuration),
                identifier: identifier ?? configuredIdentifier,
                password: password ?? passwordSource(configuration),
                refreshAhead: Double(configuration.auth.refreshAhead.components.seconds), observe: observe),
            logger: logger)
    }

    /// Deletes the local order database (`logout --wipe`): `orderlive.sqlite` and its WAL files.
    /// Returns the files removed.
    public static func wipeOrders(stateDirectory: String) throws -> [String] {
        var removed: [String] = []
        for suffix in ["", "-wal", "-shm"] {
            let path = stateDirectory + "/orderlive.sqlite" + suffix
            if FileManager.default.fileExists(atPath: path) {
                try FileManager.default.removeItem(atPath: path)
                removed.append(path)
            }
        }
        return removed
    }

    /// `status --json` (never a token): the auth section, then — when the order database exists —
    /// the stream (live from the running agent's `stream`, else `stopped` with the stored cursor),
    /// the journal, dead letters, orders, and the user the data belongs to.
    public static func statusJSON(
        _ snapshot: Session.Snapshot, store: OrderCommands.StoreStatus? = nil, stream: AgentState.Snapshot? = nil,
        now: Double = Date().timeIntervalSince1970
    ) -> String {
        var fields = [#""state":\#(JSONText.string(snapshot.state.rawValue))"#]
        fields.append(#""user_id":\#(jsonIdentifier(snapshot.userID))"#)
        fields.append(#""role":\#(snapshot.role.map(JSONText.string) ?? "null")"#)
        fields.append(#""store_ids":[\#(snapshot.storeIDs.map(jsonIdentifier).joined(separator: ","))]"#)
        fields.append(#""access_expires_at":\#(snapshot.accessExpiresAt.map { JSONText.string(rfc3339($0)) } ?? "null")"#)
        fields.append(#""refresh_expires_at":\#(snapshot.refreshExpiresAt.map { JSONText.string(rfc3339($0)) } ?? "null")"#)
        var sections = [#""auth":{\#(fields.joined(separator: ","))}"#]
        if let store {
            let oldest = store.counts.oldestJobCreatedAt.map { max(0, Checked.int64(clamping: now - $0)) } ?? 0
            var streamFields = [
                #""state":\#(JSONText.string(stream?.stream.rawValue ?? "stopped"))"#,
                #""cursor":\#(JSONText.string(store.cursor))"#,
            ]
            if let stream {
                streamFields.append(#""reconnects":\#(stream.reconnects)"#)
                streamFields.append(#""last_event_at":\#(stream.lastEventAt.map { JSONText.string(rfc3339($0)) } ?? "null")"#)
            }
            sections.append(#""stream":{\#(streamFields.joined(separator: ","))}"#)
            sections.append(#""journal":{"depth":\#(store.counts.journalDepth),"oldest_age_s":\#(oldest)}"#)
            sections.append(#""dead_letters":\#(store.counts.deadLetters)"#)
            sections.append(#""orders":\#(store.counts.orders)"#)
            sections.append(#""owner_user_id":\#(jsonIdentifier(store.owner ?? snapshot.userID))"#)
        } else {
            sections.append(#""owner_user_id":\#(jsonIdentifier(snapshot.userID))"#)
        }
        return "{" + sections.joined(separator: ",") + "}"
    }

    /// `status`'s readable lines.
    public static func statusLines(
        _ snapshot: Session.Snapshot, stateDirectory: String, store: OrderCommands.StoreStatus? = nil,
        stream: AgentState.Snapshot? = nil
    ) -> [String] {
        var lines = ["auth:     \(snapshot.state.rawValue)"]
        if let user = snapshot.userID {
            let role = snapshot.role.map { ", role \($0)" } ?? ""
            let stores = snapshot.storeIDs.isEmpty ? "" : ", stores \(snapshot.storeIDs.joined(separator: ", "))"
            lines.append("user:     \(user)\(role)\(stores)")
        }
        if let access = snapshot.accessExpiresAt { lines.append("access:   expires \(rfc3339(access))") }
        if let refresh = snapshot.refreshExpiresAt { lines.append("refresh:  expires \(rfc3339(refresh))") }
        if let store {
            var streamLine = "stream:   \(stream?.stream.rawValue ?? "stopped"), cursor \(store.cursor.isEmpty ? "(none)" : store.cursor)"
            if let stream {
                streamLine += ", \(stream.reconnects) reconnect(s)"
                if let last = stream.lastEventAt { streamLine += ", last event \(rfc3339(last))" }
            }
            lines.append(streamLine)
            lines.append("journal:  \(store.counts.journalDepth) job(s), \(store.counts.deadLetters) dead letter(s)")
            lines.append("orders:   \(store.counts.orders)" + (store.owner.map { " (user \($0))" } ?? ""))
        } else {
            lines.append("orders:   no local order database yet")
        }
        lines.append("state:    \(stateDirectory)")
        return lines
    }

    /// A user or store id as JSON: a number when it is all digits, else a string.
    static func jsonIdentifier(_ value: String?) -> String {
        guard let value else { return "null" }
        if !value.isEmpty, value.count < 16, value.allSatisfy(\.isASCII), value.allSatisfy(\.isNumber) { return value }
        return JSONText.string(value)
    }

    /// Unix seconds as RFC 3339 UTC.
    static func rfc3339(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }
}
