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
/// ``addLink(to:)`` gives a host a second link, so one path of a host's (its database's) can fail
/// while the others (its clients', its upstream's) carry on.
///
/// Names carry this process's id and a letter per lab (`ol<pid>a…`), so ``removeStale()`` deletes namespaces left by a
/// killed run (their process is gone) and never another test's. ``remove()`` deletes the lab's hosts;
/// deleting a namespace deletes its end of the pair, and with it the test's end.
public final class NetworkLab: Sendable {
    /// One link: a veth pair between the test's namespace and a host's, on a /24 of its own.
    public struct Link: Sendable {
        /// The host's namespace.
        public let namespace: String
        /// The host's address on the link.
        public let address: String
        /// The test's address on the link: servers the host must reach across this link listen here.
        public let gateway: String
        /// The link's interface in the test's namespace, and in the host's.
        let outside: String
        let inside: String
    }

    /// One host: its namespace and its first link, which carries its default route (so it reaches
    /// every address of the test's namespace that no other link of its reaches).
    public struct Host: Sendable {
        /// The host's first link.
        public let link: Link
        /// The namespace's name (`ip netns exec NAME …`).
        public var namespace: String { link.namespace }
        /// The host's address on its first link.
        public var address: String { link.address }
        /// The test's address on the host's first link.
        public var gateway: String { link.gateway }
    }

    /// Why a lab cannot be made here.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    private let prefix: String
    private let subnet: Int
    private let hosts = Locked<[Host]>([])
    private let links = Locked(0)
    /// How many labs this process made.
    private static let made = Locked(0)

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
        // Labs of one process (tests run side by side) differ by a letter after the pid, and each
        // takes the next /16 of 10.100–199, starting from the pid, so runs side by side rarely meet.
        let number = Self.made.withLock { count in
            count += 1
            return count
        }
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        prefix = "ol\(getpid())\(letters[number % letters.count])"
        subnet = 100 + (Int(getpid()) + number) % 100
    }

    /// Adds host number `hosts.count + 1`: its namespace, its first link, a default route across it.
    public func addHost() throws -> Host {
        let number = hosts.withLock { $0.count } + 1
        let namespace = "\(prefix)h\(number)"
        try Self.run(["netns", "add", namespace])
        let link = try connect(namespace)
        let host = Host(link: link)
        hosts.withLock { $0.append(host) }
        try Self.run(["netns", "exec", namespace, "ip", "link", "set", "lo", "up"])
        try Self.run(["netns", "exec", namespace, "ip", "route", "add", "default", "via", link.gateway])
        return host
    }

    /// Adds another link to `host`, on a subnet of its own: what the host reaches at its gateway
    /// crosses this link only, so it can fail while the host's other links carry on.
    public func addLink(to host: Host) throws -> Link {
        try connect(host.namespace)
    }

    /// A veth pair into `namespace`, numbered (and addressed `10.S.N.0/24`) after the lab's links.
    private func connect(_ namespace: String) throws -> Link {
        let number = links.withLock { count in
            count += 1
            return count
        }
        let (outside, inside) = ("\(prefix)o\(number)", "\(prefix)i\(number)")
        let (address, gateway) = ("10.\(subnet).\(number).2", "10.\(subnet).\(number).1")
        try Self.run(["link", "add", outside, "type", "veth", "peer", "name", inside])
        try Self.run(["link", "set", inside, "netns", namespace])
        try Self.run(["addr", "add", gateway + "/24", "dev", outside])
        try Self.run(["link", "set", outside, "up"])
        try Self.run(["netns", "exec", namespace, "ip", "addr", "add", address + "/24", "dev", inside])
        try Self.run(["netns", "exec", namespace, "ip", "link", "set", inside, "up"])
        return Link(namespace: namespace, address: address, gateway: gateway, outside: outside, inside: inside)
    }

    /// The lab's addresses, `10.S.0.0/16` (for a server that trusts them).
    public var network: String { "10.\(subnet).0.0/16" }

    /// Drops every packet on `host`'s first link, both ways, silently.
    public func blackhole(_ host: Host) throws { try blackhole(host.link) }

    /// Lets `host`'s first link carry packets again.
    public func heal(_ host: Host) throws { try heal(host.link) }

    /// Drops every packet on `link`, both ways, silently.
    public func blackhole(_ link: Link) throws {
        try Self.tc(["qdisc", "replace", "dev", link.outside, "root", "tbf", "rate", "8bit", "burst", "1", "latency", "1ms"])
        try Self.tc(["qdisc", "replace", "dev", link.inside, "root", "tbf", "rate", "8bit", "burst", "1", "latency", "1ms"],
                    in: link.namespace)
    }

    /// Lets `link` carry packets again.
    public func heal(_ link: Link) throws {
        _ = try? Self.tc(["qdisc", "del", "dev", link.outside, "root"])
        _ = try? Self.tc(["qdisc", "del", "dev", link.inside, "root"], in: link.namespace)
    }

    /// The TCP sockets of process `pid` in `host` (`ss -tnp`, its lines without the header), each
    /// with its state, local and peer address; a socket its process closed and the kernel still
    /// holds (a FIN unanswered on a dead link) names no process and is not among them.
    public func sockets(of pid: Int32, in host: Host) throws -> [String] {
        let ssPath = FileManager.default.isExecutableFile(atPath: "/usr/bin/ss") ? "/usr/bin/ss" : "/bin/ss"
        let listed = try Self.run(["netns", "exec", host.namespace, ssPath, "-Htanp"])
        return listed.split(separator: "\n").map(String.init).filter { $0.contains("pid=\(pid),") }
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
            let digits = name.dropFirst(2).prefix { $0.isNumber }
            guard name.hasPrefix("ol"), let pid = Int32(digits) else { continue }
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
