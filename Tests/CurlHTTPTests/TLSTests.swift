import CurlHTTP
import Foundation
import Logging
import Testing
import TestKit

/// A real TLS peer: `openssl s_server -www` on 127.0.0.1 with a fresh self-signed certificate.
private struct TLSServer: Sendable {
    let directory: URL
    let port: Int
    let certificate: String
    let pin: String

    static func start() throws -> TLSServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        try shell("openssl req -x509 -newkey rsa:2048 -nodes -keyout '\(key)' -out '\(certificate)' -days 1 "
            + "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1")
        let pin = try shell("openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der "
            + "| openssl dgst -sha256 -binary | base64").trimming(" \n")

        let process = try ChildProcess(
            "/usr/bin/env", ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", key, "-www"],
            output: .pipe, error: .null)
        guard let output = process.standardOutput else { throw CocoaError(.fileReadUnknown) }
        // Wait for the line that names the port, not for a while.
        var buffer = Data()
        var port: Int?
        while port == nil {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") where line.hasPrefix("ACCEPT ") {
                port = line.split(separator: ":").last.flatMap { Int($0) }
            }
        }
        guard let port else {
            process.signal(SIGKILL)
            throw CocoaError(.fileReadUnknown)
        }
        return TLSServer(process: process, directory: directory, port: port, certificate: certificate, pin: pin)
    }

    init(process: ChildProcess, directory: URL, port: Int, certificate: String, pin: String) {
        self.directory = directory
        self.port = port
        self.certificate = certificate
        self.pin = pin
        self.processReference = process
    }

    private let processReference: ChildProcess

    func stop() {
        processReference.signal(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }

    @discardableResult
    static func shell(_ command: String) throws -> String {
        let process = try ChildProcess("/bin/sh", ["-c", command], output: .pipe, error: .null)
        let data = process.standardOutput?.readDataToEndOfFile() ?? Data()
        guard process.waitUntilExit() == 0 else { throw CocoaError(.executableLoad) }
        return String(decoding: data, as: UTF8.self)
    }
}

@Suite(.timeLimit(.minutes(3))) struct TLSTests {
    private let logger = quietLogger

    @Test func extraCAFileIsTrustedAndPinsAreEnforced() async throws {
        // openssl generates a key and starts: blocking work, kept off the cooperative pool.
        let server = try await offThePool { try TLSServer.start() }
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/"
        try await CurlLoop.withLoop(logger: logger) { loop in
            let untrusted = await #expect(throws: CurlError.self) {
                try await loop.perform(HTTPRequest(url: url))
            }
            #expect(untrusted?.kind == .tls)

            let trusted = try await loop.perform(HTTPRequest(url: url, tls: TLSOptions(caFile: server.certificate)))
            #expect(trusted.status == 200)

            let pinned = try await loop.perform(HTTPRequest(
                url: url, tls: TLSOptions(caFile: server.certificate, pinnedPublicKey: "sha256//" + server.pin)))
            #expect(pinned.status == 200)

            let wrongPin = await #expect(throws: CurlError.self) {
                try await loop.perform(HTTPRequest(
                    url: url,
                    tls: TLSOptions(caFile: server.certificate,
                                    pinnedPublicKey: "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")))
            }
            #expect(wrongPin?.kind == .tls)
            #expect(wrongPin?.message.isEmpty == false)
        }
    }
}
