// PushIngest: the Gorush-compatible push endpoint of DESIGN §4 and the operations endpoints on the same
// listener. Bounds, then authentication, then Gorush validation, then a durable journal commit before
// any 200. It must never parse a refused body, never answer 500 for an expected condition, never hang.

import Foundation

/// Any JSON value, for Gorush's free-form fields such as `data`.
public enum JSONValue: Decodable, Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

/// One Gorush notification: the fields orderlive reads, typed as Gorush types them (a value of the
/// wrong type makes the whole request a 400, as it does in Gorush); every other key is ignored.
public struct GorushNotification: Decodable, Sendable, Hashable {
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
    /// The app's own payload: where order pushes say what changed.
    public var data: [String: JSONValue]?
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

    enum CodingKeys: String, CodingKey {
        case tokens, platform, message, title, priority, topic, data, badge, production, development
        case contentAvailable = "content_available"
        case mutableContent = "mutable_content"
        case pushType = "push_type"
        case notifID = "notif_id"
        case apnsID = "apns_id"
        case collapseID = "collapse_id"
    }
}

/// Gorush's request envelope.
public struct GorushRequest: Decodable, Sendable, Hashable {
    /// The notifications.
    public var notifications: [GorushNotification]

    /// Gorush's `counts`: tokens, plus one when a topic is set, summed over notifications.
    public var counts: Int {
        notifications.reduce(0) { $0 + ($1.tokens?.count ?? 0) + (($1.topic ?? "").isEmpty ? 0 : 1) }
    }

    /// Decodes and validates a body with Gorush's rules and messages (DESIGN §4).
    public static func parse(_ body: [UInt8], maximumNotifications: Int) -> Result<GorushRequest, GorushError> {
        struct Envelope: Decodable { var notifications: [GorushNotification]? }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(body)),
              let notifications = envelope.notifications
        else { return .failure(GorushError("Missing notifications field.")) }
        if notifications.isEmpty { return .failure(GorushError("Notifications field is empty.")) }
        if notifications.count > maximumNotifications {
            return .failure(GorushError("Number of notifications(\(notifications.count)) over limit(\(maximumNotifications))"))
        }
        return .success(GorushRequest(notifications: notifications))
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
        let escaped = message.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return #"{"code":400,"message":"\#(escaped)"}"#
    }
}
