import AsyncSignals
import Foundation
package import Logging
import ServiceLifecycle
import StoreModel
import OrderSync

#if canImport(Glibc)
import Glibc
#endif

/// Gives back the memory that only starting up needed (DESIGN §9's idle RSS): the allocator's free
/// heap (`malloc_trim`), and the executable's code pages that the start ran, parsed, migrated and
/// synced with and an idle agent never touches again. ``StartupMemoryReleaseService``
/// says when.
///
/// Code pages are file-backed and clean: `MADV_DONTNEED` on a read-only executable mapping
/// (`r-xp` in `/proc/self/smaps`, with no anonymous page) unmaps them from this process, and the next
/// use of any of them maps it again from the page cache (a minor fault, no disk read while the cache holds it). Only those
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

    /// The executable's own read-only code mappings in `/proc/self/smaps` (start and end addresses)
    /// that hold no anonymous page: a code page the loader wrote to (a text relocation) is a private
    /// copy, counted as `Anonymous`, and would come back from the file without its write, so such a
    /// mapping is left alone. (`Private_Dirty` is no guide: a file written shortly before, such as a
    /// fresh build, has dirty page-cache pages that count there.)
    ///
    /// Only the executable's: start-up runs a great deal of its code once, and an idle agent little.
    /// The shared libraries' code was tried too (every `r-xp` file mapping): the idle agent's resident
    /// set came out larger, 43.6 MB against 38.9, because the little of each library it still runs
    /// came back in the kernel's 64 KiB fault-around blocks, denser than it had been.
    package static func executableMappings(
        _ smaps: String? = procFile("/proc/self/smaps"), executable: String? = executablePath()
    ) -> [(start: UInt, end: UInt)] {
        guard let smaps, let executable else { return [] }
        var found: [(start: UInt, end: UInt)] = []
        var candidate: (start: UInt, end: UInt)?
        for line in smaps.split(separator: "\n") {
            // A mapping's line: "start-end perms offset dev inode path"; its fields follow ("Name: value kB").
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            if let first = fields.first, !first.hasSuffix(":"), let dash = first.firstIndex(of: "-") {
                candidate = nil
                // The path is padded with spaces, which the last split keeps.
                guard fields.count == 6, fields[1] == "r-xp", fields[5].drop(while: { $0 == " " }) == executable,
                      let start = UInt(first[..<dash], radix: 16),
                      let end = UInt(first[first.index(after: dash)...], radix: 16)
                else { continue }
                candidate = (start, end)
            } else if let mapping = candidate, fields.first == "Anonymous:" {
                if fields.count >= 2, fields[1] == "0" { found.append(mapping) }
                candidate = nil
            }
        }
        return found
    }

    /// This process's executable as `/proc/self/maps` names it (`/proc/self/exe`'s target, with
    /// " (deleted)" after it when the file was replaced while running).
    package static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4_097)
        let count = buffer.withUnsafeMutableBufferPointer { target -> Int in
            guard let base = target.baseAddress else { return -1 }
            return readlink("/proc/self/exe", base, 4_096)
        }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The whole text of a `/proc` file, read with `read(2)` until its end (at most 64 MiB). Foundation's
    /// `String(contentsOfFile:)` returned only the first 4 KB of `/proc/self/maps`: a procfs file has
    /// no size, and Foundation stopped after its first read. Nil when the file cannot be read.
    package static func procFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < 64 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// VmRSS of this process, kB.
    package static func residentKilobytes() -> Int? {
        guard let status = procFile("/proc/self/status"),
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
