import LocalHTTP
import NIOCore
import NIOEmbedded
import NIOTLS

extension Targets {
    /// HTTP/2's client connection preface (RFC 9113 §3.4), written out here rather than read from
    /// the handler, so the target checks the handler against the RFC and not against itself.
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// The cleartext listener's protocol sniffer (`ProtocolChoiceHandler` in `.sniff` mode). Input:
    /// `chunk(1 byte) connection bytes…`; the bytes arrive in reads of `chunk % 31 + 1` bytes. The
    /// choice is HTTP/2 exactly when the bytes open with the whole preface, HTTP/1.x as soon as one
    /// byte differs, none while they are a strict prefix of it; once chosen, every byte read is
    /// handed on exactly once, in order; it is chosen at most once.
    static func protocolChoice(_ bytes: [UInt8]) {
        guard let chunkByte = bytes.first else { return }
        let input = Array(bytes.dropFirst())
        let chunk = Int(chunkByte % 31) + 1
        let recorder = ChoiceRecorder()
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        do {
            try channel.pipeline.syncOperations.addHandlers([
                ProtocolChoiceHandler(.sniff, deadline: .seconds(10), admission: nil), recorder,
            ])
            channel.pipeline.fireChannelActive()
            var start = 0
            while start < input.count {
                let end = min(start + chunk, input.count)
                try channel.writeInbound(channel.allocator.buffer(bytes: input[start..<end]))
                start = end
            }
        } catch {
            violated("the sniffer threw on bytes read: \(error)")
        }
        let compared = min(input.count, preface.count)
        let differs = !input.prefix(compared).elementsEqual(preface.prefix(compared))
        let expected: [String?]
        if differs {
            expected = [nil]
        } else if input.count >= preface.count {
            expected = ["h2"]
        } else {
            expected = []
        }
        if recorder.choices != expected { violated("chose \(recorder.choices) for \(input.prefix(32)), not \(expected)") }
        if recorder.bytes != (expected.isEmpty ? [] : input) { violated("handed on other bytes than it read") }
    }
}

/// What the sniffer hands to the ALPN handler behind it: the choices and the bytes. Runs on the
/// embedded channel's one thread, like every handler.
private final class ChoiceRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    var choices: [String?] = []
    var bytes: [UInt8] = []

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
            choices.append(negotiated)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        bytes += Array(buffer: unwrapInboundIn(data))
    }
}
