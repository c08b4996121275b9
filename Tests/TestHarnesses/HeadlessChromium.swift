import AsyncSignals
import Foundation

#if canImport(Glibc)
import Glibc
import TestKit
#endif

/// Debian's Chromium, headless, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// commands on its fd 3, answers on its fd 4, each message JSON ended by a NUL byte). One page,
/// opened at a URL; ``evaluate(_:)`` runs an expression in it and returns its value as JSON text.
public final class HeadlessChromium: Sendable {
    /// Why the browser could not be used.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private let pid: pid_t
    private let commands: Int32
    private let answers: Int32
    private let profile: String
    private let nextID = Locked(10)
    /// Bytes read from the browser and not yet split into messages (only the caller's task reads).
    private let pending = Locked<[UInt8]>([])

    /// The browser: `/usr/bin/chromium` unless `ORDERLIVE_CHROMIUM` names another.
    public static var path: String? {
        executable(ProcessInfo.processInfo.environment["ORDERLIVE_CHROMIUM"] ?? "chromium",
                   candidates: ["/usr/bin/chromium", "/usr/bin/chromium-browser"])
    }

    /// Starts the browser and opens `url` in a new page. Starting takes seconds of blocking pipe
    /// reads, so it runs off the cooperative pool (``offThePool(_:)``), as every command does.
    /// `trustingAnyCertificate` starts it with `--ignore-certificate-errors`, for a test's own CA.
    public static func start(url: String, trustingAnyCertificate: Bool = false) async throws -> HeadlessChromium {
        try await offThePool { try HeadlessChromium(url: url, trustingAnyCertificate: trustingAnyCertificate) }
    }

    private init(url: String, trustingAnyCertificate: Bool) throws {
        guard let path = Self.path else {
            throw Failure(description: "Chromium is not installed: `make deps` installs Debian's chromium package")
        }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        // Close-on-exec, so no other child inherits them; dup2 into 3 and 4 clears it for the browser.
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else { throw Failure(description: "pipe() failed") }
        for descriptor in toBrowser + fromBrowser { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toBrowser[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromBrowser[1], 4)
        let devNull = open("/dev/null", O_WRONLY)
        if devNull >= 0 {
            posix_spawn_file_actions_adddup2(&actions, devNull, 1)
            posix_spawn_file_actions_adddup2(&actions, devNull, 2)
        }
        // The browser must hold no other descriptor of this process: tests running beside this one
        // wait for end-of-file on their own pipes, which an inherited write end would never give.
        // (glibc's posix_spawn_file_actions_addclosefrom_np, which Swift's Glibc module does not import.)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let closeFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            throw Failure(description: "this C library cannot close a spawned child's descriptors (glibc 2.34 or later needed)")
        }
        guard unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 5) == 0 else {
            throw Failure(description: "posix_spawn_file_actions_addclosefrom_np failed")
        }
        let arguments = [
            path, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--disable-sync",
            "--remote-debugging-pipe", "--user-data-dir=\(profile)", "--window-size=1600,1000",
        ] + (trustingAnyCertificate ? ["--ignore-certificate-errors"] : []) + ["about:blank"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, path, &actions, nil, &argv, environ)
        close(toBrowser[0])
        close(fromBrowser[1])
        if devNull >= 0 { close(devNull) }
        guard spawned == 0 else { throw Failure(description: "could not start \(path): error \(spawned)") }
        pid = child
        commands = toBrowser[1]
        answers = fromBrowser[0]
        let target = try Self.call(
            commands: commands, answers: answers, pending: pending, id: 1, method: "Target.createTarget",
            params: ["url": url])
        guard let targetID = target["targetId"] as? String else { throw Failure(description: "no target: \(target)") }
        let attached = try Self.call(
            commands: commands, answers: answers, pending: pending, id: 2, method: "Target.attachToTarget",
            params: ["targetId": targetID, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw Failure(description: "not attached: \(attached)") }
        sessionIDStorage.withLock { $0 = session }
    }

    private let sessionIDStorage = Locked("")

