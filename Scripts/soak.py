#!/usr/bin/env python3
"""`make soak`: the agent against the Sandbox for SOAK_MINUTES (default 30) under steady faults.

Starts `orderlive sandbox` (auth, a changing order book, short-lived access tokens) and
`orderlive run` against it in a temporary directory, then keeps up, for the whole run:

- order changes at the Sandbox's steady rate (--event-interval), announced on the stream;
- silent changes announced only by a push (the agent must fetch them), several a second;
- refused pushes: a wrong bearer secret (401) and a body Gorush would refuse (400);
- stream cuts (every open stream dropped) and access-token expiries, on a fixed schedule.

Every minute it records the agent's resident memory, open file descriptors, journal depth, commit
lag (mean over the minute, from the histogram), log volume (lines and bytes written that minute),
and what it did. After a warm-up (a fifth of the run, at least one minute) it fails when any of
them grows: memory by more than max(12 MiB, 20 %), descriptors by more than 8, the journal not
drained, commit lag or log lines per minute more than tripled. It also fails if the agent dies,
if it does not stop with exit 0 on SIGTERM, if it wrote a crash report or logged a secret, or if a
push it acknowledged is not in its store at the end.

Usage: Scripts/soak.py BINARY [--minutes N] [--report FILE]
"""

import argparse
import json
import os
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

PASSWORD = "orderlive-demo"


