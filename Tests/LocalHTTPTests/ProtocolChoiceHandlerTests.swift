import LocalHTTP
import NIOCore
import NIOEmbedded
import NIOTLS
import Testing

/// The `h2c` preface sniffer (ProtocolChoiceHandler) on embedded channels, byte by byte and at every
/// split: it decides HTTP/2 only on the whole 24-byte preface, HTTP/1.x at the first byte that
/// differs, passes every byte on untouched, decides once, and closes a connection that says nothing
/// within the deadline.
@Suite(.timeLimit(.minutes(1))) struct ProtocolChoiceHandlerTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Collects what passed the handler: the protocol events and the bytes.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var choices: [String?] = []
        var bytes: [UInt8] = []
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? TLSUserEvent, case .handshakeCompleted(let chosen) = event { choices.append(chosen) }
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += unwrapInboundIn(data).readableBytesView
        }
    }

    /// Feeds `input` in pieces cut at `cuts`; what the recorder saw.
    static func feed(_ input: [UInt8], cuts: [Int]) throws -> (choices: [String?], bytes: [UInt8], choseAfter: Int?) {
        let recorder = Recorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([
            ProtocolChoiceHandler(.sniff, deadline: .seconds(10), admission: nil), recorder,
        ])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var choseAfter: Int?
        var from = 0
        for cut in cuts + [input.count] where cut > from {
            try channel.writeInbound(ByteBuffer(bytes: input[from..<cut]))
            if choseAfter == nil, !recorder.choices.isEmpty { choseAfter = cut }
            from = cut
        }
        _ = try? channel.finish()
        return (recorder.choices, recorder.bytes, choseAfter)
    }

    @Test func thePrefaceIsHTTP2AtEverySplitAndOnlyWhenWhole() throws {
        let input = Self.preface + Array("\u{0}\u{0}\u{0}\u{4}".utf8)
        for cut in 0...input.count {
            let seen = try Self.feed(input, cuts: [cut])
            #expect(seen.choices == ["h2"], "cut at \(cut)")
            #expect(seen.bytes == input, "cut at \(cut): every byte passed on, in order")
            #expect((seen.choseAfter ?? 0) >= Self.preface.count, "decided before the whole preface (cut at \(cut))")
        }
        // Byte by byte: decided exactly at the preface's last byte.
        let bytewise = try Self.feed(input, cuts: Array(1..<input.count))
        #expect(bytewise.choices == ["h2"] && bytewise.choseAfter == Self.preface.count && bytewise.bytes == input)
    }

    @Test func anythingElseIsHTTP1DecidedAtTheFirstByteThatDiffers() throws {
        let requests = [
            ("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n", 1), ("POST /api/push HTTP/1.1\r\n\r\n", 2),
            ("PRI * HTTP/1.1\r\n\r\n", 12), ("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", 19),
        ]
        for (text, differsAt) in requests {
            let input = Array(text.utf8)
            let bytewise = try Self.feed(input, cuts: Array(1..<input.count))
            #expect(bytewise.choices == [nil], "\(text)")
            #expect(bytewise.choseAfter == differsAt, "\(text): decided after \(bytewise.choseAfter ?? -1) bytes")
            #expect(bytewise.bytes == input)
            for cut in 0...input.count {
                let seen = try Self.feed(input, cuts: [cut])
                #expect(seen.choices == [nil] && seen.bytes == input, "\(text) cut at \(cut)")
            }
        }
    }

    @Test func aConnectionThatSaysNothingOrTooLittleIsClosedAtTheDeadline() throws {
        for prefix in [[], Array(Self.preface.prefix(10))] {
            let recorder = Recorder()
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandlers([
                ProtocolChoiceHandler(.sniff, deadline: .seconds(10), admission: nil), recorder,
            ])
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            if !prefix.isEmpty { try channel.writeInbound(ByteBuffer(bytes: prefix)) }
            channel.embeddedEventLoop.advanceTime(by: .seconds(9))
            #expect(channel.isActive)
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
            #expect(!channel.isActive, "closed at the deadline after \(prefix.count) bytes")
            #expect(recorder.choices.isEmpty && recorder.bytes.isEmpty)
        }
    }
}
