import Foundation
import JSONToolkit

/// One Gorush notification: the fields orderlive reads, typed as Gorush types them (a value of the
/// wrong type makes the whole request a 400, as it does in Gorush); every other key is ignored.
public struct GorushNotification: Sendable, Hashable {
    /// Device tokens.
    public var tokens: [String]?
    /// 1 iOS, 2 Android, 3 Huawei.
    public var platform: Int?
    /// The visible text.
    public var message: String?
    /// The title.
    public var title: String?
    /// `high` or `normal`.
    public var priority: String?
    /// Silent (background) push.
    public var contentAvailable: Bool?
    /// iOS mutable content.
    public var mutableContent: Bool?
    /// APNs push type, e.g. `background`.
    public var pushType: String?
    /// A topic; Gorush counts it as one more target.
    public var topic: String?
    /// The app's own payload, as far as orderlive reads it: where order pushes say what changed.
    public var data: PushData?
    /// The sender's id for this notification (used for idempotency).
    public var notifID: String?
    /// APNs id.
    public var apnsID: String?
    /// Collapse id.
    public var collapseID: String?
    /// Badge.
    public var badge: Int?
    /// APNs production flag.
    public var production: Bool?
    /// APNs development flag.
    public var development: Bool?

    /// The fingerprint of this notification's bytes as sent, when it has a `notif_id`: what tells a
    /// resent notification from a different one under a reused id (``ContentFingerprint``).
    public internal(set) var fingerprint: String?

    /// Reads one notification object; a known field of the wrong type fails, as in Gorush.
    init(reading reader: inout JSONReader) throws(JSONReader.Failure) {
        try reader.object { (reader, key) throws(JSONReader.Failure) in
            switch key {
            case "tokens":
                if reader.consumeNull() { tokens = nil; return }
                var list: [String] = []
                try reader.array { (reader) throws(JSONReader.Failure) in
                    guard reader.peek() == 0x22 else { throw JSONReader.Failure() }
                    list.append(try reader.string())
                }
                tokens = list
            case "platform": platform = try reader.optionalInteger()
            case "badge": badge = try reader.optionalInteger()
            case "message": message = try reader.optionalString()
            case "title": title = try reader.optionalString()
            case "priority": priority = try reader.optionalString()
            case "topic": topic = try reader.optionalString()
            case "push_type": pushType = try reader.optionalString()
            case "notif_id": notifID = try reader.optionalString()
            case "apns_id": apnsID = try reader.optionalString()
            case "collapse_id": collapseID = try reader.optionalString()
            case "content_available": contentAvailable = try reader.optionalBool()
            case "mutable_content": mutableContent = try reader.optionalBool()
            case "production": production = try reader.optionalBool()
            case "development": development = try reader.optionalBool()
            case "data":
                if reader.consumeNull() { data = nil; return }
                reader.skipWhitespace()
                guard reader.peek() == 0x7B else {
                    // Not an object: Gorush's bind fails, as it did when this was a dictionary.
                    throw JSONReader.Failure()
                }
                data = try PushData(reading: &reader, depth: 1)
            default:
                _ = try reader.value(depth: 1)
            }
        }
    }
}

/// Gorush's request envelope.
public struct GorushRequest: Sendable, Hashable {
    /// The notifications.
    public var notifications: [GorushNotification]

    /// Gorush's `counts`: tokens, plus one when a topic is set, summed over notifications.
    public var counts: Int {
        notifications.reduce(0) { $0 + ($1.tokens?.count ?? 0) + (($1.topic ?? "").isEmpty ? 0 : 1) }
    }

    /// Decodes and validates a body with Gorush's rules and messages (DESIGN §4).
    public static func parse(_ body: [UInt8], maximumNotifications: Int) -> Result<GorushRequest, GorushError> {
        // A body that is not JSON, not an object, or has a known field of the wrong type anywhere is
        // Gorush's "Missing notifications field." (its bind fails before it looks further).
        let notifications = body.withUnsafeBufferPointer { buffer -> [GorushNotification]? in
            var reader = JSONReader(buffer)
            return try? readEnvelope(&reader)
        }
        guard let notifications else { return .failure(GorushError("Missing notifications field.")) }
        if notifications.isEmpty { return .failure(GorushError("Notifications field is empty.")) }
        if notifications.count > maximumNotifications {
            return .failure(GorushError("Number of notifications(\(notifications.count)) over limit(\(maximumNotifications))"))
        }
        return .success(GorushRequest(notifications: notifications))
    }

    /// The envelope's `notifications` (nil when absent or null); every other key is skipped.
    private static func readEnvelope(_ reader: inout JSONReader) throws(JSONReader.Failure) -> [GorushNotification]? {
        var notifications: [GorushNotification]?
        try reader.object { (reader, key) throws(JSONReader.Failure) in
            guard key == "notifications" else {
                _ = try reader.value(depth: 1)
                return
            }
            if reader.consumeNull() { notifications = nil; return }
            var list: [GorushNotification] = []
            try reader.array { (reader) throws(JSONReader.Failure) in
                reader.skipWhitespace()
                let start = reader.index
                var notification = try GorushNotification(reading: &reader)
                if notification.notifID?.isEmpty == false {
                    notification.fingerprint = reader.withBytes(start..<reader.index) { ContentFingerprint.of($0) }
                }
                list.append(notification)
            }
            notifications = list
        }
        reader.skipWhitespace()
        guard reader.atEnd else { throw JSONReader.Failure() }
        return notifications
    }

    /// Gorush's success body: `{"counts": N, "logs": [], "success": "ok"}`.
    public var successBody: String {
        #"{"counts":\#(counts),"logs":[],"success":"ok"}"#
    }
}

/// A Gorush 400: its exact message, and the body Gorush sends.
public struct GorushError: Error, Sendable, Hashable {
    /// Gorush's message.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    /// `{"code": 400, "message": "..."}`
    public var body: String {
        #"{"code":400,"message":\#(JSONText.string(message))}"#
    }
}
