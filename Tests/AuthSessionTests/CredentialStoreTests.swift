import AuthSession
import Foundation
import Testing

@Suite struct CredentialStoreTests {
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
}
