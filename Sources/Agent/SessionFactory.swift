public import AuthSession
import CheckedInput
public import CurlHTTP
public import Foundation
public import Logging

/// Builds the session that `run`, `login`, `logout`, `status` and `inspect --auth` share, from one
/// configuration and one environment: the auth client of `upstream.*`, the credential store of the
/// state directory (encrypted when `auth.credentials_key_file` is set) and the password source.
///
/// It replaces `AuthCommands`' three static helpers, which each took the configuration again and read
/// the process's environment on their own; a factory holds both once, so a test or the agent passes its
/// own environment and every session built from it reads the same password.
public struct SessionFactory: Sendable {
    /// The configuration sessions are built from.
    public let configuration: OrderliveConfiguration
    /// Where `ORDERLIVE_AUTH_PASSWORD` is read.
    public let environment: [String: String]

    /// A factory over `configuration`, reading the password variable from `environment`.
    public init(configuration: OrderliveConfiguration,
                environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.configuration = configuration
        self.environment = environment
    }

    /// Reads the password at the moment a login needs it: `auth.password_file`, else
    /// `ORDERLIVE_AUTH_PASSWORD`. One trailing newline of a file is dropped.
    public var password: @Sendable () -> String? {
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
    public func credentialStore() throws(AuthError) -> CredentialStore {
        let keyFile = configuration.auth.credentialsKeyFile
        let cipher = keyFile.isEmpty ? nil : try CredentialCipher(key: CredentialCipher.loadKey(path: keyFile))
        return CredentialStore(directory: configuration.store.stateDirectory, cipher: cipher)
    }

    /// A session over the configured backend and state directory. `identifier` and `password`
    /// override the configured ones (`login --identifier`, `--password-stdin`).
    public func session(
        loop: CurlLoop, identifier: String? = nil, password: (@Sendable () -> String?)? = nil,
        observe: @escaping @Sendable (AuthEvent) -> Void = { _ in }, logger: Logger
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
                client: client, store: try credentialStore(),
                identifier: identifier ?? configuredIdentifier,
                password: password ?? self.password,
                refreshAhead: configuration.auth.refreshAhead, observe: observe),
            logger: logger)
    }
}
