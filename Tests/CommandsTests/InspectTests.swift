import Agent
import Commands
import CurlHTTP
import EventStream
import Foundation
import Logging
import Sandbox
import ServerSentEvents
import TestKit
import Testing

/// A pipe whose write end a `LineWriter` uses; read everything after the writer is done.
final class CapturedOutput {
    let writer: LineWriter
    private let readDescriptor: Int32
    private var writeDescriptor: Int32

    init() throws {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { throw CocoaError(.fileWriteUnknown) }
        readDescriptor = descriptors[0]
        writeDescriptor = descriptors[1]
        writer = LineWriter(descriptor: writeDescriptor)
    }

    /// Closes the write end and returns every line written.
    func lines() -> [String] {
        close(writeDescriptor)
        let handle = FileHandle(fileDescriptor: readDescriptor, closeOnDealloc: true)
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }
}

@Suite(.timeLimit(.minutes(5))) struct InspectRendererTests {
    @Test func jsonLinesFollowTheContractExactly() {
        let renderer = InspectRenderer(json: true, color: false)
        let head = HTTPResponseHead(status: 200, headers: ["Content-Type": "text/event-stream"], url: "http://x")
        #expect(renderer.line(for: .open(head), time: "") == #"{"kind":"open","status":200,"content_type":"text/event-stream"}"#)
        #expect(renderer.line(for: .event(ServerSentEvent(data: "Hello", lastEventID: "abc")), time: "")
            == #"{"kind":"event","type":"message","data":"Hello","id":"abc"}"#)
        #expect(renderer.line(for: .event(ServerSentEvent(type: "t", data: "a\"b\\c\nd\u{0}\u{1F}é🚚")), time: "")
            == #"{"kind":"event","type":"t","data":"a\"b\\c\nd\u0000\u001fé🚚","id":""}"#)
        #expect(renderer.line(for: .comment("ping"), time: "") == #"{"kind":"comment","comment":"ping"}"#)
        let lost = EventSourceError(kind: .streamEnded, message: "stream ended")
        #expect(renderer.line(for: .connectionLost(lost, retryIn: .seconds(1)), time: "")
            == #"{"kind":"error","error":"stream ended","retry_in_ms":1000}"#)
        #expect(renderer.line(for: .connectionLost(lost, retryIn: nil), time: "")
            == #"{"kind":"error","error":"stream ended","retry_in_ms":null}"#)
        #expect(renderer.line(for: .oversizedEventDiscarded(lastEventID: "1"), time: "") == nil)
    }

    @Test func readableViewShowsTimeTypeIdDataAndReconnects() {
        let renderer = InspectRenderer(json: false, color: false)
        let event = renderer.line(for: .event(ServerSentEvent(type: "order.updated", data: "a\nb", lastEventID: "7")),
                                  time: "10:00:00.000")
        #expect(event == "10:00:00.000 order.updated #7\n             │ a\n             │ b")
        let lost = renderer.line(
            for: .connectionLost(EventSourceError(kind: .streamEnded, message: "stream ended"), retryIn: .milliseconds(1500)),
            time: "10:00:01.000")
        #expect(lost == "10:00:01.000 ✖ stream ended — reconnecting in 1.5 s")
        // Terminal control characters in data are shown, not obeyed.
        let hostile = renderer.line(for: .event(ServerSentEvent(data: "\u{1B}[2Jx")), time: "t")
        #expect(hostile?.contains("\u{1B}") == false)
        let colored = InspectRenderer(json: false, color: true).line(for: .comment("c"), time: "t")
        #expect(colored?.contains("\u{1B}[") == true)
    }

    @Test func optionsRejectBadInputWithAClearReason() {
        #expect(throws: CommandUsageError.self) { try InspectOptions(url: "ftp://x/").validate() }
        #expect(throws: CommandUsageError.self) { try InspectOptions(url: "http:///events").validate() }
        #expect(throws: CommandUsageError.self) { try InspectOptions(url: "http://a b/").validate() }
        #expect(throws: CommandUsageError.self) { try InspectOptions(url: "http://x/", count: 0).validate() }
        #expect(throws: CommandUsageError.self) { try InspectOptions(url: "http://x/", lastEventID: "a\nb").validate() }
        #expect(throws: CommandUsageError.self) { try InspectOptions.parseHeader("NoColon") }
        #expect(throws: CommandUsageError.self) { try InspectOptions.parseHeader("Bad Name: x") }
        #expect((try? InspectOptions.parseHeader("X-Trace:  abc ")) == HTTPHeaders.Field(name: "X-Trace", value: "abc"))
        #expect((try? InspectOptions(url: "https://user@example.com:8443/v1/events?x=1").validate()) != nil)
    }
}

