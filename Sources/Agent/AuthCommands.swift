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
                refreshAhead: configuration.auth.refreshAhead, observe: observe),
            logger: logger)
    }
}
