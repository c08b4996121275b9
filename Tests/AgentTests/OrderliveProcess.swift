import Foundation
import TestKit

/// The built `orderlive` executable, run as a user would run it.
struct OrderliveProcess {
    let process: ChildProcess
    let lines: AsyncStream<String>
    /// True when ``lines`` are the child's stderr (its stdout then goes nowhere).
    let linesAreStandardError: Bool

    /// The executable next to the test bundle (both are products of the same build).
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("orderlive")
    }

    /// `openFiles` runs the child under that soft and hard `RLIMIT_NOFILE` (set by `sh`'s `ulimit`
    /// before it execs the agent), as a machine with a low limit would. A child still running after
    /// `lifetime` is killed, so no child outlives a broken test and every wait on it ends (this replaces
    /// the watchdog task each test used to start beside its child).
    /// `launcher` runs the executable through another command (`ip netns exec HOST`, which execs it,
    /// so the child's pid and signals are the agent's).
    init(_ arguments: [String], environment: [String: String] = [:], input: String? = nil, readStandardError: Bool = false,
         openFiles: (soft: Int, hard: Int)? = nil, lifetime: Duration = .seconds(180), launcher: [String] = []) throws {
        let (path, words): (String, [String])
        if let first = launcher.first {
            (path, words) = (first, Array(launcher.dropFirst()) + [Self.executable.path] + arguments)
        } else if let openFiles {
            path = "/bin/sh"
            words = ["-c", "ulimit -Sn \(openFiles.soft) && ulimit -Hn \(openFiles.hard) && exec \"$0\" \"$@\"",
                     Self.executable.path] + arguments
        } else {
            (path, words) = (Self.executable.path, arguments)
        }
        // Tests run agents side by side: the orders API takes a free port unless a test picks one.
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ORDERLIVE_") }
            .merging(["ORDERLIVE_API_LISTEN": "127.0.0.1:0"]) { $1 }
            .merging(environment) { $1 }
        let process = try ChildProcess(
            path, words, environment: environment, input: input == nil ? .null : .pipe,
            output: readStandardError ? .null : .pipe, error: .pipe)
        if let input {
            process.standardInput?.write(Data(input.utf8))
            try? process.standardInput?.close()
        }
        self.process = process
        linesAreStandardError = readStandardError
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        lines = stream
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { process.signal(SIGKILL) }
        // With readStandardError the lines are the child's stderr; else its stdout, and stderr is
        // what ``waitForExit()`` returns.
        guard let reader = readStandardError ? process.standardError : process.standardOutput else {
            continuation.finish()
            return
        }
        Self.follow(reader, of: process, into: continuation)
    }

    /// Reads `handle` on a plain thread, so a test can wait on each line as it arrives, until
    /// `process` has exited and its output is read (``drain(_:untilExitOf:_:)``); then finishes.
    static func follow(_ handle: FileHandle, of process: ChildProcess, into continuation: AsyncStream<String>.Continuation) {
        Thread.detachNewThread {
            var buffer = Data()
            drain(handle, untilExitOf: process) { chunk in
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    continuation.yield(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            continuation.finish()
        }
    }

    /// Reads `handle` until its end, or until `process` has exited and nothing more arrives: a
    /// process the child started can hold the pipe open after it (the crash backtracer does, and
    /// was seen to hang for minutes), and waiting for the end of the file then never returns.
    static func drain(_ handle: FileHandle, untilExitOf process: ChildProcess, _ chunk: (Data) -> Void) {
        var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        var bytes = [UInt8](repeating: 0, count: 65_536)
        while true {
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 && errno == EINTR { continue }
            if ready > 0 {
                let count = Glibc.read(handle.fileDescriptor, &bytes, bytes.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                chunk(Data(bytes[0..<count]))
            } else if ready < 0 || !process.isRunning {
                // Exited, and everything it wrote was already in the pipe: nothing more will come.
                return
            }
        }
    }

    func signal(_ number: Int32) {
        process.signal(number)
    }

    /// Waits for exit; returns the status and everything written to stderr (when not read as lines).
    /// The wait blocks, so it runs off the cooperative pool (``offThePool(_:)``).
    func waitForExit() async -> (status: Int32, stderr: String) {
        let process = self.process
        let errors = self.linesAreStandardError ? nil : process.standardError
        return await offThePool {
            var text = Data()
            if let errors { Self.drain(errors, untilExitOf: process) { text.append($0) } }
            let status = process.waitUntilExit()
            return (status, String(decoding: text, as: UTF8.self))
        }
    }
}

/// `orderlive run` as a child, its stderr followed as log lines, killed after `limit` if it hangs.
struct RunningAgent {
    let child: OrderliveProcess
    let logs = LogWatch()
    let reader: Task<Void, Never>

    init(_ arguments: [String], environment: [String: String], limit: Duration = .seconds(60),
         openFiles: (soft: Int, hard: Int)? = nil, launcher: [String] = []) throws {
        let child = try OrderliveProcess(["run"] + arguments, environment: environment, readStandardError: true,
                                         openFiles: openFiles, lifetime: limit, launcher: launcher)
        let logs = self.logs
        self.child = child
        reader = Task { await logs.follow(child.lines) }
    }

    /// Waits for the child to exit and its output to be read.
    func finish() async -> Int32 {
        let (status, _) = await child.waitForExit()
        await reader.value
        return status
    }
}
