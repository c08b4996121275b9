import CurlHTTP
import Foundation
import Testing
import TestHarnesses
import TestKit

/// JWTs on the real executable (DESIGN §14): keys from `api.jwt.jwks_url`, fetched through the
/// agent's own HTTP loop, and from `api.jwt.keys_file`, which SIGHUP re-reads (a file that does not
/// load keeps the keys in use, logged and counted).
@Suite(.serialized, .timeLimit(.minutes(5))) struct JWTAgentTests {
    @Test func jwksFromAURLAndKeysFromAFileThatSighupReloads() async throws {
        let mint = try await JWTMint.make()
        let directory = mint.directory
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keysFile = directory + "/keys.pem"
        try String(contentsOfFile: directory + "/ed.pub", encoding: .utf8).write(toFile: keysFile, atomically: true, encoding: .utf8)
        try await DocumentServer.withRunning(path: "jwks.json") { server, url in
            server.serve(try await mint.jwks(["rsa": "backend-1"]))
            let agent = try RunningAgent([], environment: [
                "ORDERLIVE_UPSTREAM_BASE_URL": "http://127.0.0.1:1", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
                "ORDERLIVE_INGEST_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_LOG_FORMAT": "json",
                "ORDERLIVE_API_AUTH": "bearer", "ORDERLIVE_API_JWT_JWKS_URL": url, "ORDERLIVE_API_JWT_KEYS_FILE": keysFile,
                "ORDERLIVE_API_JWT_AUDIENCE": "orderlive",
            ])
            let push = try #require(await agent.logs.wait(message: "push endpoint listening")?.line)
            let api = try #require(await agent.logs.wait(message: "orders API listening")?.line)
            let pushPort = try #require(push["push.listen"]?.split(separator: ":").last.map(String.init))
            let apiPort = try #require(api["api.listen"]?.split(separator: ":").last.map(String.init))
            let loop = try CurlLoop(logger: quietLogger)
            func status(_ token: String) async throws -> Int {
                try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(apiPort)/v1/orders", headers: ["Authorization": "Bearer \(token)"])).status
            }
            let exp = Int64(Date().timeIntervalSince1970 + 600)
            let claims = #"{"sub":"dashboard","stores":"*","scope":"orders:read","aud":"orderlive","exp":\#(exp)}"#
            let fromURL = try await mint.token(claims, key: "rsa", alg: "RS256", kid: "backend-1")
            let fromFile = try await mint.token(claims, key: "ed", alg: "EdDSA")
            #expect(try await status(fromURL) == 200, "the JWKS was fetched through the agent's loop")
            #expect(server.requests == 1)
            #expect(try await status(fromURL) == 200 && server.requests == 1, "a known kid fetches nothing")
            #expect(try await status(fromFile) == 200)
            let wrongAudience = try await mint.token(claims.replacingOccurrences(of: #""aud":"orderlive""#, with: #""aud":"x""#),
                                                     key: "ed", alg: "EdDSA")
            #expect(try await status(wrongAudience) == 401)

            // A keys file that does not load keeps the keys in use.
            try "not a key".write(toFile: keysFile, atomically: true, encoding: .utf8)
            let mark = agent.logs.count
            agent.child.signal(SIGHUP)
            #expect(await agent.logs.wait(from: mark, message: "SIGHUP: the api.jwt key files did not load; the keys in use stay",
                                          ["config.key": "api.jwt"]) != nil)
            #expect(try await status(fromFile) == 200)
            // One that loads replaces them: the Ed25519 key is gone, the EC key is in.
            try String(contentsOfFile: directory + "/ec.pub", encoding: .utf8).write(toFile: keysFile, atomically: true, encoding: .utf8)
            let again = agent.logs.count
            agent.child.signal(SIGHUP)
            #expect(await agent.logs.wait(from: again, message: "JWT keys reloaded") != nil)
            #expect(try await status(fromFile) == 401)
            #expect(try await status(try await mint.token(claims, key: "ec", alg: "ES256")) == 200)
            #expect(try await status(fromURL) == 200, "the fetched JWKS stays through a reload of the files")

            let metrics = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:\(pushPort)/metrics"))
            let samples = try #require(prometheusSamples(String(decoding: metrics.body, as: UTF8.self)))
            #expect(samples[#"orderlive_credentials_reload_failures_total{key="api.jwt"}"#] == 1)
            #expect(samples["orderlive_api_jwks_fetch_failures_total"] == 0)
            await loop.shutdown()
            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
            let logs = agent.logs.raw.joined(separator: "\n")
            #expect(!logs.contains(fromURL) && !logs.contains(fromFile), "no JWT in the log")
        }
    }
}
