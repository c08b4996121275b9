import OrdersAPI
import Testing
import WebhookSigning
import Foundation

/// `api.tokens_file` (DESIGN §14): one consumer a line, each setting checked, every error naming
/// its line and never the token.
@Suite(.timeLimit(.minutes(1))) struct TokensFileTests {
    @Test func linesBecomeConsumersWithTheirNamesStoresAndAccess() throws {
        let digest = SHA256Digest.of(Array("hashed-token".utf8)).map { String(format: "%02x", $0) }.joined()
        let consumers = try APIConsumers.parse("""
            # a comment, then an empty line

            bare-token
              board-7  name=board-store-7 stores=7   access=read
            sha256:\(digest) name=till stores=1,2,x-9
            ops-token name=ops stores=* access=operate
            """)
        #expect(consumers.consumers == [
            APIConsumer(name: "line-3"),
            APIConsumer(name: "board-store-7", stores: ["7"]),
            APIConsumer(name: "till", stores: ["1", "2", "x-9"]),
            APIConsumer(name: "ops", access: .operate),
        ])
        #expect(digest.count == 64)
    }

    @Test(arguments: [
        ("good\nname=board token", 2, "must start with the token"),
        ("t1 stores=", 1, "stores= takes"),
        ("t1 stores=1,,2", 1, "stores= takes"),
        ("t1 stores=1 stores=2", 1, "stores= is given twice"),
        ("t1 access=admin", 1, "access= is read or operate"),
        ("t1 name=", 1, "name= takes"),
        ("t1 name=a/b", 1, "name= takes"),
        ("t1 colour=red", 1, "word 2 is not a setting"),
        ("sha256:abc", 1, "64 hexadecimal digits"),
        ("sha256:" + String(repeating: "g", count: 64), 1, "64 hexadecimal digits"),
        ("t1 name=a\n\n#\nt1 name=b", 4, "the same token as line 1"),
        ("t1 name=a\nt2 name=a", 2, "the same name as line 1"),
    ])
    func aLineThatDoesNotReadNamesItsNumberAndWhy(_ text: String, _ line: Int, _ reason: String) {
        #expect {
            try APIConsumers.parse(text)
        } throws: { error in
            guard let error = error as? TokensFileError else { return false }
            return error.line == line && error.message.contains(reason)
        }
    }

    @Test func anErrorNeverEchoesAToken() {
        let secret = "s3cr3t-token-\(UInt64.random(in: 1...UInt64.max))"
        for text in ["ok-token \(secret)", "ok-token name=a \(secret)=x", "\(secret) \(secret)", "\(secret)\n\(secret)"] {
            do {
                _ = try APIConsumers.parse(text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(!error.description.contains(secret), "\(error.description)")
                #expect(!error.description.contains("ok-token"), "\(error.description)")
            }
        }
    }
}
