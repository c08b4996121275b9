import AsyncSignals
import Foundation
import TestKit
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of one server, that can cut the network the way a failed switch
/// or a changed firewall does (issue 41): ``hold()`` stops passing bytes either way and says nothing
/// — no RST, no FIN; connections stay open, new ones are accepted and get no answer — until
/// ``heal()`` passes what was held; ``reset()`` ends every connection with an RST instead, and
/// ``refuse()`` does that and answers every new connection with an RST too, until ``heal()``.
///
/// One thread polls the listener and every connection (20 ms at most between looks at the mode).
/// Held bytes wait in the kernel's buffers, unread, as they would in a partitioned network.
public final class PartitionProxy: Sendable {
    /// The port clients connect to.
    public let port: Int
    private let target: Int
    private let listener: Int32
    private let state = Locked(State())
    private let stopped = OneShot<Void>()

    private struct State {
        var holding = false
        var refusing = false
        var resetRequested = false
        var stopping = false
        /// Connections made through the proxy so far.
        var accepted = 0
    }

    /// A proxy to `127.0.0.1:target`, listening on a free port, forwarding until ``stop()``.
    public init(to target: Int) throws {
        self.target = target
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ProxyFailure(description: "socket() failed") }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bindLoopback(descriptor, port: 0), let bound = boundPort(descriptor), listen(descriptor, 128) == 0 else {
            close(descriptor)
            throw ProxyFailure(description: "the partition proxy could not listen")
        }
        listener = descriptor
        port = bound
        let thread = Thread { [self] in
            pump()
            stopped.give(())
        }
        thread.name = "partition-proxy"
        thread.start()
    }

    /// Stops passing bytes, silently, on every connection, old and new.
    public func hold() { state.withLock { $0.holding = true } }

    /// Resets every connection and every new one, until ``heal()``.
    public func refuse() {
        state.withLock { state in
            state.refusing = true
            state.resetRequested = true
        }
    }

    /// Passes bytes again, what was held first; accepts connections again.
    public func heal() {
        state.withLock { state in
            state.holding = false
            state.refusing = false
        }
    }

    /// Ends every open connection with an RST on both sides.
    public func reset() { state.withLock { $0.resetRequested = true } }

    /// Connections accepted so far.
    public var accepted: Int { state.withLock { $0.accepted } }

    /// Closes the listener and every connection.
    public func stop() async {
        state.withLock { $0.stopping = true }
        await stopped.value
    }

    /// The proxy's thread: accept, forward, hold or reset, until stopped. Its connections are this
    /// thread's alone.
    private func pump() {
        var pairs: [(client: Int32, server: Int32)] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let (holding, refusing, resetting, stopping) = state.withLock { state in
                defer { state.resetRequested = false }
                return (state.holding, state.refusing, state.resetRequested, state.stopping)
            }
            if stopping || resetting {
                for pair in pairs {
                    Self.abort(pair.client)
                    Self.abort(pair.server)
                }
                pairs = []
                if stopping {
                    close(listener)
                    return
                }
            }
            var polled = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            if !holding {
                for pair in pairs {
                    polled.append(pollfd(fd: pair.client, events: Int16(POLLIN), revents: 0))
                    polled.append(pollfd(fd: pair.server, events: Int16(POLLIN), revents: 0))
                }
            }
            guard poll(&polled, nfds_t(polled.count), 20) > 0 else { continue }
            if polled[0].revents & Int16(POLLIN) != 0, refusing {
                let client = accept(listener, nil, nil)
                if client >= 0 { Self.abort(client) }
            } else if polled[0].revents & Int16(POLLIN) != 0, let pair = acceptPair() {
                pairs.append(pair)
                state.withLock { $0.accepted += 1 }
            }
            var closed: Set<Int> = []
            for (index, entry) in polled.enumerated().dropFirst() where entry.revents != 0 {
                let pairIndex = (index - 1) / 2
                let pair = pairs[pairIndex]
                let (from, to) = index % 2 == 1 ? (pair.client, pair.server) : (pair.server, pair.client)
                let count = read(from, &buffer, buffer.count)
                if count <= 0 || !Self.writeAll(to, buffer, count) { closed.insert(pairIndex) }
            }
            for index in closed.sorted(by: >) {
                close(pairs[index].client)
                close(pairs[index].server)
                pairs.remove(at: index)
            }
        }
    }

    private func acceptPair() -> (client: Int32, server: Int32)? {
        let client = accept(listener, nil, nil)
        guard client >= 0 else { return nil }
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopbackAddress(port: target)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard server >= 0, connected == 0 else {
            if server >= 0 { close(server) }
            Self.abort(client)
            return nil
        }
        return (client, server)
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], _ count: Int) -> Bool {
        var written = 0
        while written < count {
            let result = bytes.withUnsafeBufferPointer { write(descriptor, $0.baseAddress.map { $0 + written }, count - written) }
            guard result > 0 else { return false }
            written += result
        }
        return true
    }

    /// Closes with an RST (linger 0).
    private static func abort(_ descriptor: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(descriptor)
    }
}

/// The partition proxy could not start.
public struct ProxyFailure: Error, CustomStringConvertible {
    public let description: String
}
