import CurlHTTP
import Foundation
import JSONToolkit
import Sandbox
import TestKit
import Testing

/// Issue 42: the Sandbox's changing order book (what `make demo` shows) looks like a business's day:
/// orders from three stores with totals and notes, a courier on every order from `assigned` on, some
/// orders cancelled, and `updated_at` the time of the last change, not a fixed date.
@Suite(.timeLimit(.minutes(1))) struct SandboxDayTests {
    @Test func theChangingBookHasStoresCouriersCancellationsAndRealTimestamps() async throws {
        let configuration = SandboxConfiguration(port: 0, eventInterval: .milliseconds(5), feed: .orderBook, changesOrders: true)
        let loop = try CurlLoop(logger: quietLogger)
        // Before the Sandbox starts: it changes orders from its first moment.
        let started = Date().timeIntervalSince1970
        try await Sandbox.withRunning(configuration) { sandbox in
            let base = await sandbox.baseURL
            var stores: Set<Int> = []
            var statuses: Set<String> = []
            var withTotals = 0
            var notes: Set<String> = []
            var unassignedButMoving: [String] = []
            var stale: [String] = []
            for _ in 0..<40 {
                try await Task.sleep(for: .milliseconds(50))
                let page = try await loop.perform(HTTPRequest(url: base + "/v1/orders?limit=1000"))
                guard case .object(let body)? = JSONReader.parse(page.body), case .array(let orders)? = body["orders"] else {
                    Issue.record("not a page of orders: \(String(decoding: page.body, as: UTF8.self))")
                    return
                }
                let now = Date().timeIntervalSince1970
                for case .object(let order) in orders {
                    if case .number(let store)? = order["store_id"] { stores.insert(Int(store)) }
                    guard case .string(let status)? = order["status"] else { continue }
                    statuses.insert(status)
                    if case .number? = order["total_cents"] { withTotals += 1 }
                    if case .string(let note)? = order["note"], !note.isEmpty { notes.insert(note) }
                    if ["assigned", "picked_up", "delivering", "delivered"].contains(status), order["courier_id"] == .null {
                        unassignedButMoving.append("\(order)")
                    }
                    if case .string(let stamp)? = order["updated_at"],
                       let seconds = ISO8601DateFormatter().date(from: stamp)?.timeIntervalSince1970,
                       seconds < started - 2 || seconds > now + 2 {
                        stale.append(stamp)
                    }
                }
                if statuses.contains("cancelled"), statuses.contains("delivered"), stores.count == 3 { break }
            }
            #expect(stores == [1, 2, 3], "orders from three stores")
            #expect(statuses.isSuperset(of: ["created", "assigned", "picked_up", "cancelled"]), "\(statuses)")
            #expect(withTotals > 0 && notes.count >= 3, "totals and notes: \(withTotals), \(notes)")
            #expect(unassignedButMoving.isEmpty, "an order on its way without a courier: \(unassignedButMoving.prefix(3))")
            #expect(stale.isEmpty, "updated_at is the time of the change: \(stale.prefix(3))")
        }
        await loop.shutdown()
    }
}
