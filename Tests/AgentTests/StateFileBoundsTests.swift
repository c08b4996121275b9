import Agent
import Foundation
import Testing
import OrderSync

/// Issue 11, sweep: `stream-status.json` in the state directory is read with checked numbers.
/// A file edited by hand or cut short by a full disk gives "stopped" or a default, never a trap.
@Suite(.timeLimit(.minutes(5))) struct StateFileBoundsTests {
    @Test func edgeNumbersInTheStreamStatusFileAreIgnored() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = StreamStatusFile.path(stateDirectory: directory)
        let edges = ["-9223372036854775808", "9223372036854775807", "18446744073709551616", "1e308", "-1e308", "-0",
                     "2.5", "true", "\"7\"", "null"]
        for value in edges {
            let text = #"{"pid":\#(value),"state":"open","reconnects":\#(value),"last_event_at":\#(value)}"#
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let snapshot = try #require(StreamStatusFile.read(stateDirectory: directory), "\(value)")
            // No such process can be alive, so the stream reads as stopped.
            #expect(snapshot.stream == .stopped, "\(value)")
            #expect(snapshot.reconnects == 0, "\(value)")
            #expect(snapshot.lastEventAt.map { $0.isFinite && $0 >= 0 && $0 < 3e11 } ?? true, "\(value)")
        }
        try #"{"pid":1,"state":"open","reconnects":12,"last_event_at":1700000000.5}"#.write(
            toFile: path, atomically: true, encoding: .utf8)
        let sane = try #require(StreamStatusFile.read(stateDirectory: directory))
        #expect(sane.reconnects == 12)
        #expect(sane.lastEventAt == 1_700_000_000.5)
    }
}
