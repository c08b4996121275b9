public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for the tests' child processes instead of
/// Foundation's `Process`. `Process.run()` on Linux reads `/proc/self/fd` with a 256-byte copy of
/// each directory entry's name, which reads past glibc's buffer and crashed the whole test run with
/// "Bad pointer dereference" in `memcpy` under `Process.run()` when the test process had many
/// descriptors open (swift-corelibs-foundation#5472, fixed after the 6.2 toolchains). Here the child
/// closes every inherited descriptor above 2 with glibc's `closefrom` spawn action, its signal mask
/// is cleared and its signal handlers are the defaults, as `Process` does.
public final class ChildProcess: Sendable {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// A pipe this process reads (or, for standard input, writes).
        case pipe
        /// `/dev/null`.
        case null
        /// The same pipe as standard output (for standard error only).
        case standardOutput
        /// This process's own (standard output and error only).
        case inherit
    }

    /// The child's process id; it stays the child's until ``waitUntilExit()`` or ``isRunning`` reaps it.
    public let processIdentifier: pid_t
    /// The write end of the child's standard input, when piped.
    public let standardInput: FileHandle?
    /// The read end of the child's standard output, when piped.
    public let standardOutput: FileHandle?
    /// The read end of the child's standard error, when piped on its own.
    public let standardError: FileHandle?
    /// The wait status, once reaped; the lock is held while a signal is sent, so a reaped (and
    /// perhaps reused) process id is never signalled.
    private let reaped = Mutex<Int32?>(nil)

    /// Starts `executable` (a path) with `arguments`, in `environment` (this process's when nil) and
    /// `directory` (this process's when nil).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        input: Stream = .null, output: Stream = .pipe, error: Stream = .pipe
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var opened: [Int32] = []
        defer { for descriptor in opened { close(descriptor) } }
        func pipeEnds() throws -> (read: Int32, write: Int32) {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw ChildProcessError("pipe", errno) }
            // Another spawn between pipe and fcntl does not inherit them either: closefrom below.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            opened += ends
            return (ends[0], ends[1])
        }
        var inputEnd: Int32?, outputEnd: Int32?, errorEnd: Int32?
        if input == .pipe {
            let ends = try pipeEnds()
            posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
            inputEnd = ends.write
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        var outputWrite: Int32?
        if output == .pipe {
            let ends = try pipeEnds()
            posix_spawn_file_actions_adddup2(&actions, ends.write, 1)
            outputEnd = ends.read
            outputWrite = ends.write
        } else if output != .inherit {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        switch error {
        case .pipe:
            let ends = try pipeEnds()
            posix_spawn_file_actions_adddup2(&actions, ends.write, 2)
            errorEnd = ends.read
        case .standardOutput where outputWrite != nil:
            posix_spawn_file_actions_adddup2(&actions, outputWrite ?? 1, 2)
        case .standardOutput, .null:
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .inherit:
            break
        }
        if let directory {
            guard let chdir = Self.addChdir else { throw ChildProcessError("posix_spawn_file_actions_addchdir_np", ENOSYS) }
            _ = directory.withCString { chdir(&actions, $0) }
        }
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw ChildProcessError("posix_spawn \(executable)", spawned) }
        processIdentifier = pid
        // The parent keeps only its own ends; the deferred close takes the child's.
        opened.removeAll { $0 == inputEnd || $0 == outputEnd || $0 == errorEnd }
        standardInput = inputEnd.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        standardOutput = outputEnd.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        standardError = errorEnd.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    /// True until the child has exited (reaping it when it has).
    public var isRunning: Bool { reap() == nil }

    /// Sends `number` to the child, unless it has already been reaped.
    public func signal(_ number: Int32) {
        reaped.withLock { status in
            if status == nil { kill(processIdentifier, number) }
        }
    }

    /// Blocks until the child exits; its exit status, or the signal that ended it (as `Process` says).
    @discardableResult
    public func waitUntilExit() -> Int32 {
        while true {
            if let status = reap() { return Self.termination(status) }
            // Waits without reaping, so that the reaping stays under the lock.
            var info = siginfo_t()
            let result = waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT)
            if result != 0 && errno != EINTR && errno != ECHILD { return -1 }
        }
    }

    /// The status after ``waitUntilExit()``: the exit status, or the signal that ended it.
    public var terminationStatus: Int32 { reap().map(Self.termination) ?? -1 }

    private func reap() -> Int32? {
        reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            guard waitpid(processIdentifier, &status, WNOHANG) == processIdentifier else { return nil }
            reaped = status
            return status
        }
    }

    private static func termination(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    /// glibc's spawn actions that Swift's Glibc module does not import (glibc 2.29 and 2.34).
    private static let addChdir: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np")
        .map { unsafeBitCast($0, to: AddChdir.self) }
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }
}

/// A child process could not be started: which call failed and why.
public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String

    public init(_ call: String, _ code: Int32) {
        description = "\(call) failed: \(String(cString: strerror(code)))"
    }
}
