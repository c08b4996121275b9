#!/usr/bin/env python3
"""Takes docs/board.png: a screenshot of the dispatch board of a running `orderlive demo`, through
headless Chromium's DevTools protocol (real time, so the cards' ages are true; `--screenshot` uses
virtual time and shows every card as just changed).

    orderlive demo --api-port 8095 &            # let it run a minute first
    chromium --headless --remote-debugging-port=9333 about:blank &
    python3 Scripts/board-screenshot.py 9333 http://127.0.0.1:8095/ docs/board.png 8
"""
port = int(sys.argv[1]); url = sys.argv[2]; out = sys.argv[3]; wait = float(sys.argv[4])
targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
page = next(t for t in targets if t["type"] == "page")
ws = page["webSocketDebuggerUrl"]
host, path = ws[len("ws://"):].split("/", 1)
h, p = host.split(":")
s = socket.create_connection((h, int(p)))
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
buf = b""
while b"\r\n\r\n" not in buf: buf += s.recv(4096)
buf = buf.split(b"\r\n\r\n", 1)[1]
def send(obj):
    data = json.dumps(obj).encode(); mask = os.urandom(4)
    header = bytes([0x81]); n = len(data)
    header += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n)
    s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
def recv():
    global buf
    def need(n):
        global buf
        while len(buf) < n: buf += s.recv(65536)
    need(2); b1 = buf[1] & 0x7F; off = 2
    if b1 == 126: need(4); b1 = struct.unpack(">H", buf[2:4])[0]; off = 4
    elif b1 == 127: need(10); b1 = struct.unpack(">Q", buf[2:10])[0]; off = 10
    need(off + b1); data = buf[off:off + b1]; buf = buf[off + b1:]
    return json.loads(data)
def call(i, method, params):
    send({"id": i, "method": method, "params": params})
    while True:
        m = recv()
        if m.get("id") == i: return m
call(1, "Emulation.setDeviceMetricsOverride", {"width": 1360, "height": 600, "deviceScaleFactor": 1, "mobile": False})
call(2, "Page.navigate", {"url": url})
time.sleep(wait)
r = call(3, "Page.captureScreenshot", {"format": "png"})
open(out, "wb").write(base64.b64decode(r["result"]["data"]))
print("ok")
