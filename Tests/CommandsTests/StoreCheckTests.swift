import Agent
import Commands
import Foundation
import Testing

/// `orderlive store check|restore` on damaged files, in process: a check tells a sound store from a
/// damaged one and from a file that is no database at all, and a damaged file is never restored.
@Suite(.timeLimit(.minutes(2))) struct StoreCheckTests {
    @Test func aCheckTellsASoundStoreFromADamagedOneAndADamagedFileIsNeverRestored() async throws {
        let (configuration, directory) = try FailureCommandsTests.stand()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let captured = CommandRulesTests.Captured()
        let commands = OperatorCommands(configuration, console: captured.console)
        try commands.checkStore(nil)
        let said = captured.output.joined(separator: "\n")
        #expect(said.contains("integrity ok, 0 orders, 1 pending jobs, 2 dead letters"), "\(said)")
        #expect(said.contains("no stream cursor yet"), "a note, not a failure: \(said)")

        // A copy with every page after the first overwritten.
        let copy = directory + "/copy.sqlite"
        try commands.backupStore(to: copy, replacing: false)
        let damaged = directory + "/damaged.sqlite"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: copy)))
        #expect(bytes.count > 8_192)
        for index in 4_096..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        #expect { try commands.checkStore(damaged) } throws: { error in
            let why = "\(error)"
            return error is CommandFailure && why.contains("store check failed for \(damaged)")
                && (why.contains("integrity check failed") || why.contains("is damaged"))
        }

        let garbage = directory + "/notes.txt"
        try Data(String(repeating: "not a database\n", count: 400).utf8).write(to: URL(fileURLWithPath: garbage))
        #expect { try commands.checkStore(garbage) } throws: { "\($0)".contains("\(garbage) is not an SQLite database") }

        let store = directory + "/orderlive.sqlite"
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        #expect { try commands.restoreStore(from: damaged) } throws: { error in
            "\(error)".contains("\(damaged) cannot be restored") && "\(error)".contains("nothing was changed")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }
}
