import AsyncSignals
import StoreModel
import Tracing

extension SyncExecutor {
    /// Applies every page of a full sync and returns the ids the backend returned. Pipelined in three
    /// stages, each as soon as its input is there: the next page is asked for once this one's cursor
    /// is read (the pages come one cursor after another), a page is decoded while the next is on its
    /// way, and applied on the executor while later ones are fetched and decoded. At most
    /// ``pagesAhead`` decoded pages wait for the store, one more is decoded and one fetched. A page
    /// that fails ends the job (the stages still running are cancelled) and the job is retried.
    /// Each page's apply is a child span of the job's `span` (one trace per full sync, DESIGN §14).
    func fullSync(_ job: JobRecord, span: (any Span)?) async throws -> Set<String> {
        let source = self.source
        let limit = configuration.pageSize
        let pages = BoundedHandOff<[OrderRecord]>(capacity: Self.pagesAhead)
        return try await withThrowingTaskGroup { group in
            // The stages before the store run on the global executor. A child inherits this task's
            // executor (the executor's one thread, busy with the applies), so a child that did not ask
            // for another one did not start until an apply had ended: a cold start of 100,000 orders
            // took the sum of the fetches and the applies, not the longer.
            group.addTask(executorPreference: globalConcurrentExecutor) {
                do {
                    let seen = try await Self.fetchAndDecode(source: source, limit: limit, into: pages)
                    pages.finish()
                    return seen
                } catch {
                    pages.finish(throwing: error)
                    throw error
                }
            }
            var index = 0
            while let orders = try await pages.receive() {
                let page = span.flatMap { tracer?.startSpan("full sync page", context: $0.context, ofKind: .internal) }
                page?.attributes["orderlive.page"] = index
                page?.attributes["orderlive.orders"] = orders.count
                defer { page?.end() }
                try await store.applyPage(orders, for: job.id)
                index += 1
            }
            span?.attributes["orderlive.pages"] = index
            guard let seen = try await group.next() else { throw SyncError("the full sync's fetches ended without a result") }
            return seen
        }
    }

    /// Decoded pages the store has not taken yet, at most.
    static let pagesAhead = 2

    /// Fetches every page, starting each request as soon as the cursor before it is read, and hands
    /// the decoded pages on in order. Returns every id the pages held: collected here, off the
    /// executor's thread (hashing 100,000 ids there was about 5 % of a cold start's apply time).
    static func fetchAndDecode(
        source: any OrderSource, limit: Int, into pages: BoundedHandOff<[OrderRecord]>
    ) async throws -> Set<String> {
        var seen = Set<String>()
        var page = try await source.fetchPageForLater(cursor: nil, limit: limit)
        while true {
            let current = page
            let following: FetchedPage? = try await withThrowingTaskGroup { group in
                if let cursor = current.next {
                    group.addTask { try await source.fetchPageForLater(cursor: cursor, limit: limit) }
                }
                let orders = try current.orders()
                for order in orders { seen.insert(order.id) }
                try await pages.send(orders)
                return try await group.next()
            }
            guard let following else { return seen }
            page = following
        }
    }
}
