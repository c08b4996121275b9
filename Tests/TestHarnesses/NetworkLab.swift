import Foundation
import AsyncSignals
import TestKit

#if canImport(Glibc)
import Glibc
#endif

/// A test network of real hosts (issue 60): each host is a Linux network namespace joined to the
/// test's own namespace by a veth pair on a /24 of its own, so a process started in it (``command(in:_:)``)
/// reaches the test's servers only across that link, and the link can fail the way real ones do.
/// ``blackhole(_:)`` drops every packet both ways (a token-bucket filter with a near-zero rate on both
/// ends, since this kernel has no `netem`): a new connection's SYN goes unanswered and an open
/// connection's bytes vanish, with no RST and no error, so only timeouts notice; ``heal(_:)`` removes it.
///
/// Names carry this process's id (`ol<pid>h<n>`), so ``removeStale()`` deletes namespaces left by a
/// killed run (their process is gone) and never another test's. ``remove()`` deletes the lab's hosts;
/// deleting a namespace deletes its end of the pair, and with it the test's end.
public final class NetworkLab: Sendable {
    /// One host: its namespace, its address, and the test side's address on its link.
    public struct Host: Sendable {
        /// The namespace's name (`ip netns exec NAME …`).
        public let namespace: String
        /// The host's address on its link.
        public let address: String
        /// The test's address on the host's link: servers the host must reach listen here.
        public let gateway: String
        /// The link's interface in the test's namespace, and in the host's.
        let outside: String
        let inside: String
    }

    /// Why a lab cannot be made here.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    private let prefix: String
    private let subnet: Int
    private let hosts = Locked<[Host]>([])

    /// True when this machine lets the test make namespaces (root, iproute2, a kernel with veth).
    public static let available: Bool = {
        let probe = "olprobe\(getpid())"
        guard (try? run(["netns", "add", probe])) != nil else { return false }
        _ = try? run(["netns", "del", probe])
        return true
    }()

    /// A lab; namespaces a killed earlier run left are removed first.
    public init() throws {
        guard Self.available else {
            throw Unavailable(description: "network namespaces cannot be made here: the tests need root, iproute2 (`ip`) and veth")
        }
        Self.removeStale()
        prefix = "ol\(getpid())"
        // A second octet per lab, so labs of one run (and of runs side by side) rarely share a /16;
        // the third is the host's number.
        subnet = Int.random(in: 100...199)
    }

    /// Adds host number `hosts.count + 1`: its namespace, the veth pair, addresses, links up.
    public func addHost() throws -> Host {
        let number = hosts.withLock { $0.count } + 1
        let namespace = "\(prefix)h\(number)"
        let outside = "\(prefix)o\(number)"
        let inside = "\(prefix)i\(number)"
        let (address, gateway) = ("10.\(subnet).\(number).2", "10.\(subnet).\(number).1")
        try Self.run(["netns", "add", namespace])
        let host = Host(namespace: namespace, address: address, gateway: gateway, outside: outside, inside: inside)
        hosts.withLock { $0.append(host) }
        try Self.run(["link", "add", outside, "type", "veth", "peer", "name", inside])
        try Self.run(["link", "set", inside, "netns", namespace])
        try Self.run(["addr", "add", gateway + "/24", "dev", outside])
        try Self.run(["link", "set", outside, "up"])
        try Self.run(["netns", "exec", namespace, "ip", "addr", "add", address + "/24", "dev", inside])
        try Self.run(["netns", "exec", namespace, "ip", "link", "set", inside, "up"])
        try Self.run(["netns", "exec", namespace, "ip", "link", "set", "lo", "up"])
        return host
    }

    /// Drops every packet on `host`'s link, both ways, silently.
    public func blackhole(_ host: Host) throws {
        try Self.tc(["qdisc", "replace", "dev", host.outside, "root", "tbf", "rate", "8bit", "burst", "1", "latency", "1ms"])
        try Self.tc(["qdisc", "replace", "dev", host.inside, "root", "tbf", "rate", "8bit", "burst", "1", "latency", "1ms"],
                    in: host.namespace)
    }

    /// Lets `host`'s link carry packets again.
    public func heal(_ host: Host) throws {
        _ = try? Self.tc(["qdisc", "del", "dev", host.outside, "root"])
        _ = try? Self.tc(["qdisc", "del", "dev", host.inside, "root"], in: host.namespace)
    }

    /// The command line that runs `arguments` (an executable and its arguments) inside `host`.
    public func command(in host: Host, _ arguments: [String]) -> [String] {
        [Self.ipPath, "netns", "exec", host.namespace] + arguments
    }

    /// Deletes the lab's hosts.
    public func remove() {
        for host in hosts.withLock({ $0 }) { _ = try? Self.run(["netns", "del", host.namespace]) }
        hosts.withLock { $0 = [] }
    }

    deinit { remove() }

    /// Deletes namespaces named by a test process that no longer runs.
    public static func removeStale() {
        guard let listed = try? run(["netns", "list"]) else { return }
        for line in listed.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix("ol"), let h = name.lastIndex(of: "h"),
                  let pid = Int32(name[name.index(name.startIndex, offsetBy: 2)..<h]) else { continue }
            if kill(pid, 0) != 0, errno == ESRCH { _ = try? run(["netns", "del", name]) }
        }
    }

    static let ipPath = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    private static func tc(_ arguments: [String], in namespace: String? = nil) throws {
        let tcPath = FileManager.default.isExecutableFile(atPath: "/usr/sbin/tc") ? "/usr/sbin/tc" : "/sbin/tc"
        if let namespace {
            try run(["netns", "exec", namespace, tcPath] + arguments)
        } else {
            _ = try runTool(tcPath, arguments)
        }
    }

    /// Runs `ip` with `arguments`; its output, or an error naming the command and what it said.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        try runTool(ipPath, arguments)
    }

    /// Runs `path` with `arguments` to its end (a short command: `ip`, `tc`); its output, or an error
    /// naming the command and what it said. Through ``ChildProcess``, not Foundation's `Process`, whose
    /// wait here left threads of the cooperative pool blocked.
    @discardableResult
    private static func runTool(_ path: String, _ arguments: [String]) throws -> String {
        let child = try ChildProcess(path, arguments, output: .pipe, error: .standardOutput)
        let output = String(decoding: child.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        let status = child.waitUntilExit()
        guard status == 0 else {
            throw Unavailable(description: "\(path) \(arguments.joined(separator: " ")) failed (\(status)): \(output)")
        }
        return output
    }
}
