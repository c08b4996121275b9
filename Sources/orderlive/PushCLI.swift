import Agent
import ArgumentParser
import Foundation

/// `orderlive push`
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Talk to a push endpoint the way a backend does.",
        subcommands: [Send.self]
    )

    /// `orderlive push send FILE|-`
    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "POST a Gorush payload to the push endpoint and print the answer.",
            discussion: """
                Authenticates as ingest.auth says: a bearer header, or Standard Webhooks headers signed with \
                ingest.secret_file over the exact bytes sent. Prints the status and the body; exits 1 unless \
                the answer is 2xx.
                """
        )

        @OptionGroup var config: ConfigOption

        @Argument(help: "The JSON payload file, or - for standard input.")
        var file: String

        @Option(help: "The endpoint (default: http://<ingest.listen>/api/push).")
        var url: String?

        @Option(help: "The Standard Webhooks message id; reuse one to test duplicate handling (default: random).")
        var id: String?

        func run() async throws {
            let configuration = try await config.load()
            let body: [UInt8]
            if file == "-" {
                body = [UInt8](FileHandle.standardInput.readDataToEndOfFile())
            } else {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw RuntimeFailure(description: "cannot read \(file): check the path and its permissions")
                }
                body = [UInt8](data)
            }
            let answer: PushSend.Answer
            do {
                let sender = try PushSend(configuration: configuration, url: url, logger: commandLogger("orderlive.push"))
                answer = try await sender.send(body, id: id ?? "msg_" + UUID().uuidString.lowercased())
            } catch {
                throw RuntimeFailure(description: error.description)
            }
            LineWriter.standardOutput.write(line: "HTTP \(answer.status)"
                + (answer.retryAfter.map { " (Retry-After: \($0) s)" } ?? ""))
            if !answer.body.isEmpty { LineWriter.standardOutput.write(line: answer.body) }
            guard (200..<300).contains(answer.status) else {
                throw RuntimeFailure(description: "the push endpoint answered \(answer.status)")
            }
        }
    }
}
