import CurlHTTP
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Sandbox
import Testing

/// A loop's thread carries its name (for `top -H` and `perf`) and runs at the priority asked for below
/// the process: the outgoing webhooks' loop yields the processor to the rest of the agent (issue 40).
@Suite(.timeLimit(.minutes(3))) struct CurlLoopThreadTests {
    @Test func theLoopThreadIsNamedAndRunsTheNiceLevelsAskedForBelowTheProcess() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            // Whatever niceness the test runner gave the process (at most 19).
            let process = Int(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
            let loop = try CurlLoop(logger: Logger(label: "test.curl"), name: "curl-test-nice7", priority: .nice(7))
            // A transfer that completed proves the thread ran past its naming.
            #expect(try await loop.perform(HTTPRequest(url: base + "/healthz")).status == 200)
            let threads = try Self.threads(named: "curl-test-nice7")
            #expect(threads.count == 1, "\(threads)")
            #expect(threads.first?.nice == min(19, process + 7))
            await loop.shutdown()
        }
    }

    @Test func anIdleLoopThreadRunsUnderSchedIdle() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            let loop = try CurlLoop(logger: Logger(label: "test.curl"), name: "curl-test-idle", priority: .idle)
            #expect(try await loop.perform(HTTPRequest(url: base + "/healthz")).status == 200)
            let threads = try Self.threads(named: "curl-test-idle")
            #expect(threads.count == 1, "\(threads)")
            // SCHED_IDLE is policy 5; SCHED_OTHER, what every other thread here runs under, is 0.
            #expect(threads.first?.policy == 5)
            await loop.shutdown()
        }
    }

    @Test func aLoopThatStartsWhenUsedHasNoThreadUntilItsFirstTransfer() async throws {
        try await Sandbox.withRunning { sandbox in
            let base = await sandbox.baseURL
            let loop = try CurlLoop(logger: Logger(label: "test.curl"), name: "curl-test-lazy", startsWhenUsed: true)
            #expect(try Self.threads(named: "curl-test-lazy").isEmpty)
            #expect(try await loop.perform(HTTPRequest(url: base + "/healthz")).status == 200)
            #expect(try await loop.perform(HTTPRequest(url: base + "/healthz")).status == 200)
            // One thread, started by the first transfer and kept for the second.
            #expect(try Self.threads(named: "curl-test-lazy").count == 1)
            await loop.shutdown()
        }
    }

    @Test func aLoopNeverUsedShutsDownWithoutAThreadAndRefusesTransfersAfterwards() async throws {
        let loop = try CurlLoop(logger: Logger(label: "test.curl"), name: "curl-test-unused", startsWhenUsed: true)
        await loop.shutdown()
        await loop.shutdown()
        await #expect {
            _ = try await loop.perform(HTTPRequest(url: "http://127.0.0.1:9/"))
        } throws: { error in
            (error as? CurlError)?.kind == .shutDown
        }
        #expect(try Self.threads(named: "curl-test-unused").isEmpty)
    }

    /// This process's threads named `name`, with their niceness and scheduling policy
    /// (`/proc/self/task/*/stat`, fields 19 and 41).
    private static func threads(named name: String) throws -> [(tid: String, nice: Int?, policy: Int?)] {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        return tasks.compactMap { tid -> (String, Int?, Int?)? in
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (comm)": field 3 (state) onwards; the niceness is field 19, the policy 41.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return (tid, fields.count > 16 ? Int(fields[16]) : nil, fields.count > 38 ? Int(fields[38]) : nil)
        }
    }
}
