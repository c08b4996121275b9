import AsyncSignals
import OrderSync
import ServerSentEvents
import StoreModel
import Testing

/// The stream's batches are translated while the batch before them commits, and nothing else about
/// journaling changes (DESIGN §3): batches commit one at a time in stream order, and after a failed
/// commit nothing later is committed.
@Suite(.timeLimit(.minutes(1))) struct PipelinedJournalTests {
    /// Records what happens, in order, and lets a test hold a batch's commit until it says so.
    private final class Scene: Sendable {
        let log = Locked<[String]>([])
        /// Per batch (named by its cursor): given when it has been translated.
        let translated = Locked<[String: OneShot<[String]>]>([:])
        /// Per batch: given when its commit has started.
        let started = Locked<[String: OneShot<Void>]>([:])
        /// Per batch: the commit waits for this before it returns (or throws when given `false`).
        let release = Locked<[String: OneShot<Bool>]>([:])

        func note(_ line: String) { log.withLock { $0.append(line) } }
        func shot<T>(_ table: Locked<[String: OneShot<T>]>, _ name: String) -> OneShot<T> {
            table.withLock { shots in
                if let shot = shots[name] { return shot }
                let shot = OneShot<T>()
                shots[name] = shot
                return shot
            }
        }

        struct Refused: Error {}

        func journal() -> PipelinedJournal {
            PipelinedJournal(translate: { events in
                var batch = TranslatedBatch()
                batch.cursor = events.last?.lastEventID
                self.note("translated \(events.last?.lastEventID ?? "")")
                self.shot(self.translated, events.last?.lastEventID ?? "").give(self.log.withLock { $0 })
                return batch
            }, commit: { batch in
                let name = batch.cursor ?? ""
                self.note("commit started \(name)")
                self.shot(self.started, name).give(())
                guard await self.shot(self.release, name).value else {
                    self.note("commit failed \(name)")
                    throw Refused()
                }
                self.note("committed \(name)")
            })
        }
    }

    private static func batch(_ id: String) -> [ServerSentEvent] {
        [ServerSentEvent(type: "order.updated", data: "{}", lastEventID: id)]
    }

    @Test func theNextBatchIsTranslatedWhileTheOneBeforeCommitsAndCommittedOnlyAfterIt() async throws {
        let scene = Scene()
        var journal = scene.journal()
        let firstCommitted = OneShot<Void>()
        try await journal.journal(Self.batch("1")) { firstCommitted.give(()) }
        await scene.shot(scene.started, "1").value
        // The first batch's commit is held; the second is read now, and its commit waits for the first.
        let releaser = Task {
            let seen = await scene.shot(scene.translated, "2").value
            scene.shot(scene.release, "1").give(true)
            await scene.shot(scene.started, "2").value
            scene.shot(scene.release, "2").give(true)
            return seen
        }
        try await journal.journal(Self.batch("2")) {}
        #expect(firstCommitted.current != nil, "the second batch's commit began only after the first's")
        try await journal.settle()
        #expect(await releaser.value == ["translated 1", "commit started 1", "translated 2"])
        #expect(scene.log.withLock { $0 } == [
            "translated 1", "commit started 1", "translated 2", "committed 1", "commit started 2", "committed 2",
        ])
    }

    @Test func afterAFailedCommitNothingLaterIsCommittedAndTheErrorIsThrown() async throws {
        let scene = Scene()
        var journal = scene.journal()
        try await journal.journal(Self.batch("1")) {}
        await scene.shot(scene.started, "1").value
        scene.shot(scene.release, "1").give(false)
        await #expect(throws: Scene.Refused.self) { try await journal.journal(Self.batch("2")) {} }
        #expect(scene.log.withLock { $0 } == ["translated 1", "commit started 1", "translated 2", "commit failed 1"]
                || scene.log.withLock { $0 } == ["translated 1", "commit started 1", "commit failed 1", "translated 2"])
        // The failure was reported once; the journal is empty and takes the stream again from here.
        try await journal.settle()
        #expect(!scene.log.withLock { $0 }.contains("commit started 2"))
    }

    @Test func settleWaitsForTheBatchInFlightAndThrowsItsError() async throws {
        let scene = Scene()
        var journal = scene.journal()
        let committed = Locked(false)
        try await journal.journal(Self.batch("1")) { committed.withLock { $0 = true } }
        await scene.shot(scene.started, "1").value
        #expect(committed.withLock { $0 } == false)
        scene.shot(scene.release, "1").give(true)
        try await journal.settle()
        #expect(committed.withLock { $0 })

        try await journal.journal(Self.batch("2")) {}
        scene.shot(scene.release, "2").give(false)
        await #expect(throws: Scene.Refused.self) { try await journal.settle() }
    }
}
