import Agent
import Foundation
import Logging
import Testing

/// What only starting up needed goes back once a full sync has finished (DESIGN §9's idle RSS): only
/// read-only executable file mappings are released, and the process goes on running from them.
@Suite(.timeLimit(.minutes(1))) struct StartupMemoryReleaseTests {
    @Test func onlyFileBackedReadOnlyExecutableMappingsAreReleased() {
        let maps = """
            55d0c0000000-55d0c1000000 r--p 00000000 fd:01 123    /usr/bin/orderlive
            55d0c1000000-55d0c3000000 r-xp 01000000 fd:01 123    /usr/bin/orderlive
            55d0c3000000-55d0c3100000 r--p 03000000 fd:01 123    /usr/bin/orderlive
            55d0c3100000-55d0c3200000 rw-p 03100000 fd:01 123    /usr/bin/orderlive
            7f0000000000-7f0000100000 r-xp 00000000 fd:01 456    /opt/my libs/libc.so.6 (deleted)
            7f0000200000-7f0000300000 rw-p 00000000 00:00 0
            7f0000300000-7f0000400000 r-xp 00000000 00:00 0
            7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
            ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
            not a mapping
            zz-yy r-xp 0 0 0 /x
            """
        let found = StartupMemoryRelease.executableMappings(maps)
        #expect(found.map(\.start) == [0x55d0_c100_0000, 0x7f00_0000_0000])
        #expect(found.map(\.end) == [0x55d0_c300_0000, 0x7f00_0010_0000])
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
        let smaps = try String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
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
