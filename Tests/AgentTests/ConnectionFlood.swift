import Foundation
import TestKit

/// An attacker in another process (so this test process keeps its descriptors): `idle` connections
/// that send nothing and `slow` ones that trickle a request head one byte a second, each reopened as
/// soon as the listener closes it, for as long as the flood runs.
final class ConnectionFlood: Sendable {
    private static let script = """
        import selectors, socket, sys, time
        port, idle, slow = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        head = b"POST /api/push HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n" + b"X-Pad: " + b"a" * 4000
        def connect():
            s = socket.socket(); s.setblocking(True); s.settimeout(5)
            try:
                s.connect(("127.0.0.1", port))
            except OSError:
                s.close(); return None
            s.setblocking(False); return s
        conns = {}  # socket -> bytes sent (None for idle)
        for i in range(idle + slow):
            s = connect()
            if s is not None: conns[s] = None if i < idle else 0
        print("ready", len(conns), flush=True)
        reopened = 0
        sel = selectors.DefaultSelector()
        sel.register(sys.stdin, selectors.EVENT_READ)
        last = time.time()
        while True:
            if sel.select(timeout=0.2): break  # stdin closed: stop
            now = time.time()
            for s, sent in list(conns.items()):
                closed = False
                try:
                    if s.recv(4096) == b"": closed = True
                except BlockingIOError:
                    pass
                except OSError:
                    closed = True
                if not closed and sent is not None and now - last >= 1:
                    try:
                        s.send(head[sent:sent + 1]); conns[s] = sent + 1
                    except OSError:
                        closed = True
                if closed:
                    del conns[s]; s.close()
                    fresh = connect()
                    if fresh is not None: conns[fresh] = sent if sent is None else 0; reopened += 1
            if now - last >= 1: last = now
        print("reopened", reopened, flush=True)
        """

    private let process: ChildProcess
    private let input: FileHandle
    private let output: FileHandle

    /// Starts the flood against 127.0.0.1:`port` and waits until every first connection is open. A
    /// flood still running after `lifetime` is killed, so it never outlives a broken test.
    init(port: Int, idle: Int, slow: Int, lifetime: Duration = .seconds(240)) async throws {
        let process = try ChildProcess(
            "/usr/bin/env", ["python3", "-c", Self.script, "\(port)", "\(idle)", "\(slow)"], input: .pipe, output: .pipe,
            error: .inherit)
        guard let input = process.standardInput, let output = process.standardOutput else {
            throw ChildProcessError("the flood's pipes", EBADF)
        }
        (self.process, self.input, self.output) = (process, input, output)
        DispatchQueue.global().asyncAfter(deadline: .now() + Double(lifetime.components.seconds)) {
            process.signal(SIGKILL)
        }
        opened = await Self.line(of: output)
    }

    /// What the flood said once its first connections were open (`ready N`).
    let opened: String

    /// Stops the flood; returns how many connections it reopened after the listener closed them.
    func stop() async -> String {
        try? input.close()
        let output = self.output
        let process = self.process
        let said = await Self.line(of: output)
        _ = await offThePool { process.waitUntilExit() }
        return said
    }

    private static func line(of handle: FileHandle) async -> String {
        await offThePool {
            var buffer = Data()
            while !buffer.contains(0x0A) {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
            }
            return buffer.split(separator: 0x0A).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
    }
}
