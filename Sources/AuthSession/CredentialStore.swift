import CheckedInput
public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one record `credentials.json` holds (DESIGN §7).
public struct StoredCredentials: Sendable, Hashable, Codable {
    /// The login identifier.
    public var identifier: String
    /// The user the tokens belong to.
    public var userID: String?
    /// The user's role.
    public var role: String?
    /// The user's stores.
    public var storeIDs: [String]
    /// The access token.
    public var accessToken: String
    /// Access-token expiry, Unix seconds.
    public var accessExpiresAt: Double?
    /// The refresh token (single use).
    public var refreshToken: String
    /// Refresh-token expiry, Unix seconds.
    public var refreshExpiresAt: Double?
    /// When this record was written, Unix seconds.
    public var savedAt: Double

    enum CodingKeys: String, CodingKey {
        case identifier
        case userID = "user_id"
        case role
        case storeIDs = "store_ids"
        case accessToken = "access_token"
        case accessExpiresAt = "access_expires_at"
        case refreshToken = "refresh_token"
        case refreshExpiresAt = "refresh_expires_at"
        case savedAt = "saved_at"
    }

    /// Creates a record from a token pair.
    public init(identifier: String, pair: TokenPair, savedAt: Double) {
        self.identifier = identifier
        self.userID = pair.userID
        self.role = pair.role
        self.storeIDs = pair.storeIDs
        self.accessToken = pair.accessToken
        self.accessExpiresAt = pair.accessExpiresAt
        self.refreshToken = pair.refreshToken
        self.refreshExpiresAt = pair.refreshExpiresAt
        self.savedAt = savedAt
    }
}

/// `credentials.json` under the state directory: `0600` in a `0700` directory, replaced atomically
/// (temporary file, fsync, rename, fsync of the directory). A file that cannot be parsed is moved
/// aside with a timestamp, never deleted; one that cannot be read now is reported as locked.
public struct CredentialStore: Sendable {
    /// What loading found.
    public enum LoadResult: Sendable, Hashable {
        /// No credentials file.
        case none
        /// A readable record.
        case loaded(StoredCredentials)
        /// The file could not be parsed and was moved to `path`.
        case movedAside(path: String, reason: String)
        /// The file exists but cannot be read now (permissions, I/O): not a logout.
        case locked(reason: String)
    }

    /// The state directory.
    public let directory: String
    private let cipher: CredentialCipher?
    private let now: @Sendable () -> Double
    private let beforeRename: @Sendable () throws -> Void

    /// Creates a store; with a `cipher` the file is encrypted (AES-256-GCM). `beforeRename` runs
    /// between writing the temporary file and renaming it over the old one: a test seam for a
    /// failure at the worst moment.
    public init(
        directory: String,
        cipher: CredentialCipher? = nil,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        beforeRename: @escaping @Sendable () throws -> Void = {}
    ) {
        self.directory = directory
        self.cipher = cipher
        self.now = now
        self.beforeRename = beforeRename
    }

    /// The credentials file's path.
    public var path: String { directory + "/credentials.json" }

    /// Reads the record.
    public func load() -> LoadResult {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            let code = errno
            if code == ENOENT { return .none }
            return .locked(reason: "cannot read \(path): \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .locked(reason: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
            if bytes.count > 1 << 20 { break }
        }
        var plaintext = bytes
        if CredentialCipher.isEnvelope(bytes) {
            guard let cipher else {
                return moveAside(reason: "the file is encrypted but no auth.credentials_key_file is configured")
            }
            guard let opened = cipher.open(bytes) else {
                return moveAside(reason: "the file cannot be decrypted with the configured key (wrong key or damaged)")
            }
            plaintext = opened
        }
        // A plaintext file with a key configured is read as it is and encrypted on its next save.
        guard let record = try? JSONDecoder().decode(StoredCredentials.self, from: Data(plaintext)) else {
            return moveAside(reason: "not valid credentials JSON")
        }
        return .loaded(record)
    }

    private func moveAside(reason: String) -> LoadResult {
        let aside = "\(path).unreadable-\(Checked.int64(clamping: now()))"
        guard rename(path, aside) == 0 else {
            return .locked(reason: "\(path) is unreadable (\(reason)) and could not be moved aside: "
                + String(cString: strerror(errno)))
        }
        return .movedAside(path: aside, reason: reason)
    }

    /// Replaces the record atomically.
    public func save(_ credentials: StoredCredentials) throws(AuthError) {
        try ensureDirectory()
        var data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            data = try encoder.encode(credentials)
        } catch {
            throw AuthError(.invalidResponse, "could not encode credentials")
        }
        if let cipher { data = Data(try cipher.seal([UInt8](data))) }
        let temporary = "\(path).tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ioError("create \(temporary)") }
        var failure: AuthError?
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count, let base = raw.baseAddress {
                let written = write(descriptor, base + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = ioError("write \(temporary)")
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = ioError("fsync \(temporary)") }
        close(descriptor)
        if failure == nil {
            do { try beforeRename() } catch { failure = AuthError(.transient, "saving credentials was interrupted") }
        }
        if failure == nil, rename(temporary, path) != 0 { failure = ioError("rename \(temporary)") }
        if let failure {
            unlink(temporary)
            throw failure
        }
        syncDirectory()
    }

    /// Deletes the record (logout). Missing is fine.
    public func delete() throws(AuthError) {
        if unlink(path) != 0, errno != ENOENT { throw ioError("delete \(path)") }
        syncDirectory()
    }

    /// Creates the state directory `0700` if needed, and tightens an existing one to `0700`.
    public func ensureDirectory() throws(AuthError) {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw AuthError(.locked, "cannot create the state directory \(directory)")
            }
        } else if !isDirectory.boolValue {
            throw AuthError(.locked, "the state directory \(directory) is a file")
        }
        if chmod(directory, 0o700) != 0 { throw ioError("chmod \(directory)") }
    }

    private func syncDirectory() {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    private func ioError(_ what: String) -> AuthError {
        AuthError(.locked, "could not \(what): \(String(cString: strerror(errno)))")
    }
}
