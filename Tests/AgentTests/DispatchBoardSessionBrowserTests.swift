import CurlHTTP
import Foundation
import Sandbox
import TestHarnesses
import TestKit
import Testing

/// DESIGN §14 in a real headless Chromium against a running agent with `api.auth: bearer`: the board
/// signs in through a session (the token typed once, or a link's token traded at once), no URL in the
/// browser's history or the agent's log carries a token, the cookie is HttpOnly and SameSite=Strict,
/// the board shows only its consumer's stores; and a page of another origin reads the API only when
/// `api.cors_origins` lists it.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DispatchBoardSessionBrowserTests {
    static let boardToken = "board-two-token-31337"
    static let tillToken = "till-one-token-27182"

    /// The ids of the cards the page shows, sorted, and who it says it is.
    static let shown = """
        JSON.stringify({
          state: document.getElementById("connection").dataset.state,
          consumer: document.getElementById("who").dataset.consumer || "",
          login: !document.getElementById("login").hidden,
          ids: Array.from(document.querySelectorAll("article.card")).map(card => card.dataset.id).sort()
        })
        """

    struct Shown: Decodable, Equatable {
        var state: String
        var consumer: String
        var login: Bool
        var ids: [String]

        init?(_ text: String) {
            guard let shown = try? JSONDecoder().decode(Shown.self, from: Data(text.utf8)) else { return nil }
            self = shown
        }

        init(state: String, consumer: String, login: Bool, ids: [String]) {
            (self.state, self.consumer, self.login, self.ids) = (state, consumer, login, ids)
        }
    }

    @Test func theBoardSignsInWithASessionAndShowsOnlyItsStores() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-board-session-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokens = directory + "/tokens"
        try "\(Self.boardToken) name=board-2 stores=2\n\(Self.tillToken) name=till-1 stores=1\n"
            .write(toFile: tokens, atomically: true, encoding: .utf8)
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            let inTwo = [book.create(status: "created", storeID: 2), book.create(status: "assigned", storeID: 2)]
            _ = book.create(status: "created", storeID: 1)
            let sandboxURL = await sandbox.baseURL
            let listedOrigin = Self.origin(of: sandboxURL)
            let agent = try RunningAgent([], environment: [
                "ORDERLIVE_UPSTREAM_BASE_URL": sandboxURL, "ORDERLIVE_AUTH_IDENTIFIER": SandboxUser.demo.identifier,
                "ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password, "ORDERLIVE_INGEST_LISTEN": "",
                "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_API_AUTH": "bearer", "ORDERLIVE_API_TOKENS_FILE": tokens,
                "ORDERLIVE_API_CORS_ORIGINS": listedOrigin,
                "ORDERLIVE_STORE_STATE_DIR": directory + "/state", "ORDERLIVE_LOG_FORMAT": "json",
            ], limit: .seconds(120))
            let listening = try #require(await agent.logs.wait(message: "orders API listening"))
            let port = try #require((listening.line["api.listen"] ?? "").split(separator: ":").last.flatMap { Int($0) })
            let base = "http://127.0.0.1:\(port)"

            // Typed once: the page asks for a token, then lives on the cookie.
            let browser = try await HeadlessChromium.start(url: base + "/")
            _ = try await browser.waitFor(Self.shown) { Shown($0)?.login == true && Shown($0)?.state == "signed-out" }
            _ = try await browser.evaluate(
                #"document.getElementById("token").value = "\#(Self.boardToken)"; document.getElementById("signin").click(); "ok""#)
            let expected = inTwo.map(String.init).sorted()
            let signedIn = try await browser.waitFor(Self.shown) { Shown($0) == Shown(state: "live", consumer: "board-2", login: false, ids: expected) }
            #expect(Shown(signedIn)?.ids == expected, "only store 2's orders")
            let later = book.create(status: "created", storeID: 2)
            _ = book.create(status: "created", storeID: 1)
            _ = try await browser.waitFor(Self.shown) { Shown($0)?.ids == (expected + ["\(later)"]).sorted() }

            #expect(try await browser.evaluate("document.cookie") as? String == "", "the cookie is HttpOnly: no script reads it")
            let cookies = try await browser.command("Network.getCookies", ["urls": [base + "/"]])
            #expect(cookies.contains(#""name":"orderlive_session""#) && cookies.contains(#""httpOnly":true"#)
                && cookies.contains(#""sameSite":"Strict""#), "\(cookies.prefix(300))")
            #expect(!cookies.contains(Self.boardToken))

            // Signed in by typing: no URL the browser visited carries the token.
            let history = try await browser.command("Page.getNavigationHistory").replacingOccurrences(of: "\\/", with: "/")
            #expect(history.contains(#""url":"\#(base)/""#), "\(history.prefix(300))")
            #expect(!history.contains(Self.boardToken), "\(history.prefix(300))")

            // A link with a token: traded for a session at once and taken out of the address bar (the
            // browser recorded the link as it was opened: docs/API.md says to prefer typing the token).
            let linked = try await HeadlessChromium.start(url: base + "/?access_token=\(Self.tillToken)&store_id=1")
            _ = try await linked.waitFor(Self.shown) { Shown($0)?.consumer == "till-1" && Shown($0)?.state == "live" }
            #expect(try await linked.evaluate("location.href") as? String == base + "/?store_id=1")

            // CORS: a page of the listed origin reads the API with a token; another origin is refused.
            let otherOrigin = listedOrigin.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            for (origin, allowed) in [(listedOrigin, true), (otherOrigin, false)] {
                _ = try await browser.command("Page.navigate", ["url": origin + "/sandbox/bytes/16"])
                _ = try await browser.waitFor("location.origin") { $0 == origin }
                let script = """
                    fetch("\(base)/v1/orders", { headers: { Authorization: "Bearer \(Self.boardToken)" } })
                      .then(answer => answer.status).catch(() => "refused").then(result => { window.corsResult = String(result); });
                    "sent"
                    """
                _ = try await browser.evaluate(script)
                let result = try await browser.waitFor("window.corsResult || ''") { !$0.isEmpty }
                #expect(result == (allowed ? "200" : "refused"), "\(origin)")
            }

            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
            let logs = agent.logs.raw.joined(separator: "\n")
            #expect(!logs.contains(Self.boardToken) && !logs.contains(Self.tillToken), "no token in the agent's log")
            #expect(logs.contains("orders API session started") && logs.contains("board-2"))
        }
    }

    /// `scheme://host:port` of a URL.
    static func origin(of url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return url }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }
}
