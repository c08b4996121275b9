import AsyncSignals
import Foundation

/// One TLS connection held open by `openssl s_client` (its stdin and stdout piped): a test sends
/// requests on it over time, to show that a connection made before something changed still works.
public final class TLSClient: Sendable {
    private let process: ChildProcess
    private let input: FileHandle
    private let received = Locked(Data())
    private let arrived = WakeSignal()

    /// Connects to 127.0.0.1:`port`, trusting `caFile`; `extra` are further `s_client` options.
    public init(port: Int, caFile: String, extra: [String] = []) throws {
        let process = try ChildProcess(
            "/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", caFile, "-quiet", "-crlf"] + extra,
            input: .pipe, output: .pipe, error: .null)
        self.process = process
        guard let input = process.standardInput, let reader = process.standardOutput else {
            throw ChildProcessError("openssl s_client's pipes", EBADF)
        }
        self.input = input
        let (received, arrived) = (self.received, self.arrived)
        Thread.detachNewThread {
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                received.withLock { $0.append(chunk) }
                arrived.signal()
            }
            arrived.signal()
        }
    }

    /// Sends `GET path` on the connection (kept alive) and returns everything received until `until`
    /// appears in it, or nil after `deadline`.
    public func get(_ path: String, until marker: String, deadline: Duration = .seconds(20)) async -> String? {
        received.withLock { $0.removeAll() }
        input.write(Data("GET \(path) HTTP/1.1\nHost: 127.0.0.1\n\n".utf8))
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: deadline)
        while clock.now < end {
            let text = received.withLock { String(decoding: $0, as: UTF8.self) }
            if text.contains(marker) { return text }
            await arrived.wait(until: end, clock: clock)
        }
        return nil
    }

    /// Closes the connection and ends the process.
    public func close() {
        try? input.close()
        process.signal(SIGKILL)
    }
}
