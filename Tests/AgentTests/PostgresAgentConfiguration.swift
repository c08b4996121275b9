import AsyncSignals
import CurlHTTP
import Foundation
import Logging
import Sandbox
import Testing

#if canImport(Glibc)
import Glibc
#endif


/// The configurations of the `orderlive run`s of one test, in a temporary directory of their own:
/// the Sandbox's demo user (its password in a file), pushes on a free loopback port, no orders API,
/// debug JSON logs, and the store on PostgreSQL at `url` for `account`.
struct PostgresAgentConfiguration {
    /// The database password every agent is given (in `DIRECTORY/pg-password`); the test cluster
    /// trusts loopback, so it is held and never needed, and no log may show it.
    static let databasePassword = "pg-pw-7Hq2-never-logged"

    let directory: String
    let url: String
    let account: String
    let failover: Int

    /// Creates the directory (named after `label`) with the user's and the database's password files.
    init(_ label: String, url: String, account: String, failover: Int) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-pg-\(label)-\(UUID().uuidString)").path
        self.url = url
        self.account = account
        self.failover = failover
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data((SandboxUser.demo.password + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/password"))
        try Data((Self.databasePassword + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/pg-password"))
    }

    /// Writes `DIRECTORY/NAME.yaml` (state in `DIRECTORY/NAME`) and returns its path; `url`, when
    /// given, is this agent's way to the database (a proxy's) instead of the test's.
    func write(_ name: String, url: String? = nil) throws -> String {
        let url = url ?? self.url
        let file = directory + "/\(name).yaml"
        try Data("""
            auth:
              identifier: "\(SandboxUser.demo.identifier)"
              password_file: "\(directory)/password"
            stream:
              initial_delay_ms: 0
              max_delay_ms: 200
            ingest:
              listen: "127.0.0.1:0"
            api:
              listen: ""
            store:
              state_dir: "\(directory)/\(name)"
              backend: "postgres"
              postgres_url: "\(url)"
              postgres_password_file: "\(directory)/pg-password"
              account: "\(account)"
              failover_s: \(failover)
            log:
              level: "debug"
              format: "json"

            """.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
