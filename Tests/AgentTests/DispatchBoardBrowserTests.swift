import CurlHTTP
import Foundation
import Sandbox
import TestHarnesses
import TestKit
import Testing

/// The dispatch board (DESIGN §11) in a real headless Chromium (Debian's package, installed by
/// `make deps`) against a running agent and the Sandbox: the page's DOM is read over DevTools.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DispatchBoardBrowserTests {
    /// The board as the page draws it: status → card ids, status → count, and the connection state.
    static let boardState = """
        JSON.stringify({
          state: document.getElementById("connection").dataset.state,
          columns: Object.fromEntries(Array.from(document.querySelectorAll("section.column")).map(column =>
            [column.dataset.status, {
              count: Number(column.querySelector(".count").textContent),
              ids: Array.from(column.querySelectorAll("article.card")).map(card => card.dataset.id)
            }]))
        })
        """

    struct Board: Equatable {
        var state: String
        var columns: [String: [String]]
        var countsMatch: Bool

        init?(_ text: String) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let state = object["state"] as? String,
                  let columns = object["columns"] as? [String: [String: Any]] else { return nil }
            self.state = state
            var ids: [String: [String]] = [:]
            var countsMatch = true
            for (status, column) in columns {
                let cards = column["ids"] as? [String] ?? []
                if !cards.isEmpty { ids[status] = cards.sorted() }
                countsMatch = countsMatch && (column["count"] as? Int) == cards.count
            }
            self.columns = ids
            self.countsMatch = countsMatch
        }
    }

    /// The Sandbox's orders grouped as the board should show them.
    static func expected(_ book: OrderBook) -> [String: [String]] {
        Dictionary(grouping: book.snapshot, by: { $0.value.status }).mapValues { $0.map(\.key).sorted() }
    }

    /// `orderlive run` against the Sandbox, its orders API on `apiListen`; returns it once the API listens.
    func start(_ sandbox: Sandbox, directory: String, apiListen: String) async throws -> (agent: RunningAgent, port: Int) {
        let agent = try RunningAgent([], environment: [
            "ORDERLIVE_UPSTREAM_BASE_URL": await sandbox.baseURL, "ORDERLIVE_AUTH_IDENTIFIER": SandboxUser.demo.identifier,
            "ORDERLIVE_AUTH_PASSWORD": SandboxUser.demo.password, "ORDERLIVE_STREAM_INITIAL_DELAY_MS": "100",
            "ORDERLIVE_STREAM_MAX_DELAY_MS": "500", "ORDERLIVE_INGEST_LISTEN": "", "ORDERLIVE_API_LISTEN": apiListen,
            "ORDERLIVE_STORE_STATE_DIR": directory, "ORDERLIVE_LOG_FORMAT": "json",
        ], limit: .seconds(120))
        let listening = try #require(await agent.logs.wait(message: "orders API listening"))
        let address = listening.line["api.listen"] ?? ""
        let port = try #require(address.split(separator: ":").last.flatMap { Int($0) })
        return (agent, port)
    }

    func stop(_ agent: RunningAgent) async {
        agent.child.signal(SIGTERM)
        #expect(await agent.finish() == 0)
    }

    @Test func theBoardFollowsTheSandboxThroughRestartsAndAReset() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-board-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandboxConfiguration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true), feed: .orderBook)
        try await Sandbox.withRunning(sandboxConfiguration) { sandbox in
            let book = sandbox.orders
            let first = book.create(status: "created")
            let second = book.create(status: "assigned", storeID: 2)
            var (agent, port) = try await start(sandbox, directory: directory, apiListen: "127.0.0.1:0")
            let browser = try await HeadlessChromium.start(url: "http://127.0.0.1:\(port)/")
            func showsTheSandbox(state: String = "live") async throws -> Board? {
                let expected = Self.expected(book)
                let text = try await browser.waitFor(Self.boardState) { text in
                    guard let board = Board(text) else { return false }
                    return board.columns == expected && board.countsMatch && board.state == state
                }
                return Board(text)
            }

            // Live: created, moved and deleted at the Sandbox. Its script runs and its style applies
            // under the page's Content-Security-Policy, which allows them by hash only.
            #expect(try await showsTheSandbox() != nil)
            let margin = try await browser.evaluate("getComputedStyle(document.body).marginTop") as? String
            let header = try await browser.evaluate("getComputedStyle(document.querySelector('header')).display") as? String
            #expect(margin == "0px" && header == "flex", "the board's style was blocked: \(margin ?? "-"), \(header ?? "-")")
            book.update(first, status: "picked_up")
            let third = book.create(status: "created", storeID: 3)
            book.delete(second)
            let live = try await showsTheSandbox()
            #expect(live?.columns == ["picked_up": ["\(first)"], "created": ["\(third)"]])

            // The agent restarts on the same port; changes made meanwhile arrive without a reload.
            await stop(agent)
            _ = try await browser.waitFor(Self.boardState) { Board($0)?.state == "reconnecting" }
            book.update(third, status: "delivering")
            let fourth = book.create(status: "assigned")
            (agent, _) = try await start(sandbox, directory: directory, apiListen: "127.0.0.1:\(port)")
            let resumed = try await showsTheSandbox()
            #expect(resumed?.columns["delivering"] == ["\(third)"] && resumed?.columns["assigned"] == ["\(fourth)"])
            #expect(try await browser.evaluate("performance.getEntriesByType('navigation').length") as? Int == 1)

            // A new database: the page's last id is from another store, so it is reset and shows
            // exactly the new store's orders, marked resynced.
            await stop(agent)
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: directory + "/orderlive.sqlite" + suffix) }
            book.delete(first)
            (agent, _) = try await start(sandbox, directory: directory, apiListen: "127.0.0.1:\(port)")
            let reset = try await showsTheSandbox(state: "resynced")
            #expect(reset?.columns.values.flatMap { $0 }.count == book.snapshot.count)
            let loop = try CurlLoop(logger: quietLogger)
            let stored = try await AgentHTTP(loop: loop).get("http://127.0.0.1:\(port)/v1/orders")
            let orders = (try JSONSerialization.jsonObject(with: Data(stored.body.utf8)) as? [String: Any])?["orders"] as? [[String: Any]] ?? []
            let grouped = Dictionary(grouping: orders, by: { "\($0["status"] ?? "")" }).mapValues { $0.map { "\($0["id"] ?? "")" }.sorted() }
            #expect(reset?.columns == grouped)
            await loop.shutdown()
            await stop(agent)
        }
    }
}
