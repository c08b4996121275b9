import AsyncSignals
import Logging
@testable import PostgresStore
import StoreModel
import TestHarnesses
import TestKit
import Testing
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Issue 41 at the engine: every round trip has a deadline, a connection that missed it is never
/// used again, and the kernel is told to give up on a dead peer.
@Suite(.timeLimit(.minutes(3))) struct PostgresDeadlineTests {
    /// The store reaches the database through a proxy that silently stops passing packets: a write
    /// and a read each fail within the round-trip deadline (`failover_s`), saying the database did
    /// not answer, and the store is marked unwritable; once the network heals the next write
    /// succeeds — on a new connection, the ones that missed their deadline having been closed.
    @Test func aRoundTripOnASilentNetworkFailsByItsDeadlineAndTheConnectionIsNotReused() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        let proxy = try PartitionProxy(to: server.port)
        let url = server.url(database: database).replacingOccurrences(of: ":\(server.port)/", with: ":\(proxy.port)/")
        var configuration = try PostgresStoreConfiguration(url: url, password: nil, account: "deadline")
        configuration.failover = .seconds(2)
        let store = PostgresOrderStore(configuration: configuration, logger: quietLogger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            try await store.prepare()
            _ = try await store.journal([NewJob(kind: .fetch, orderID: "1", source: "test")])
            let connectionsBefore = proxy.accepted

            proxy.hold()
            let clock = ContinuousClock()
            for attempt in ["journal", "counts"] {
                let started = clock.now
                do {
                    if attempt == "journal" {
                        _ = try await store.journal([NewJob(kind: .fetch, orderID: "2", source: "test")])
                    } else {
                        _ = try await store.counts()
                    }
                    Issue.record("\(attempt) succeeded through a silent network")
                } catch {
                    #expect("\(error)".contains("did not answer within 2") || "\(error)".contains("cannot be reached"),
                            "\(attempt): \(error)")
                }
                let took = clock.now - started
                #expect(took < .seconds(3), "\(attempt) failed after \(took); the deadline is 2 s")
            }
            #expect(!store.writeHealth.writable)

            proxy.heal()
            _ = try await store.journal([NewJob(kind: .fetch, orderID: "3", source: "test")])
            #expect(store.writeHealth.writable)
            #expect(proxy.accepted > connectionsBefore, "a connection that missed its deadline is not used again")
            #expect(try await server.psql("SELECT string_agg(order_id, ',' ORDER BY id) FROM orderlive_job", database: database) == "1,3")
        }
        await proxy.stop()
    }

    /// Pooled connections carry TCP keepalive (idle, interval and count from `failover_s`) and
    /// `TCP_USER_TIMEOUT` = `failover_s`, read back from their sockets. Fails, saying so, should a
    /// PostgresNIO update hide the channel these are set on.
    @Test func pooledConnectionsHaveKeepaliveAndAUserTimeout() async throws {
        let server = try await PostgresServer.running()
        let database = try await server.database()
        var configuration = try PostgresStoreConfiguration(url: server.url(database: database), password: nil, account: "sockets")
        configuration.failover = .seconds(8)
        let store = PostgresOrderStore(configuration: configuration, logger: quietLogger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            try await store.prepare()
            let values = try await store.read { connection -> [Int]? in
                guard let channel = DatabaseSocket.channel(of: connection) else { return nil }
                var values: [Int] = []
                for (option, _) in DatabaseSocket.options(failover: .seconds(8)) {
                    values.append(Int(try await channel.getOption(option).get()))
                }
                return values
            }
            let read = try #require(values, "PostgresNIO no longer keeps its connection's channel as `channel`")
            // SO_KEEPALIVE on, idle 2 s, interval 2 s, 3 probes, user timeout 8000 ms.
            #expect(read == [1, 2, 2, 3, 8_000])
        }
    }
}
