import Foundation
import TestKit

/// `Scripts/otlp-receiver.py` as a child: a real OTLP/HTTP or OTLP/gRPC receiver decoding with the OpenTelemetry
/// protobuf definitions, each span and log record it receives a JSON line on ``records`` (a
/// ``TestKit/LogWatch``, so a test waits on a record as on a log line).
struct OTLPReceiver {
    let process: ChildProcess
    let records = LogWatch()
    let reader: Task<Void, Never>
    /// The port it listens on, on 127.0.0.1.
    let port: String

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Scripts/otlp-receiver.py").path

    /// Starts it on `port` (0: a free one) and waits until it listens; `grpc` serves OTLP/gRPC instead of
    /// OTLP/HTTP; `tls` (certificate, key, client CA files) serves TLS that requires a client certificate
    /// the CA signed. Killed after `lifetime`.
    init(port: String = "0", grpc: Bool = false, tls: [String]? = nil, lifetime: Duration = .seconds(240)) async throws {
        let arguments = ["python3", Self.script] + (grpc ? ["--grpc"] : []) + (tls.map { ["--tls"] + $0 } ?? []) + [port]
        self.scheme = tls == nil ? "http" : "https"
        let process = try ChildProcess("/usr/bin/env", arguments, input: .pipe, output: .pipe, error: .inherit)
        guard let output = process.standardOutput else { throw ChildProcessError("the receiver's stdout", EBADF) }
        let (lines, continuation) = AsyncStream.makeStream(of: String.self)
        OrderliveProcess.follow(output, of: process, into: continuation)
        DispatchQueue.global().asyncAfter(deadline: .now() + Double(lifetime.components.seconds)) { process.signal(SIGKILL) }
        let records = self.records
        self.process = process
        reader = Task { await records.follow(lines) }
        guard let listening = await records.wait(within: .seconds(30), message: "listening"), let port = listening.line["port"] else {
            process.signal(SIGKILL)
            throw ChildProcessError("Scripts/otlp-receiver.py did not start (are opentelemetry-proto and grpcio installed? make deps)", ENOENT)
        }
        self.port = port
    }

    /// `https` when it serves TLS.
    let scheme: String

    /// The receiver's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it (for gRPC too: scheme, host, port).
    var endpoint: String { "\(scheme)://127.0.0.1:\(port)" }

    /// Answers 503 to every export for the next `seconds` (a collector that is down).
    func hold(seconds: Int) {
        process.standardInput?.write(Data("hold \(seconds)\n".utf8))
    }

    /// Answers 401 to every export for the next `seconds` (a collector that does not take the key).
    func refuse(seconds: Int) {
        process.standardInput?.write(Data("refuse \(seconds)\n".utf8))
    }

    /// Stops it.
    func stop() async {
        process.signal(SIGKILL)
        await reader.value
    }
}
