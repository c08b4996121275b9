public import Foundation

/// What an external program printed (stdout and stderr together) and how it ended.
public struct ToolRun: Sendable {
    public var status: Int32
    public var output: String

    /// A run that ended with `status` after printing `output`.
    public init(status: Int32, output: String) {
        self.status = status
        self.output = output
    }
}

/// Runs `path` with `arguments` to its end, `input` on its standard input (then closed; nothing
/// when nil). The output is read and the process waited for on a plain thread, so a test never blocks
/// the shared task pool on a child process; one still running after `deadline` is killed.
public func runTool(_ path: String, _ arguments: [String], directory: URL? = nil,
                    environment: [String: String]? = nil, input: String? = nil,
                    deadline: Duration = .seconds(120)) async throws -> ToolRun {
    let child = try ChildProcess(
        path, arguments, environment: environment, directory: directory?.path, input: .pipe, output: .pipe,
        error: .standardOutput)
    if let input { child.standardInput?.write(Data(input.utf8)) }
    try? child.standardInput?.close()
    let seconds = Double(deadline.components.seconds)
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { child.signal(SIGKILL) }
    return await withCheckedContinuation { (continuation: CheckedContinuation<ToolRun, Never>) in
        Thread.detachNewThread {
            let text = String(decoding: child.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
            let status = child.waitUntilExit()
            continuation.resume(returning: ToolRun(status: status, output: text))
        }
    }
}

/// The first of `candidates` that is an executable file, or of `name` on `PATH`.
public func executable(_ name: String, candidates: [String] = []) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    let places = candidates + path.split(separator: ":").map { "\($0)/\(name)" }
    return places.first { FileManager.default.isExecutableFile(atPath: $0) }
}
