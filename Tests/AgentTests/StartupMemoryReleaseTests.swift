import Agent
import Foundation
import Logging
import Testing

/// What only starting up needed goes back once a full sync has finished (DESIGN §9's idle RSS): only
/// the executable's own read-only code mappings are released, and the process goes on running from them.
@Suite(.timeLimit(.minutes(1))) struct StartupMemoryReleaseTests {
    @Test func onlyTheExecutablesCodeMappingsWithoutCopiedPagesAreReleased() {
        func mapping(_ header: String, copied: Int = 0) -> String {
            header + "\nSize: 4096 kB\nRss: 1024 kB\nPrivate_Clean: 0 kB\nPrivate_Dirty: 1024 kB\nAnonymous: \(copied) kB\n"
                + "VmFlags: rd ex mr mw me\n"
        }
        let smaps = [
            mapping("55d0c0000000-55d0c1000000 r--p 00000000 fd:01 123    /usr/bin/orderlive"),
            mapping("55d0c1000000-55d0c3000000 r-xp 01000000 fd:01 123    /usr/bin/orderlive"),
            mapping("55d0c3000000-55d0c3100000 r--p 03000000 fd:01 123    /usr/bin/orderlive"),
            mapping("55d0c3100000-55d0c3200000 rw-p 03100000 fd:01 123    /usr/bin/orderlive", copied: 8),
            mapping("7f0000000000-7f0000100000 r-xp 00000000 fd:01 456    /opt/my libs/libc.so.6"),
            mapping("7f0000180000-7f0000190000 r-xp 00000000 fd:01 123    /usr/bin/orderlive"),
            mapping("7f0000100000-7f0000180000 r-xp 00000000 fd:01 123    /usr/bin/orderlive", copied: 4),
            mapping("7f0000200000-7f0000300000 rw-p 00000000 00:00 0"),
            mapping("7f0000300000-7f0000400000 r-xp 00000000 00:00 0"),
            mapping("7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]"),
            mapping("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]"),
            "not a mapping\nzz-yy r-xp 0 0 0 /x\nAnonymous: 0 kB\n",
            "7f0000500000-7f0000600000 r-xp 00000000 fd:01 123    /usr/bin/orderlive\n",
        ].joined()
        let found = StartupMemoryRelease.executableMappings(smaps, executable: "/usr/bin/orderlive")
        #expect(found.map(\.start) == [0x55d0_c100_0000, 0x7f00_0018_0000])
        #expect(found.map(\.end) == [0x55d0_c300_0000, 0x7f00_0019_0000])
        let replaced = StartupMemoryRelease.executableMappings(
            "7f0000000000-7f0000100000 r-xp 00000000 fd:01 456    /opt/my libs/orderlive (deleted)\nAnonymous: 0 kB\n",
            executable: "/opt/my libs/orderlive (deleted)")
        #expect(replaced.map(\.start) == [0x7f00_0000_0000], "a path with spaces, replaced while running")
    }

    @Test func procFilesAreReadToTheirEnd() throws {
        // Foundation's String(contentsOfFile:) stopped after 4 KB of these (they have no size).
        let maps = try #require(StartupMemoryRelease.procFile("/proc/self/maps"))
        #expect(maps.utf8.count > 4_096, "this test process maps more than 4 KB of lines")
        #expect(maps.hasSuffix("\n") && maps.split(separator: "\n").allSatisfy { $0.contains("-") })
        #expect(StartupMemoryRelease.procFile("/proc/self/no-such-file") == nil)
        let executable = try #require(StartupMemoryRelease.executablePath())
        #expect(maps.contains(executable) && !StartupMemoryRelease.executableMappings().isEmpty)
    }

    @Test func releasingShrinksTheResidentCodeAndTheProcessRunsOn() throws {
        let before = try Self.residentCodeKilobytes()
        StartupMemoryRelease.release(logger: Logger(label: "test.memory"))
        let after = try Self.residentCodeKilobytes()
        // Only the pages run since come back: this test's reading of smaps and what the suites beside it run.
        #expect(after < before, "resident code \(before) kB before, \(after) kB after")
        // The code released runs again from the page cache.
        let text = String(decoding: try JSONSerialization.data(withJSONObject: ["after": after]), as: UTF8.self)
        #expect(text == #"{"after":\#(after)}"#)
    }

    /// The resident kB of this process's read-only executable file mappings (`/proc/self/smaps`).
    private static func residentCodeKilobytes() throws -> Int {
        let smaps = try #require(StartupMemoryRelease.procFile("/proc/self/smaps"))
        var counting = false
        var total = 0
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), fields.count >= 5, !first.hasSuffix(":") {
                counting = fields[1] == "r-xp" && fields.count == 6 && fields[5].drop(while: { $0 == " " }).hasPrefix("/")
            } else if counting, fields.first == "Rss:", fields.count >= 2, let kilobytes = Int(fields[1]) {
                total += kilobytes
            }
        }
        return total
    }
}
