import Agent
import Foundation

/// `orderlive push send`: talks to a push endpoint the way a backend does.
extension OperatorCommands {

    /// POSTs the Gorush payload in `file` (`-` for standard input) to `url` (default the configured
    /// push endpoint), authenticated as `ingest.auth` says, and writes the status and the body; a
    /// failure unless the answer is 2xx.
    public func sendPush(file: String, url: String?, id: String?) async throws {
        let body: [UInt8]
        if file == "-" {
            body = [UInt8](FileHandle.standardInput.readDataToEndOfFile())
        } else {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CommandFailure("cannot read \(file): check the path and its permissions")
            }
            body = [UInt8](data)
        }
        // PushSend's failures are already the command's: what was wrong and what to do.
        let sender = try PushSend(configuration: configuration, url: url, logger: commandLogger("orderlive.push"))
        let answer = try await sender.send(body, id: id ?? "msg_" + UUID().uuidString.lowercased())
        console.write("HTTP \(answer.status)" + (answer.retryAfter.map { " (Retry-After: \($0) s)" } ?? ""))
        if !answer.body.isEmpty { console.write(answer.body) }
        guard (200..<300).contains(answer.status) else {
            throw CommandFailure("the push endpoint answered \(answer.status)")
        }
    }
}
