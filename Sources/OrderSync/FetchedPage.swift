public import StoreModel

/// A page of `GET orders` as fetched: its `next_cursor`, read at once so the next page can be asked
/// for, and its orders, decoded when ``orders()`` is called (by another stage of the full sync).
public struct FetchedPage: Sendable {
    /// The cursor of the page after this one; nil on the last page.
    public let next: String?
    private let decode: @Sendable () throws(SyncError) -> [OrderRecord]

    /// A page decoded already.
    public init(orders: [OrderRecord], next: String?) {
        self.init(next: next) { () throws(SyncError) in orders }
    }

    /// A page whose orders `decode` reads when they are asked for.
    public init(next: String?, decode: @escaping @Sendable () throws(SyncError) -> [OrderRecord]) {
        self.next = next
        self.decode = decode
    }

    /// The page's orders (decoded now if that was left to do).
    public func orders() throws(SyncError) -> [OrderRecord] {
        try decode()
    }
}

extension OrderSource {
    /// One page whose decoding may wait (``FetchedPage/orders()``); by default fetched and decoded
    /// at once with ``fetchPage(cursor:limit:)``.
    public func fetchPageForLater(cursor: String?, limit: Int) async throws(SyncError) -> FetchedPage {
        let page = try await fetchPage(cursor: cursor, limit: limit)
        return FetchedPage(orders: page.orders, next: page.next)
    }
}
