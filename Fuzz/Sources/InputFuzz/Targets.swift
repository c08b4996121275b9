import Agent
import AuthSession
import CurlHTTP
import EventStream
import Foundation
import JSONToolkit
import SQLiteStore
import StoreModel
import OrderSync
import OrdersAPI
import PushIngest
import ServerSentEvents
import WebhookSigning

enum Targets {
    static let day = Duration.seconds(86_400)

    static func gorush(_ bytes: [UInt8]) {
        guard case .success(let request) = GorushRequest.parse(bytes, maximumNotifications: 100) else { return }
        if request.notifications.count > 100 { violated("more notifications than the limit") }
        guard (try? JSONSerialization.jsonObject(with: Data(request.successBody.utf8))) != nil else {
            violated("the success body is not JSON")
        }
        for notification in request.notifications {
            for job in PushTranslator.jobs(for: notification, now: 1_700_000_000) {
                switch job.kind {
                case .upsert:
                    guard let order = job.order else { violated("an upsert without its order") }
                    if order.id.isEmpty || order.status.isEmpty { violated("an upsert without id or status") }
                    if let version = order.version, version.magnitude > 9_007_199_254_740_992 {
                        violated("a version beyond ±2^53")
                    }
                case .fetch:
                    if job.orderID?.isEmpty != false { violated("a fetch without an order id") }
                default:
                    break
                }
            }
        }
    }

    /// Input: `id \n timestamp \n signatures \n now(8 bytes) body…`.
    static func webhooks(_ bytes: [UInt8]) {
        guard let verifier = try? StandardWebhooks(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") else {
            violated("the fixed secret no longer loads")
        }
        let parts = bytes.split(separator: 0x0A, maxSplits: 3, omittingEmptySubsequences: false)
        let field = { (index: Int) -> String? in
            index < parts.count ? String(decoding: parts[index], as: UTF8.self) : nil
        }
        let rest = parts.count > 3 ? parts[3] : []
        let now = integer(rest, as: Int64.self)
        let body = Array(rest.dropFirst(8))
        _ = verifier.verify(id: field(0), timestamp: field(1), signatures: field(2), body: body, now: now)
        // A signature made now for this body verifies, whatever the id and body hold.
        let clock = Int64(1_600_000_000) + Int64(integer(rest, as: UInt32.self) % 100_000_000)
        let id = field(0) ?? "msg"
        guard !id.isEmpty else { return }
        let signature = verifier.sign(id: id, timestamp: clock, body: body)
        guard case .success = verifier.verify(
            id: id, timestamp: String(clock), signatures: "v1,bad " + signature, body: body, now: clock)
        else { violated("a fresh signature did not verify") }
    }

    static func tokenPair(_ bytes: [UInt8]) {
        guard let pair = try? TokenPair.decode(bytes, receivedAt: 1_700_000_000) else { return }
        for expiry in [pair.accessExpiresAt, pair.refreshExpiresAt].compactMap({ $0 }) {
            if !expiry.isFinite || expiry < 0 || expiry > 1_700_000_000 + 315_576_000 + 253_402_300_799 {
                violated("an expiry out of range: \(expiry)")
            }
        }
    }

    /// Input: `status(2 bytes) now(8 bytes) header lines "Name: value"…`.
    static func responsePolicy(_ bytes: [UInt8]) {
        let status = Int(integer(bytes[...], as: UInt16.self) % 700)
        let now = integer(bytes.dropFirst(2), as: Int64.self)
        let text = String(decoding: bytes.dropFirst(10), as: UTF8.self)
        var headers = HTTPHeaders()
        for line in text.split(separator: "\n") {
            let pieces = line.split(separator: ":", maxSplits: 1)
            if pieces.count == 2 { headers.add(name: String(pieces[0]), value: String(pieces[1])) }
        }
        let head = HTTPResponseHead(status: status, headers: headers, url: "http://fuzz")
        let maximum = Duration.seconds(30)
        if case .retry(_, let retryAfter?) = ResponseDecision.classify(head, now: now, maximum: maximum),
           retryAfter < .zero || retryAfter > maximum {
            violated("a Retry-After outside 0...maximum")
        }
        if let delay = ResponseDecision.parseRetryAfter(text, now: now, maximum: maximum), delay < .zero || delay > maximum {
            violated("a parsed Retry-After outside 0...maximum")
        }
        _ = ResponseDecision.mediaTypeEssence(text)
    }

