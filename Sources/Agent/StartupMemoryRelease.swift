import AsyncSignals
import Foundation
import Logging
import ServiceLifecycle
import StoreModel

#if canImport(Glibc)
import Glibc
#endif

/// Gives back the memory that only starting up needed (DESIGN §9's idle RSS): the allocator's free
/// heap (`malloc_trim`), and the executable's and libraries' code pages that the start ran, parsed,
/// migrated and synced with and an idle agent never touches again. ``StartupMemoryReleaseService``
/// says when.
///
/// Code pages are file-backed and clean: `MADV_DONTNEED` on a read-only executable mapping
/// (`r-xp` in `/proc/self/maps`) unmaps them from this process, and the next use of any of them maps it
/// again from the page cache (a minor fault, no disk read while the cache holds it). Only those
/// mappings are touched: never a writable one, and never a read-only data mapping, which may hold
/// pages the dynamic loader relocated before it made them read-only (dropped, they would come back
/// unrelocated from the file).
package enum StartupMemoryRelease {
    /// Releases what it can and logs how much the process's resident set shrank.
    package static func release(logger: Logger) {
        #if os(Linux)
        let before = residentKilobytes()
        let trimmed = trimHeap()
        var mappings = 0
        for range in executableMappings() {
            guard let start = UnsafeMutableRawPointer(bitPattern: range.start), range.end > range.start else { continue }
            if madvise(start, Int(range.end - range.start), MADV_DONTNEED) == 0 { mappings += 1 }
        }
        let after = residentKilobytes()
        logger.info("startup memory released", metadata: [
            "memory.rss_before_kb": "\(before ?? 0)", "memory.rss_after_kb": "\(after ?? 0)",
            "memory.code_mappings": "\(mappings)", "memory.heap_trimmed": "\(trimmed)",
        ])
        #endif
    }

    /// glibc's `malloc_trim(0)`: the free memory at the top of the heap and in the free pages of every
    /// arena goes back to the system. Looked up at run time (Swift's Glibc module does not declare it,
    /// and another C library may not have it); false when it is missing or released nothing.
    package static func trimHeap() -> Bool {
        #if os(Linux)
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "malloc_trim") else { return false }
        typealias MallocTrim = @convention(c) (Int) -> Int32
        return unsafeBitCast(symbol, to: MallocTrim.self)(0) == 1
        #else
        return false
        #endif
    }

    /// The file-backed, read-only executable mappings of `/proc/self/maps` (start and end addresses).
    package static func executableMappings(_ maps: String? = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8))
        -> [(start: UInt, end: UInt)]
    {
        guard let maps else { return [] }
        return maps.split(separator: "\n").compactMap { line in
            // "start-end perms offset dev inode path"
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            // The path is padded with spaces, which the last split keeps.
            guard fields.count == 6, fields[1] == "r-xp", fields[5].drop(while: { $0 == " " }).hasPrefix("/"),
                  let dash = fields[0].firstIndex(of: "-"),
                  let start = UInt(fields[0][..<dash], radix: 16),
                  let end = UInt(fields[0][fields[0].index(after: dash)...], radix: 16)
            else { return nil }
            return (start, end)
        }
    }

    /// VmRSS of this process, kB.
    package static func residentKilobytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
    }
}

/// Releases start-up memory (``StartupMemoryRelease``) once the agent has settled — its stream open
/// and its journal empty as the store observation last saw it, looked at every 2 s — and again after
/// each full sync that completed (`fullSyncs`, signalled by the executor), the other heavy phase. It
/// never reads the store itself (the observation reads it every second anyway), so an agent that
/// never settles (a PostgreSQL follower, an agent whose backend is down) costs nothing but the look.
/// Code released and needed again comes back from the page cache at its first use: a few hundred
/// minor page faults, once.
struct StartupMemoryReleaseService: Service {
    let state: AgentState
    let observation: StoreObservation
    let fullSyncs: WakeSignal
    let logger: Logger

    func run() async {
        await cancelWhenGracefulShutdown {
            let clock = ContinuousClock()
            while !Task.isCancelled {
                if state.snapshot.stream == .open, observation.lastSeen.status?.counts.journalDepth == 0 { break }
                await fullSyncs.wait(until: clock.now.advanced(by: .seconds(2)), clock: clock)
            }
            while !Task.isCancelled {
                StartupMemoryRelease.release(logger: logger)
                await fullSyncs.wait(until: nil, clock: clock)
            }
        }
    }
}