def http(method, url, body=None, headers=None, timeout=10):
    """(status, text) of one request; status 0 when the connection itself failed."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return 0, ""


def wait_for(pattern, path, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                match = re.search(pattern, handle.read())
                if match:
                    return match.group(1)
        except FileNotFoundError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"soak: gave up waiting for {pattern!r} in {path}")


def metrics(base):
    status, text = http("GET", base + "/metrics")
    samples = {}
    if status != 200:
        return samples
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        try:
            samples[name] = float(value)
        except ValueError:
            pass
    return samples


def process_sample(pid):
    with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
        rss = int(re.search(r"VmRSS:\s+(\d+) kB", handle.read()).group(1)) * 1024
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds


class Driver:
    """The load: silent changes announced by pushes, refused pushes, stream cuts, token expiries."""

    def __init__(self, sandbox, base, secret):
        self.sandbox, self.base, self.secret = sandbox, base, secret
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.counts = {"pushes": 0, "acked": 0, "refused_401": 0, "refused_400": 0, "push_errors": 0,
                       "cuts": 0, "expiries": 0}
        self.acknowledged = []  # notif_ids answered 200
        self.random = random.Random(7)

    def count(self, key, by=1):
        with self.lock:
            self.counts[key] += by

    def push(self, body, secret):
        return http("POST", self.base + "/api/push", body=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json", "Authorization": f"Bearer {secret}"})

    def announced_changes(self):
        serial = 0
        while not self.stop.wait(0.2):
            status, text = http("GET", self.sandbox + "/sandbox/orders")
            ids = list(json.loads(text).keys()) if status == 200 and text.startswith("{") else []
            if not ids:
                continue
            order_id = self.random.choice(ids)
            new_status = self.random.choice(["assigned", "picked_up", "delivering", "delivered"])
            http("POST", f"{self.sandbox}/sandbox/orders/{order_id}?status={new_status}&announce=silent")
            serial += 1
            notif_id = f"soak-{serial}"
            status, _ = self.push({"notifications": [{"tokens": ["device"], "platform": 2, "notif_id": notif_id,
                                                      "content_available": True,
                                                      "data": {"type": "order.status_changed", "order_id": order_id}}]},
                                  self.secret)
            self.count("pushes")
            if status == 200:
                self.count("acked")
                with self.lock:
                    self.acknowledged.append(notif_id)
            else:
                self.count("push_errors")

    def refused(self):
        while not self.stop.wait(0.5):
            status, _ = self.push({"notifications": [{"tokens": ["t"], "platform": 2}]}, "not-the-secret")
            self.count("refused_401" if status == 401 else "push_errors")
            status, _ = self.push({"notifications": []}, self.secret)
            self.count("refused_400" if status == 400 else "push_errors")

    def faults(self):
        tick = 0
        while not self.stop.wait(1):
            tick += 1
            if tick % 45 == 0:
                http("POST", self.sandbox + "/sandbox/faults/drop-open-streams")
                self.count("cuts")
            if tick % 120 == 60:
                http("POST", self.sandbox + "/sandbox/faults/expire-access-tokens")
                self.count("expiries")

    def start(self):
        self.threads = [threading.Thread(target=target, daemon=True)
                        for target in (self.announced_changes, self.refused, self.faults)]
        for thread in self.threads:
            thread.start()

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


def growth_failures(rows, warmup):
    """What grew after the warm-up, as messages; empty when the figures are flat."""
    steady = rows[warmup:]
    if len(steady) < 2:
        return []
    head, tail = steady[: max(1, len(steady) // 3)], steady[-max(1, len(steady) // 3):]
    mean = lambda rows, key: statistics.fmean(row[key] for row in rows)
    failures = []
    rss_head, rss_tail = mean(head, "rss"), mean(tail, "rss")
    if rss_tail - rss_head > max(12 * 2**20, 0.2 * rss_head):
        failures.append(f"resident memory grew from {rss_head / 2**20:.1f} MiB to {rss_tail / 2**20:.1f} MiB")
    if max(row["fds"] for row in tail) > max(row["fds"] for row in head) + 8:
        failures.append(f"open descriptors grew from {max(r['fds'] for r in head)} to {max(r['fds'] for r in tail)}")
    if tail[-1]["journal_depth"] > 100:
        failures.append(f"the journal holds {tail[-1]['journal_depth']:.0f} jobs at the end")
    lag_head, lag_tail = mean(head, "commit_lag_ms"), mean(tail, "commit_lag_ms")
    if lag_tail > 3 * lag_head + 5:
        failures.append(f"commit lag grew from {lag_head:.2f} ms to {lag_tail:.2f} ms")
    lines_head, lines_tail = mean(head, "log_lines"), mean(tail, "log_lines")
    if lines_tail > 3 * lines_head + 20:
        failures.append(f"log lines per minute grew from {lines_head:.0f} to {lines_tail:.0f}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--minutes", type=int, default=int(os.environ.get("SOAK_MINUTES", "30")))
    parser.add_argument("--report", default=os.environ.get("SOAK_REPORT", ""))
    options = parser.parse_args()
    if not 1 <= options.minutes <= 24 * 60:
        raise SystemExit("soak: --minutes (SOAK_MINUTES) must be 1...1440")
    work = tempfile.mkdtemp(prefix="orderlive-soak-")
    children = []

    def stop_children(*_):
        for child in children:
            if child.poll() is None:
                child.kill()

    signal.signal(signal.SIGTERM, lambda *_: (stop_children(), sys.exit(1)))
    try:
        sandbox_log = open(os.path.join(work, "sandbox.log"), "w")
        children.append(subprocess.Popen(
            [options.binary, "sandbox", "--port", "0", "--orders", "--require-auth", "--event-interval", "250",
             "--access-token-lifetime", "90"], stderr=sandbox_log, stdout=subprocess.DEVNULL))
        sandbox = wait_for(r"listening on (http://127\.0\.0\.1:\d+)", sandbox_log.name)

        secret = "soak-" + os.urandom(12).hex()
        for name, text in (("ingest-secret", secret), ("password", PASSWORD)):
            path = os.path.join(work, name)
            with open(path, "w") as handle:
                handle.write(text)
            os.chmod(path, 0o600)
        config = os.path.join(work, "orderlive.yaml")
        with open(config, "w") as handle:
            handle.write(f"""upstream:
  base_url: "{sandbox}"
auth:
  identifier: "courier@example.com"
  password_file: "{work}/password"
ingest:
  listen: "127.0.0.1:0"
  auth: "bearer"
  secret_file: "{work}/ingest-secret"
api:
  listen: "127.0.0.1:0"
store:
  state_dir: "{work}/state"
log:
  level: "info"
  format: "json"
