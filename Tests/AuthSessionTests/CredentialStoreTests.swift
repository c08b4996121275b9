import AuthSession
import Foundation
import Testing

@Suite(.timeLimit(.minutes(3))) struct CredentialStoreTests {
    private func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-store-\(UUID().uuidString)")
            .appendingPathComponent("state").path
    }

    private func record(_ suffix: String) -> StoredCredentials {
        StoredCredentials(
            identifier: "courier@example.com",
            pair: TokenPair(accessToken: "access-\(suffix)", refreshToken: "refresh-\(suffix)", accessExpiresAt: 100,
                            refreshExpiresAt: 200, userID: "5", role: "courier", storeIDs: ["1", "2"]),
            savedAt: 50)
    }

    private func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int ?? -1) & 0o777
    }

    @Test func fileIs0600InA0700DirectoryAndRoundTrips() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CredentialStore(directory: directory)
        try store.save(record("a"))
        #expect(mode(directory) == 0o700)
        #expect(mode(store.path) == 0o600)
        #expect(store.load() == .loaded(record("a")))
        try store.save(record("b"))
        #expect(store.load() == .loaded(record("b")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["credentials.json"])
    }

    @Test func failureBeforeTheRenameLeavesThePreviousFileIntact() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try CredentialStore(directory: directory).save(record("old"))
        struct Injected: Error {}
        let failing = CredentialStore(directory: directory, beforeRename: { throw Injected() })
        #expect(throws: AuthError.self) { try failing.save(record("new")) }
        #expect(failing.load() == .loaded(record("old")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["credentials.json"])
    }

    @Test func corruptFileIsMovedAsideNotDeleted() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CredentialStore(directory: directory, now: { 1_234 })
        try store.ensureDirectory()
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: store.path))
        guard case .movedAside(let path, _) = store.load() else {
            Issue.record("expected the file to be moved aside")
            return
        }
        #expect(path == store.path + ".unreadable-1234")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("{not json".utf8))
        #expect(store.load() == .none)
    }

    @Test func unreadableFileIsLockedNotALogout() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CredentialStore(directory: directory)
        // A directory where the file should be: it exists but cannot be read as a file (EISDIR),
        // which tests the "cannot read right now" path even when running as root.
        try FileManager.default.createDirectory(atPath: store.path, withIntermediateDirectories: true)
        guard case .locked = store.load() else {
            Issue.record("expected locked")
            return
        }
        #expect(FileManager.default.fileExists(atPath: store.path))
    }

    @Test func tokenPairExpiryComesFromExpiresInExpiresAtOrTheJWT() throws {
        let now = 1_000.0
        let base = #""access_token":"a.b.c","refresh_token":"r","user_id":5,"store_ids":[1,"2"]"#
        let seconds = try TokenPair.decode(Array("{\(base),\"expires_in\":900}".utf8), receivedAt: now)
        #expect(seconds.accessExpiresAt == 1_900)
        #expect(seconds.userID == "5")
        #expect(seconds.storeIDs == ["1", "2"])
        let unix = try TokenPair.decode(Array("{\(base),\"expires_at\":5000}".utf8), receivedAt: now)
        #expect(unix.accessExpiresAt == 5_000)
        let rfc = try TokenPair.decode(Array("{\(base),\"expires_at\":\"1970-01-01T01:00:00Z\"}".utf8), receivedAt: now)
        #expect(rfc.accessExpiresAt == 3_600)
        // {"exp":7200} base64url-encoded as the JWT payload.
        let jwt = try TokenPair.decode(
            Array(#"{"access_token":"h.eyJleHAiOjcyMDB9.s","refresh_token":"r"}"#.utf8), receivedAt: now)
        #expect(jwt.accessExpiresAt == 7_200)
        let opaque = try TokenPair.decode(Array(#"{"access_token":"opaque","refresh_token":"r"}"#.utf8), receivedAt: now)
        #expect(opaque.accessExpiresAt == nil)
        #expect(throws: AuthError.self) { try TokenPair.decode(Array(#"{"refresh_token":"r"}"#.utf8), receivedAt: now) }
        #expect(throws: AuthError.self) { try TokenPair.decode(Array("[]".utf8), receivedAt: now) }
    }

    @Test func encryptedFileHoldsNoTokenInClearAndRoundTrips() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cipher = try CredentialCipher(key: Array(repeating: 7, count: 32))
        let store = CredentialStore(directory: directory, cipher: cipher)
        try store.save(record("secret"))
        let raw = String(decoding: try Data(contentsOf: URL(fileURLWithPath: store.path)), as: UTF8.self)
        #expect(!raw.contains("access-secret"))
        #expect(!raw.contains("refresh-secret"))
        #expect(!raw.contains("courier@example.com"))
        #expect(store.load() == .loaded(record("secret")))
        #expect(mode(store.path) == 0o600)
    }

    @Test func wrongKeyTamperingOrAMissingKeyMoveTheFileAside() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let right = try CredentialCipher(key: Array(repeating: 1, count: 32))
        let wrong = try CredentialCipher(key: Array(repeating: 2, count: 32))
        var clock = 100.0
        func store(_ cipher: CredentialCipher?) -> CredentialStore {
            clock += 1
            let moment = clock
            return CredentialStore(directory: directory, cipher: cipher, now: { moment })
        }
        try store(right).save(record("a"))
        guard case .movedAside = store(wrong).load() else { Issue.record("a wrong key must move the file aside"); return }
        try store(right).save(record("b"))
        guard case .movedAside = store(nil).load() else { Issue.record("no key must move the file aside"); return }
        try store(right).save(record("c"))
        // Flip one character of the ciphertext: the GCM tag no longer matches.
        let url = URL(fileURLWithPath: store(right).path)
        var text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        if let range = text.range(of: #""ciphertext":""#) {
            let index = range.upperBound
            let replacement: Character = text[index] == "A" ? "B" : "A"
            text.replaceSubrange(index...index, with: String(replacement))
        }
        try Data(text.utf8).write(to: url)
        guard case .movedAside = store(right).load() else { Issue.record("a tampered file must move aside"); return }
        let aside = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".unreadable-") }
        #expect(aside.count == 3, "every unreadable file is kept, never deleted: \(aside)")
    }

    @Test func keyFilesAcceptRawHexAndBase64AndRejectOtherSizes() throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = (0..<32).map { UInt8($0) }
        let raw = directory + "/raw.key"
        let hex = directory + "/hex.key"
        let base64 = directory + "/b64.key"
        let short = directory + "/short.key"
        try Data(key).write(to: URL(fileURLWithPath: raw))
        try Data((key.map { String(format: "%02x", $0) }.joined() + "\n").utf8).write(to: URL(fileURLWithPath: hex))
        try Data((Data(key).base64EncodedString() + "\n").utf8).write(to: URL(fileURLWithPath: base64))
        try Data("too short\n".utf8).write(to: URL(fileURLWithPath: short))
        #expect(try CredentialCipher.loadKey(path: raw) == key)
        #expect(try CredentialCipher.loadKey(path: hex) == key)
        #expect(try CredentialCipher.loadKey(path: base64) == key)
        #expect(throws: AuthError.self) { try CredentialCipher.loadKey(path: short) }
        #expect(throws: AuthError.self) { try CredentialCipher.loadKey(path: directory + "/missing.key") }
    }
}