    deinit {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        close(commands)
        close(answers)
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Evaluates `expression` in the page (or in the tab `page` from ``openTab(_:)``); returns its
    /// value (`returnByValue`), e.g. a string.
    public func evaluate(_ expression: String, page: String? = nil) async throws -> Any? {
        try await offThePool { try Evaluated(value: self.evaluateBlocking(expression, page: page)) }.value
    }

    /// Opens `url` in another tab of the same browser (same profile, so the same connection pool);
    /// returns the tab's session, for ``evaluate(_:page:)``.
    public func openTab(_ url: String) async throws -> String {
        try await offThePool {
            let ids = self.nextID.withLock { id in
                id += 2
                return (id - 1, id)
            }
            let target = try Self.call(commands: self.commands, answers: self.answers, pending: self.pending, id: ids.0,
                                       method: "Target.createTarget", params: ["url": url])
            guard let targetID = target["targetId"] as? String else { throw Failure(description: "no target: \(target)") }
            let attached = try Self.call(commands: self.commands, answers: self.answers, pending: self.pending, id: ids.1,
                                         method: "Target.attachToTarget", params: ["targetId": targetID, "flatten": true])
            guard let session = attached["sessionId"] as? String else { throw Failure(description: "not attached: \(attached)") }
            return session
        }
    }

    /// A page's value (JSON-decoded: strings, numbers, arrays, dictionaries) carried off the browser's thread.
    private struct Evaluated: @unchecked Sendable {
        // Unchecked: the value is built by JSONSerialization on the reading thread and handed over
        // once, through the continuation; neither side touches it afterwards.
        let value: Any?
    }

    private func evaluateBlocking(_ expression: String, page: String?) throws -> Any? {
        let id = nextID.withLock { id in
            id += 1
            return id
        }
        let result = try Self.call(
            commands: commands, answers: answers, pending: pending, id: id, method: "Runtime.evaluate",
            params: ["expression": expression, "returnByValue": true], session: page ?? sessionIDStorage.withLock { $0 })
        if let exception = result["exceptionDetails"] { throw Failure(description: "the page threw: \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Sends a DevTools command to the page, or to the tab `page` (`Page.navigate`,
    /// `Network.getCookies`, `Page.bringToFront`, …); returns its result as JSON text.
    public func command(_ method: String, _ params: [String: any Sendable] = [:], page: String? = nil) async throws -> String {
        try await offThePool {
            let id = self.nextID.withLock { id in
                id += 1
                return id
            }
            let result = try Self.call(commands: self.commands, answers: self.answers, pending: self.pending, id: id, method: method,
                                       params: params, session: page ?? self.sessionIDStorage.withLock { $0 })
            return String(decoding: try JSONSerialization.data(withJSONObject: result), as: UTF8.self)
        }
    }

    /// Polls `expression` (a string-valued expression) until `accept` takes its value, for up to `limit`.
    public func waitFor(
        _ expression: String, page: String? = nil, limit: Duration = .seconds(30), accept: (String) -> Bool
    ) async throws -> String {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        var last = ""
        while clock.now < deadline {
            do {
                // Before the page has loaded, the expression may throw: not there yet.
                last = (try await evaluate(expression, page: page) as? String) ?? ""
                if accept(last) { return last }
            } catch let failure as Failure where failure.description.hasPrefix("the page threw") {
                last = failure.description
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "the page did not get there within \(limit); last: \(last.prefix(2_000))")
    }

    /// Sends one command and reads messages until its answer (events in between are dropped).
    private static func call(
        commands: Int32, answers: Int32, pending: Locked<[UInt8]>, id: Int, method: String, params: [String: Any],
        session: String? = nil
    ) throws -> [String: Any] {
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session, !session.isEmpty { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "the browser closed its pipe") }
            written += count
        }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let end = pending.withLock({ $0.firstIndex(of: 0) }) {
                let text = pending.withLock { buffer -> [UInt8] in
                    let message = Array(buffer[..<end])
                    buffer.removeSubrange(...end)
                    return message
                }
                guard let object = try JSONSerialization.jsonObject(with: Data(text)) as? [String: Any],
                      object["id"] as? Int == id else { continue }
                if let error = object["error"] { throw Failure(description: "\(method) failed: \(error)") }
                return object["result"] as? [String: Any] ?? [:]
            }
            var poll = pollfd(fd: answers, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, 1_000) >= 0 else { throw Failure(description: "poll failed") }
            if poll.revents == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(answers, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "the browser exited") }
            pending.withLock { $0.append(contentsOf: chunk[..<count]) }
        }
        throw Failure(description: "no answer to \(method) within 30 s")
    }
}
