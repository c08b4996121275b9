import Foundation
import Sandbox
import TestHarnesses
import TestKit
import Testing

/// Twenty board tabs on one `https://` origin in a real headless Chromium (issue 57): over
/// HTTP/1.1 a browser holds at most six connections to one origin and each `EventSource` keeps one,
/// so the seventh tab would never go live. Over `h2` every tab's feed is a stream of one connection:
/// all twenty go live and each shows an order created afterwards.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DispatchBoardHTTP2BrowserTests {
    /// The page's connection state and whether it shows a card for `id`.
    static func state(showing id: Int) -> String {
        """
        JSON.stringify({state: document.getElementById("connection").dataset.state,
                        shown: document.querySelector('article.card[data-id="\(id)"]') !== null})
        """
    }

    @Test func twentyBoardTabsOnOneOriginAreAllLive() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-board-h2-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try await TestCertificateAuthority.make("depot", in: directory)
        let server = try await ca.issue("board")
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            let first = book.create(status: "created")
            let agent = try RunningAgent([], environment: [
                "ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL, "ORDERLIVE_AUTH_IDENTIFIER": SandboxUser.demo.identifier,
                "ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password, "ORDERLIVE_INGEST_LISTEN": "",
                "ORDERLIVE_API_LISTEN": "127.0.0.1:0", "ORDERLIVE_STORE_STATE_DIR": directory + "/state",
                "ORDERLIVE_API_TLS_CERTIFICATE_FILE": server.certificate, "ORDERLIVE_API_TLS_KEY_FILE": server.key,
                "ORDERLIVE_LOG_FORMAT": "json",
            ], limit: .seconds(180))
            let listening = try #require(await agent.logs.wait(message: "orders API listening"))
            let port = try #require((listening.line["api.listen"] ?? "").split(separator: ":").last.flatMap { Int($0) })
            let url = "https://127.0.0.1:\(port)/"
            let browser = try await HeadlessChromium.start(url: url, trustingAnyCertificate: true)
            var tabs: [String?] = [nil]
            for _ in 1..<20 { tabs.append(try await browser.openTab(url)) }

            for (index, tab) in tabs.enumerated() {
                _ = try await browser.command("Page.bringToFront", page: tab)
                let seen = try await browser.waitFor(Self.state(showing: first), page: tab, limit: .seconds(60)) {
                    $0.contains(#""state":"live""#) && $0.contains(#""shown":true"#)
                }
                #expect(seen.contains("live"), "tab \(index + 1): \(seen)")
            }
            // A change after all twenty are live reaches every one of them.
            let second = book.create(status: "assigned", storeID: 2)
            for (index, tab) in tabs.enumerated() {
                // A tab in the background draws on its next frame, which only a visible tab gets.
                _ = try await browser.command("Page.bringToFront", page: tab)
                let seen = try await browser.waitFor(Self.state(showing: second), page: tab, limit: .seconds(30)) {
                    $0.contains(#""shown":true"#)
                }
                #expect(seen.contains(#""state":"live""#), "tab \(index + 1): \(seen)")
            }
            let protocols = try await browser.evaluate(
                "performance.getEntriesByType('navigation').map(entry => entry.nextHopProtocol).join(',')") as? String
            #expect(protocols == "h2", "the board was fetched over \(protocols ?? "-")")
            agent.child.signal(SIGTERM)
            #expect(await agent.finish() == 0)
        }
    }
}