@Suite(.timeLimit(.minutes(5))) struct InspectorTests {
    @Test func jsonLinesEndToEndAgainstTheSandbox() async throws {
        try await Sandbox.withRunning { sandbox in
            sandbox.enqueue(
                .stream(": hi\nid: 1\ndata: Hello\n\nevent: order.updated\ndata: {\"a\":1}\n\nevent: skip\ndata: no\n\n"),
                .status(204))
            let output = try CapturedOutput()
            let options = InspectOptions(
                url: await sandbox.baseURL + "/v1/events", headers: ["X-Trace": "t1"], bearerToken: "secret-token",
                eventTypes: ["message", "order.updated"], showsComments: true, initialDelay: .zero, json: true)
            let outcome = try await CurlLoop.withLoop(logger: quietLogger) { loop in
                try await Inspector(options: options, output: output.writer, logger: quietLogger)
                    .run(loop: loop, clock: ContinuousClock(), handlesSignals: false)
            }
            #expect(outcome == .finished)
            #expect(output.lines() == [
                #"{"kind":"open","status":200,"content_type":"text/event-stream"}"#,
                #"{"kind":"comment","comment":"hi"}"#,
                #"{"kind":"event","type":"message","data":"Hello","id":"1"}"#,
                #"{"kind":"event","type":"order.updated","data":"{\"a\":1}","id":"1"}"#,
                #"{"kind":"error","error":"stream ended","retry_in_ms":0}"#,
            ])
            var requests = sandbox.streamRequests.makeAsyncIterator()
            let first = await requests.next()
            #expect(first?.header("authorization") == "Bearer secret-token")
            #expect(first?.header("x-trace") == "t1")
            #expect(await requests.next()?.header("last-event-id") == "1")
        }
    }

    @Test func countStopsAfterNShownEvents() async throws {
        try await Sandbox.withRunning(SandboxConfiguration(port: 0, eventInterval: .milliseconds(5))) { sandbox in
            let output = try CapturedOutput()
            let options = InspectOptions(url: await sandbox.baseURL + "/v1/events", count: 3, json: true)
            let outcome = try await CurlLoop.withLoop(logger: quietLogger) { loop in
                try await Inspector(options: options, output: output.writer, logger: quietLogger)
                    .run(loop: loop, clock: ContinuousClock(), handlesSignals: false)
            }
            #expect(outcome == .finished)
            let lines = output.lines()
            #expect(lines.count == 4)
            #expect(lines.filter { $0.hasPrefix(#"{"kind":"event","type":"order.created""#) }.count == 3)
            #expect(lines.last?.hasSuffix(#""id":"3"}"#) == true)
        }
    }

    @Test func noReconnectFailureIsReported() async throws {
        let output = try CapturedOutput()
        let options = InspectOptions(url: "http://127.0.0.1:1/v1/events", reconnects: false, json: true)
        let outcome = try await CurlLoop.withLoop(logger: quietLogger) { loop in
            try await Inspector(options: options, output: output.writer, logger: quietLogger)
                .run(loop: loop, clock: ContinuousClock(), handlesSignals: false)
        }
        guard case .failed(let reason) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(reason.contains("127.0.0.1"))
        #expect(output.lines().count == 1)
    }
}
