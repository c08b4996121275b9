public import AuthSession
public import CurlHTTP
public import Foundation
import JSONToolkit
public import StoreModel

/// The orders part of the upstream API (DESIGN §3).
public protocol OrderSource: Sendable {
    /// `GET orders/{id}`: the order, or nil when it is gone for this user (404).
    func fetchOrder(id: String) async throws(SyncError) -> OrderRecord?
    /// One page of `GET orders?limit=&cursor=`: the orders and the next cursor (nil at the end).
    func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?)
    /// The same page with its orders still to decode, so that the next page can be fetched while
    /// this one is decoded (a default in an extension decodes at once).
    func fetchPageForLater(cursor: String?, limit: Int) async throws(SyncError) -> FetchedPage
    /// Asks the backend about no order in particular (the first order of the list): returns when it
    /// answers, throws what it failed with. How the executor tells an unavailable backend from one
    /// order it cannot serve (DESIGN §8 "Sync").
    func answersAtAll() async throws(SyncError)
}

extension OrderSource {
    /// `GET orders?limit=1`.
    public func answersAtAll() async throws(SyncError) {
        _ = try await fetchPage(cursor: nil, limit: 1)
    }
}

/// ``OrderSource`` over the curl loop, authenticated by the session: a 401 tells the session that
/// token failed and retries once with a fresh one.
public struct OrdersClient: OrderSource {
    private let loop: CurlLoop
    private let session: Session
    private let baseURL: String
    private let ordersPath: String
    private let connectTimeout: Duration
    private let requestTimeout: Duration
    private let tls: TLSOptions
    private let now: @Sendable () -> Double

    /// Creates a client.
    public init(
        loop: CurlLoop, session: Session, baseURL: String, ordersPath: String = "/v1/orders",
        connectTimeout: Duration = HTTPRequest.standardConnectTimeout, requestTimeout: Duration = HTTPRequest.standardTimeout, tls: TLSOptions = .init(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.loop = loop
        self.session = session
        self.baseURL = baseURL
        self.ordersPath = ordersPath
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.tls = tls
        self.now = now
    }

    public func fetchOrder(id: String) async throws(SyncError) -> OrderRecord? {
        let encoded = id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? id
        let response = try await get(ordersPath + "/" + encoded)
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw SyncError.answered("GET order \(id)", response, now: now()) }
        return try Self.decodeOrder(response.body, id: id, appliedAt: now())
    }

    /// Decodes a single-order body (DESIGN §3), keeping its exact text. Pure, for the fuzzer too.
    public static func decodeOrder(_ body: [UInt8], id: String, appliedAt: Double) throws(SyncError) -> OrderRecord {
        let text = String(decoding: body, as: UTF8.self).trimming(" \t\r\n")
        guard let object = JSONObjectText(Array(text.utf8)) else {
            throw SyncError("GET order \(id): the body is not a JSON object")
        }
        do {
            return try OrderRecord.decode(object.fields, text: text, appliedAt: appliedAt)
        } catch {
            throw SyncError("GET order \(id): \(error.message)")
        }
    }

    public func fetchPage(cursor: String?, limit: Int) async throws(SyncError) -> (orders: [OrderRecord], next: String?) {
        try Self.decodePage(try await pageBody(cursor: cursor, limit: limit), appliedAt: now())
    }

    /// The page's body with only its `next_cursor` read (``pageCursor(_:)``): the rest is decoded
    /// by ``FetchedPage/orders()``, while the next page is on its way.
    public func fetchPageForLater(cursor: String?, limit: Int) async throws(SyncError) -> FetchedPage {
        let body = try await pageBody(cursor: cursor, limit: limit)
        let next = try Self.pageCursor(body)
        let appliedAt = now()
        return FetchedPage(next: next) { () throws(SyncError) in
            let page = try Self.decodePage(body, appliedAt: appliedAt)
            // The same bytes read twice cannot give two cursors; were they to, the page is refused.
            guard page.next == next else { throw SyncError("GET orders: the page's next_cursor was read two ways") }
            return page.orders
        }
    }

    private func pageBody(cursor: String?, limit: Int) async throws(SyncError) -> [UInt8] {
        var path = ordersPath + "?limit=\(limit)"
        if let cursor {
            path += "&cursor=" + (cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor)
        }
        let response = try await get(path)
        guard response.status == 200 else { throw SyncError.answered("GET orders", response, now: now()) }
        return response.body
    }

    /// Decodes a page body: a bare array, or `{"orders": [...], "next_cursor": ...}`; each order is
    /// kept as its exact text. Pure, for the fuzzer too.
    public static func decodePage(
        _ body: [UInt8], appliedAt: Double
    ) throws(SyncError) -> (orders: [OrderRecord], next: String?) {
        var entries: [(members: [JSONValue?]?, text: String)]?
        var next: String?
        let read: Bool = body.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            func readList(_ reader: inout JSONReader) throws(JSONReader.Failure) {
                var list: [(members: [JSONValue?]?, text: String)] = []
                try reader.array { (reader) throws(JSONReader.Failure) in
                    reader.skipWhitespace()
                    let start = reader.index
                    // Only the members the order decoder reads are built; the rest is checked and skipped.
                    let members = try reader.members(OrderRecord.decodedKeys, depth: 2)
                    list.append((members, reader.text(start..<reader.index)))
                }
                entries = list
            }
            do {
                switch reader.peek() {
                case 0x5B:
                    try readList(&reader)
                case 0x7B:
                    try reader.object { (reader, key) throws(JSONReader.Failure) in
                        switch key {
                        case "orders" where reader.peek() == 0x5B: try readList(&reader)
                        case "next_cursor": next = try reader.value(depth: 1).identifier
                        default: _ = try reader.value(depth: 1)
                        }
                    }
                default:
                    return false
                }
            } catch {
                return false
            }
            reader.skipWhitespace()
            return reader.atEnd
        }
        guard read, let entries else { throw pageShapeError }
        var records: [OrderRecord] = []
        records.reserveCapacity(entries.count)
        for entry in entries {
            guard let members = entry.members else { throw SyncError("GET orders: an entry is not an object") }
            do {
                records.append(try OrderRecord.decode(members: members, text: entry.text, appliedAt: appliedAt))
            } catch {
                throw SyncError("GET orders: \(error.message)")
            }
        }
        return (records, next)
    }

    /// What a page body that is neither shape is told.
    static let pageShapeError = SyncError("GET orders: the body is neither an array nor {\"orders\": [...]}")

    private func get(_ path: String) async throws(SyncError) -> HTTPResponse {
        var retried = false
        while true {
            let token: String
            do {
                token = try await session.accessToken()
            } catch {
                throw SyncError("no session: \(error.message)", waitsForSession: error.kind == .unauthenticated)
            }
            let request = HTTPRequest(
                url: baseURL + path, headers: ["Authorization": "Bearer \(token)", "Accept": "application/json"],
                connectTimeout: connectTimeout, timeout: requestTimeout, tls: tls)
            let response: HTTPResponse
            do {
                response = try await loop.perform(request)
            } catch let error as CurlError {
                throw SyncError.transfer(error)
            } catch {
                throw SyncError("the request was cancelled")
            }
            if response.status == 401, !retried {
                retried = true
                await session.tokenRejected(token)
                continue
            }
            return response
        }
    }
}