""")
        agent_log_path = os.path.join(work, "agent.log")
        agent_log = open(agent_log_path, "w")
        environment = dict(os.environ, SWIFT_BACKTRACE="enable=yes,registers=none,sanitize=yes")
        agent = subprocess.Popen([options.binary, "run", "--config", config], stderr=agent_log,
                                 stdout=subprocess.DEVNULL, env=environment)
        children.append(agent)
        base = "http://" + wait_for(r'"push\.listen":"(127\.0\.0\.1:\d+)"', agent_log_path)
        deadline = time.monotonic() + 60
        while http("GET", base + "/readyz")[0] != 200:
            if time.monotonic() > deadline or agent.poll() is not None:
                raise SystemExit("soak: the agent did not become ready")
            time.sleep(0.2)

        print(f"soak: {options.minutes} min against {sandbox}; agent pid {agent.pid} on {base}; logs in {work}", flush=True)
        driver = Driver(sandbox, base, secret)
        driver.start()
        rows, previous = [], metrics(base)
        log_offset = os.path.getsize(agent_log_path)
        started = time.monotonic()
        header = ("min", "rss MiB", "fds", "journal", "lag ms", "log lines", "log KiB", "acked", "orders", "reconnects",
                  "refreshes")
        print(" | ".join(header), flush=True)
        for minute in range(1, options.minutes + 1):
            time.sleep(max(0, started + 60 * minute - time.monotonic()))
            if agent.poll() is not None:
                raise SystemExit(f"soak: the agent exited ({agent.returncode}) in minute {minute}")
            rss, fds = process_sample(agent.pid)
            now = metrics(base)
            delta = lambda name: now.get(name, 0) - previous.get(name, 0)
            count = delta("orderlive_stream_commit_lag_seconds_count")
            size = os.path.getsize(agent_log_path)
            with open(agent_log_path, "rb") as handle:
                handle.seek(log_offset)
                lines = handle.read().count(b"\n")
            row = {
                "minute": minute, "rss": rss, "fds": fds,
                "journal_depth": now.get("orderlive_journal_depth", -1),
                "commit_lag_ms": 1000 * delta("orderlive_stream_commit_lag_seconds_sum") / count if count else 0.0,
                "log_lines": lines, "log_bytes": size - log_offset, "acked": driver.counts["acked"],
                "orders": now.get("orderlive_orders", -1),
                "reconnects": now.get("orderlive_stream_reconnects_total", -1),
                "refreshes": now.get('orderlive_auth_events_total{event="refresh_succeeded"}', -1),
            }
            rows.append(row)
            previous, log_offset = now, size
            print(f"{minute} | {rss / 2**20:.1f} | {fds} | {row['journal_depth']:.0f} | {row['commit_lag_ms']:.2f} | "
                  f"{lines} | {row['log_bytes'] / 1024:.1f} | {row['acked']} | {row['orders']:.0f} | "
                  f"{row['reconnects']:.0f} | {row['refreshes']:.0f}", flush=True)

        driver.finish()
        # Let the journal drain, then stop the agent as a supervisor would.
        drain_deadline = time.monotonic() + 60
        while metrics(base).get("orderlive_journal_depth", 1) > 0 and time.monotonic() < drain_deadline:
            time.sleep(0.5)
        final = metrics(base)
        agent.send_signal(signal.SIGTERM)
        try:
            status = agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()
            raise SystemExit("soak: the agent did not stop within 30 s of SIGTERM")

        failures = growth_failures(rows, warmup=max(1, options.minutes // 5))
        if status != 0:
            failures.append(f"the agent exited {status} on SIGTERM")
        log_text = open(agent_log_path, encoding="utf-8", errors="replace").read()
        if "Program crashed" in log_text:
            failures.append("the agent wrote a crash report")
        if secret in log_text or PASSWORD in log_text:
            failures.append("a secret reached the agent's log")
        database = sqlite3.connect(f"file:{work}/state/orderlive.sqlite?mode=ro", uri=True)
        # Acknowledged notif_ids are dedupe keys `notification:<notif_id>` (SQLiteStore's schema).
        stored = {row[0] for row in database.execute(
            "SELECT substr(id, 14) FROM dedupe_key WHERE id LIKE 'notification:%'")}
        missing = [notif for notif in driver.acknowledged if notif not in stored]
        if missing or not driver.acknowledged:
            failures.append(f"{len(missing)} of {len(driver.acknowledged)} acknowledged pushes are not in the store,"
                            f" e.g. {missing[:3]}")
        database.close()

        summary = {
            "minutes": options.minutes, "rows": rows, "driver": driver.counts, "failures": failures,
            "push_outcomes": {name.split('"')[1]: value for name, value in final.items()
                              if name.startswith("orderlive_push_requests_total{") and value},
            "stream_events": final.get("orderlive_stream_events_total", 0),
        }
        print(json.dumps({key: summary[key] for key in ("driver", "push_outcomes", "stream_events")}), flush=True)
        if options.report:
            with open(options.report, "w") as handle:
                json.dump(summary, handle, indent=1)
        if failures:
            print("soak: FAILED: " + "; ".join(failures), flush=True)
            print(f"soak: logs kept in {work}", flush=True)
            return 1
        print("soak: flat after warm-up; every acknowledged push is in the store; clean stop", flush=True)
        subprocess.run(["rm", "-rf", work])
        return 0
    finally:
        stop_children()


if __name__ == "__main__":
    sys.exit(main())