    static func orders(_ bytes: [UInt8]) {
        // Skipping a value accepts exactly what reading it accepts, and stops at the same byte; so does
        // reading an object's chosen members (the page decoder's path).
        bytes.withUnsafeBufferPointer { buffer in
            var built = JSONReader(buffer)
            var skipped = JSONReader(buffer)
            var chosen = JSONReader(buffer)
            let value = try? built.value(depth: 0)
            let skips = (try? skipped.skipValue(depth: 0)) != nil
            let members = Result { () throws(JSONReader.Failure) in try chosen.members(OrderRecord.decodedKeys, depth: 0) }
            if (value != nil) != skips || (skips && built.index != skipped.index) {
                violated("skipValue and value disagree")
            }
            switch (value, members) {
            case (.object(let all)?, .success(let some?)):
                let names = ["id", "status", "version", "store_id", "courier_id", "updated_at"]
                if some != names.map({ all[$0] }) { violated("members kept other values") }
                if chosen.index != built.index { violated("members stopped elsewhere") }
            case (let value?, .success(nil)):
                if value.object != nil || chosen.index != built.index { violated("members refused an object") }
            case (nil, .failure):
                break
            default:
                violated("members and value disagree")
            }
        }
        if let order = try? OrdersClient.decodeOrder(bytes, id: "fuzz", appliedAt: 0) {
            if order.id.isEmpty || order.status.isEmpty { violated("an order without id or status") }
        }
        if let page = try? OrdersClient.decodePage(bytes, appliedAt: 0) {
            for order in page.orders where order.id.isEmpty || order.status.isEmpty {
                violated("a page order without id or status")
            }
            // The full sync asks for the next page with the cursor read before the page is decoded.
            if (try? OrdersClient.pageCursor(bytes)) != .some(page.next) { violated("pageCursor and decodePage disagree") }
        }
    }

    /// Input: `type \n data…`.
    static func events(_ bytes: [UInt8]) {
        let parts = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false)
        let type = String(decoding: parts[0], as: UTF8.self)
        let data = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : ""
        let translation = EventTranslator.translate(
            ServerSentEvent(type: type.isEmpty ? "message" : type, data: data, lastEventID: "1"), now: 0)
        for job in translation.jobs where job.kind == .upsert && job.order == nil {
            violated("an upsert without its order")
        }
        // The translator matches keys as bytes: they must name what String keys name, and be refused
        // exactly where a String key is.
        let names = ["order_id", "version", "order"]
        Array(data.utf8).withUnsafeBufferPointer { buffer in
            var byString: [Int?] = []
            var byPosition: [Int?] = []
            var stringReader = JSONReader(buffer)
            var keyedReader = JSONReader(buffer)
            let strings = Result { () throws(JSONReader.Failure) in
                try stringReader.object { (reader, key) throws(JSONReader.Failure) in
                    byString.append(names.firstIndex(of: key))
                    try reader.skipValue(depth: 1)
                }
            }
            let keyed = Result { () throws(JSONReader.Failure) in
                try keyedReader.object(JSONKeys(names)) { (reader, position) throws(JSONReader.Failure) in
                    byPosition.append(position)
                    try reader.skipValue(depth: 1)
                }
            }
            switch (strings, keyed) {
            case (.success, .success):
                if byString != byPosition || stringReader.index != keyedReader.index { violated("keys read as bytes differ") }
            case (.failure, .failure):
                break
            default:
                violated("keys read as bytes and as strings disagree on validity")
            }
        }
    }

    /// Input: first byte even → the rest is a YAML file; odd → `KEY=VALUE` lines of environment.
    static func configuration(_ bytes: [UInt8]) {
        let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        var environment = ["HOME": "/nonexistent-home"]
        var file: String?
        if bytes[0] & 1 == 0 {
            let path = NSTemporaryDirectory() + "orderlive-fuzz-\(getpid()).yaml"
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else { return }
            file = path
        } else {
            for line in text.split(separator: "\n") {
                let pieces = line.split(separator: "=", maxSplits: 1)
                if pieces.count == 2 { environment[String(pieces[0])] = String(pieces[1]) }
            }
        }
        let done = DispatchSemaphore(value: 0)
        let request = LoadRequest(file: file, environment: environment)
        // The fuzzer's entry point is synchronous; the loader is async. One load at a time.
        Task.detached {
            _ = try? await ConfigurationLoader.load(
                file: request.file, environment: request.environment, currentDirectory: "/nonexistent")
            done.signal()
        }
        done.wait()
    }
}

extension Targets {
    /// `APIConsumers.parse`: a consumer has a name of 1 to 64 word characters and, when scoped, at
    /// least one store; an error names a line the text has; the same text reads the same twice.
    /// And the session cookie read from the same bytes as a `Cookie` header: a value found is not
    /// empty, holds no `;`, and is part of the header; and the same bytes as a JWT and as its claims
    /// (``JWTParsingRules``).
    static func tokens(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let session = APIAuthentication.cookie("orderlive_session", inHeader: text) {
            if session.isEmpty || session.contains(";") || !text.contains(session) { violated("a cookie's value is a non-empty part of its header") }
        }
        if let violation = JWTParsingRules.violation(in: bytes) { violated(violation) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
        do {
            let consumers = try APIConsumers.parse(text).consumers
            for consumer in consumers {
                if consumer.name.isEmpty || consumer.name.utf8.count > 64 { violated("a consumer's name is 1 to 64 bytes") }
                if consumer.stores?.isEmpty == true { violated("a scoped consumer has a store") }
            }
            guard (try? APIConsumers.parse(text).consumers) == consumers else { violated("the same file reads the same twice") }
        } catch {
            if error.line < 1 || error.line > lines { violated("an error names a line of the file") }
        }
    }
}

/// What one configuration load is given.
struct LoadRequest: Sendable {
    let file: String?
    let environment: [String: String]
}
