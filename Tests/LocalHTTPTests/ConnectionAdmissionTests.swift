import CheckedInput
import HTTPTypes
import LocalHTTP
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

/// Admission on embedded channels: which connection a full listener closes for a new one, which it
/// never closes, and the allow list (issue 37: an idle flood cannot hold the listener).
@Suite(.timeLimit(.minutes(3))) struct ConnectionAdmissionTests {
    /// A connection of a listener with `admission`, as the listener builds it: admission first, the
    /// request bounds after the codec (here, HTTP parts are written to it directly).
    static func connection(_ admission: ConnectionAdmission, from peer: String = "127.0.0.1") throws -> EmbeddedChannel {
        try ListenerHandlerTests.connected([
            AdmissionHandler(admission: admission),
            RequestBoundsHandler(maximumBodyBytes: 100, readTimeout: .seconds(10), admission: admission),
        ], from: peer)
    }

    static func startRequest(_ channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")))
    }

    static func answer(_ channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
    }

    @Test func aFullListenerClosesTheOldestConnectionThatSentNoHeadForANewOne() throws {
        let closures = Closures()
        let admission = ConnectionAdmission(limit: 2) { closures.add($0) }
        let first = try Self.connection(admission)
        let second = try Self.connection(admission)
        let third = try Self.connection(admission)
        #expect(!first.isActive, "the oldest connection without a head made room")
        #expect(second.isActive && third.isActive)
        #expect(closures.all == [.evicted] && admission.current == 2)
        let fourth = try Self.connection(admission)
        #expect(!second.isActive && third.isActive && fourth.isActive, "then the next oldest")
    }

    @Test func aConnectionInTheMiddleOfARequestIsNeverClosedForANewOne() throws {
        let closures = Closures()
        let admission = ConnectionAdmission(limit: 2) { closures.add($0) }
        let busy = try Self.connection(admission)
        try Self.startRequest(busy)
        let waiting = try Self.connection(admission)
        let newcomer = try Self.connection(admission)
        #expect(busy.isActive, "a request in progress is never evicted, however old")
        #expect(!waiting.isActive && newcomer.isActive)
        try Self.startRequest(newcomer)
        // Both busy: the next one is refused, closed before it is read, and nobody else is closed.
        let refused = try Self.connection(admission)
        #expect(!refused.isActive && busy.isActive && newcomer.isActive)
        #expect(closures.all == [.evicted, .refused])
        // Answered, `busy` is idle between requests: the oldest evictable again.
        try Self.answer(busy)
        let later = try Self.connection(admission)
        #expect(!busy.isActive && newcomer.isActive && later.isActive)
        #expect(closures.all == [.evicted, .refused, .evicted])
    }

    @Test func aClosedConnectionGivesItsPlaceBack() throws {
        let closures = Closures()
        let admission = ConnectionAdmission(limit: 1) { closures.add($0) }
        let first = try Self.connection(admission)
        try Self.startRequest(first)
        _ = try first.close().wait()
        #expect(admission.current == 0)
        let second = try Self.connection(admission)
        #expect(second.isActive && closures.all.isEmpty)
    }

    @Test func theHeadDeadlineCountsFromAcceptAndTheIdleDeadlineFromTheAnswer() throws {
        let closures = Closures()
        let admission = ConnectionAdmission(limit: 10) { closures.add($0) }
        let silent = try Self.connection(admission)
        silent.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!silent.isActive && closures.all == [.headTimeout])
        let kept = try Self.connection(admission)
        try Self.startRequest(kept)
        try Self.answer(kept)
        kept.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!kept.isActive && closures.all == [.headTimeout, .idleTimeout])
    }

    @Test func peersOutsideTheAllowListAreClosedAtAccept() throws {
        let closures = Closures()
        let ranges = try #require(try? AddressRange.list("10.0.0.0/8, 192.0.2.7 ,fd00::/8").get())
        let admission = ConnectionAdmission(limit: 10, allowFrom: ranges) { closures.add($0) }
        #expect(try Self.connection(admission, from: "10.1.2.3").isActive)
        #expect(try Self.connection(admission, from: "192.0.2.7").isActive)
        #expect(try Self.connection(admission, from: "fd12::1").isActive)
        #expect(try !Self.connection(admission, from: "192.0.2.8").isActive)
        #expect(try !Self.connection(admission, from: "11.0.0.1").isActive)
        #expect(try !Self.connection(admission, from: "fe80::1").isActive)
        #expect(closures.all == [.notAllowed, .notAllowed, .notAllowed] && admission.current == 3)
    }

    @Test func addressRangesParseAndMatchByTheirPrefix() throws {
        let v4 = try #require(AddressRange("192.168.0.0/16"))
        #expect(v4.contains(try SocketAddress(ipAddress: "192.168.255.1", port: 1)))
        #expect(!v4.contains(try SocketAddress(ipAddress: "192.169.0.1", port: 1)))
        #expect(v4.contains(try SocketAddress(ipAddress: "::ffff:192.168.3.4", port: 1)), "an IPv4 peer on an IPv6 socket")
        #expect(v4.description == "192.168.0.0/16")
        #expect(AddressRange("10.1.2.3/8")?.description == "10.0.0.0/8", "host bits are cleared")
        #expect(AddressRange("0.0.0.0/0")?.contains(try SocketAddress(ipAddress: "203.0.113.9", port: 1)) == true)
        #expect(AddressRange("[::1]")?.contains(try SocketAddress(ipAddress: "::1", port: 1)) == true)
        #expect(AddressRange("2001:db8::/33")?.contains(try SocketAddress(ipAddress: "2001:db8:7fff::1", port: 1)) == true)
        #expect(AddressRange("2001:db8::/33")?.contains(try SocketAddress(ipAddress: "2001:db8:8000::1", port: 1)) == false)
        for bad in ["", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0/8", "example.com", "10.0.0.0/-1", "1.2.3.4/0008",
                    "10.0.0.0/99999999999999999999"] {
            #expect(AddressRange(bad) == nil, "\(bad)")
        }
        if case .failure(let error) = AddressRange.list("10.0.0.0/8,nope") { #expect(error.entry == "nope") } else {
            Issue.record("a list with a bad entry parsed")
        }
        #expect((try? AddressRange.list(" , ").get())?.isEmpty == true, "empty entries are skipped: everyone")
    }
}
