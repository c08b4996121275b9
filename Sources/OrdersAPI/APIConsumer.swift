import LocalHTTP
import StoreModel
import WebhookSigning
import Foundation

/// Who reads the orders API, and what they may read (DESIGN §14 "Scopes on the orders API"): a name
/// for the logs, the stores whose orders it sees (`nil`: every store) and an access level.
public struct APIConsumer: Sendable, Hashable {
    /// What a consumer may do: `read` the orders; `operate` is reserved for operator actions.
    public enum Access: String, Sendable, Hashable, CaseIterable {
        case read
        case operate
    }

    /// The name the logs use (never the token).
    public var name: String
    /// The stores whose orders it sees; nil for every store.
    public var stores: Set<String>?
    /// Its access level.
    public var access: Access

    /// A consumer.
    public init(name: String, stores: Set<String>? = nil, access: Access = .read) {
        self.name = name
        self.stores = stores
        self.access = access
    }

    /// Whoever reaches a listener that asks for no token (`api.auth: none`): every store, read.
    public static let anyone = APIConsumer(name: "anyone")

    /// Its stores as a message lists them.
    var storesText: String {
        guard let stores else { return "every store" }
        return "store " + stores.sorted().joined(separator: ", ")
    }
}

/// The consumers of `api.tokens_file` (DESIGN §14), one a line:
/// `TOKEN [name=NAME] [stores=1,2|*] [access=read|operate]`, `#` starting a comment. `TOKEN` may be
/// `sha256:<64 hex digits>`, the SHA-256 of the token, so the file need not hold the secret. A line
/// with only a token is a consumer of every store that reads.
public struct APIConsumers: Sendable {
    /// How a line names its token.
    enum Credential: Sendable, Hashable {
        /// The token itself.
        case token([UInt8])
        /// The token's SHA-256.
        case digest([UInt8])
    }

    struct Entry: Sendable {
        var credential: Credential
        var consumer: APIConsumer

        /// The token's SHA-256, however the line gives it.
        var grant: [UInt8] {
            switch credential {
            case .token(let token): SHA256Digest.of(token)
            case .digest(let digest): digest
            }
        }
    }

    let entries: [Entry]
    /// Each consumer by the SHA-256 of its token: a presented token is looked up by its digest, so
    /// nothing is compared byte by byte with a secret, and the lookup costs the same for 1 line or 100.
    private let grants: [[UInt8]: APIConsumer]

    /// The consumers, in the file's order.
    public var consumers: [APIConsumer] { entries.map(\.consumer) }

    /// Consumers with these tokens, each of every store (as a file of bare tokens).
    public init(tokens: [String]) {
        self.init(entries: tokens.enumerated().map { index, token in
            Entry(credential: .token(Array(token.utf8)), consumer: APIConsumer(name: "line-\(index + 1)"))
        })
    }

    init(entries: [Entry]) {
        self.entries = entries
        var grants: [[UInt8]: APIConsumer] = [:]
        for entry in entries {
            // The parser refuses a token given twice; for `init(tokens:)` the first line wins.
            let grant = entry.grant
            if grants[grant] == nil { grants[grant] = entry.consumer }
        }
        self.grants = grants
    }

    /// The consumer whose token `presented` is, with the token's SHA-256 (its grant), or nil.
    func grant(presenting presented: Substring) -> (consumer: APIConsumer, grant: [UInt8])? {
        let digest = SHA256Digest.of(presented.utf8)
        return grants[digest].map { ($0, digest) }
    }

    /// True when the token with this SHA-256 still names exactly `consumer` (same name, stores and
    /// access): a grant that is gone or changed ends the feeds and sessions it opened.
    func stillGrants(_ grant: [UInt8], to consumer: APIConsumer) -> Bool {
        grants[grant] == consumer
    }
}

/// A line of `api.tokens_file` that does not read: its number and why, never its token.
public struct TokensFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The line, counted from 1.
    public var line: Int
    /// What is wrong with it.
    public var message: String

    public var description: String { "line \(line): \(message)" }
}

extension APIConsumers {
    /// The longest name and store id a line may give.
    static let longestWord = 64

    /// Reads a tokens file. Pure, for the fuzzer too.
    public static func parse(_ text: String) throws(TokensFileError) -> APIConsumers {
        var entries: [Entry] = []
        var seen: [Credential: Int] = [:]
        var names: [String: Int] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let entry = try Self.entry(line, number: number)
            if let earlier = seen[entry.credential] {
                throw TokensFileError(line: number, message: "the same token as line \(earlier); give each consumer a token of its own")
            }
            if let earlier = names[entry.consumer.name] {
                throw TokensFileError(line: number, message: "the same name as line \(earlier); names tell consumers apart in the logs")
            }
            seen[entry.credential] = number
            names[entry.consumer.name] = number
            entries.append(entry)
        }
        return APIConsumers(entries: entries)
    }

    private static func entry(_ line: String, number: Int) throws(TokensFileError) -> Entry {
        func failure(_ message: String) -> TokensFileError { TokensFileError(line: number, message: message) }
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let first = fields.first else { throw failure("no token") }
        let credential: Credential
        if first.hasPrefix("sha256:") {
            guard let digest = hexBytes(first.dropFirst(7)), digest.count == 32 else {
                throw failure("sha256: must be followed by 64 hexadecimal digits, the SHA-256 of the token")
            }
            credential = .digest(digest)
        } else {
            guard !["name=", "stores=", "access="].contains(where: { first.hasPrefix($0) }) else {
                throw failure("the line must start with the token, then the settings")
            }
            credential = .token(Array(first.utf8))
        }
        var consumer = APIConsumer(name: "line-\(number)")
        var given = Set<Substring>()
        // A word that is not a setting is never echoed: it may be a second token pasted by mistake.
        for (position, field) in fields.enumerated().dropFirst() {
            let equals = field.firstIndex(of: "=") ?? field.endIndex
            let key = field[..<equals]
            guard equals < field.endIndex, ["name", "stores", "access"].contains(key) else {
                throw failure("word \(position + 1) is not a setting: after the token come name=, stores= and access=")
            }
            let value = field[field.index(after: equals)...]
            guard given.insert(key).inserted else { throw failure("\(key)= is given twice") }
            switch key {
            case "name":
                guard isWord(value) else {
                    throw failure("name= takes 1 to 64 letters, digits, '.', '_' or '-'")
                }
                consumer.name = String(value)
            case "stores":
                consumer.stores = try stores(value, number: number)
            case "access":
                guard let access = APIConsumer.Access(rawValue: String(value)) else {
                    throw failure("access= is read or operate")
                }
                consumer.access = access
            default:
                throw failure("word \(position + 1) is not a setting: after the token come name=, stores= and access=")
            }
        }
        return Entry(credential: credential, consumer: consumer)
    }

    private static func stores(_ value: Substring, number: Int) throws(TokensFileError) -> Set<String>? {
        if value == "*" { return nil }
        var stores = Set<String>()
        for store in value.split(separator: ",", omittingEmptySubsequences: false) {
            guard isWord(store) else {
                throw TokensFileError(
                    line: number, message: "stores= takes * or store ids separated by commas (1,2), each 1 to 64 letters, digits, '.', '_' or '-'")
            }
            stores.insert(String(store))
        }
        return stores
    }

    static func isWord(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= longestWord && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }

    private static func hexBytes(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in text.utf8 {
            let nibble: UInt8
            switch character {
            case 0x30...0x39: nibble = character - 0x30
            case 0x61...0x66: nibble = character - 0x61 + 10
            case 0x41...0x46: nibble = character - 0x41 + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return high == nil ? bytes : nil
    }
}
