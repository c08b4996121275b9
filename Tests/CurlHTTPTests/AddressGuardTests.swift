import CheckedInput
import CurlHTTP
import Logging
import Sandbox
import Testing

/// The address guard of outgoing webhooks (issue 59): a transfer refuses to connect to a link-local or
/// cloud metadata address unless allowed, names it, and leaves loopback and private ranges alone.
@Suite(.timeLimit(.minutes(3))) struct AddressGuardTests {
    private let logger = Logger(label: "test.curl")

    @Test func linkLocalAndMetadataAddressesAreRefusedUnlessAllowed() throws {
        let guarded = AddressGuard()
        func bytes(_ text: String) throws -> [UInt8] { try #require(AddressRange.bytes(of: text)) }
        for refused in ["169.254.169.254", "169.254.0.1", "fe80::1", "febf::1", "::ffff:169.254.169.254"] {
            #expect(!guarded.permits(try bytes(refused)), "\(refused)")
        }
        for permitted in ["127.0.0.1", "10.0.0.1", "192.168.1.1", "172.16.0.1", "::1", "fd00::1", "203.0.113.7", "169.255.0.1", "fec0::1"] {
            #expect(guarded.permits(try bytes(permitted)), "\(permitted)")
        }
        let allowing = AddressGuard(allowed: [try #require(AddressRange("169.254.169.254/32"))])
        #expect(allowing.permits(try bytes("169.254.169.254")))
        #expect(allowing.permits(try bytes("::ffff:169.254.169.254")))
        #expect(!allowing.permits(try bytes("169.254.169.253")))
    }

    @Test func aTransferToAMetadataAddressFailsAtConnectNamingIt() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logger) { loop in
                let guarded = AddressGuard(hint: "list it in webhooks.allow_private to allow it")
                do {
                    _ = try await loop.perform(HTTPRequest(url: "http://169.254.169.254/latest/meta-data/", addressGuard: guarded))
                    Issue.record("the metadata address was reached")
                } catch let error as CurlError {
                    #expect(error.kind == .couldNotConnect)
                    #expect(error.message == "refused to connect to 169.254.169.254: a link-local or cloud metadata address; "
                        + "list it in webhooks.allow_private to allow it", "\(error.message)")
                }
                // Loopback passes the guard: the same transfer to the Sandbox is answered.
                let answer = try await loop.perform(HTTPRequest(url: base + "/healthz", addressGuard: guarded))
                #expect(answer.status == 200)
            }
        }
    }
}
