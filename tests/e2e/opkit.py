"""Helpers for the operator-experience tests (issue 6): the shop scenario with known counts, a run under a
pseudo-terminal, background runs, polling, config rewriting and the replica's SQL thread.

Runnable alone: `GOARCHIVE_BIN=build/goarchive /usr/bin/python3 tests/e2e/test_operator.py -v` after
`eval "$(scripts/servers.sh env)"`.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import gatest  # noqa: E402
from scenario import BIN, SHOP_JOB, SHOP_RELATIONS, SHOP_TABLES, Scenario, load_shop  # noqa: E402,F401

SERVERS_SH = os.path.join(ROOT, "scripts", "servers.sh")
OLD = "created_at < NOW() - INTERVAL 2 YEAR"


def shop(test, tag, orders=300, processing=None, extra="", destination=None, source=None, job=None):
    """A shop scenario: returns (sc, cfg path, snapshot before, expected {table: rows that move})."""
    sc = Scenario(test, tag)
    load_shop(sc, orders=orders)
    before = sc.snapshot(SHOP_TABLES)
    dest = {"foreign_key_checks": False}
    dest.update(destination or {})
    cfg = sc.config({"j": job or SHOP_JOB}, processing=processing, destination=dest, source=source, extra=extra)
    return sc, cfg, before, expected_moves(sc)


def expected_moves(sc):
    """Rows of each shop table that belong to old orders, counted independently of goarchive."""
    q = gatest.quote_ident(sc.src_db)
    old = f"(SELECT id FROM {q}.orders WHERE {OLD})"
    counts = {
        "orders": f"SELECT COUNT(*) FROM {q}.orders WHERE {OLD}",
        "order_items": f"SELECT COUNT(*) FROM {q}.order_items WHERE order_id IN {old}",
        "payments": f"SELECT COUNT(*) FROM {q}.payments WHERE order_id IN {old}",
        "shipments": f"SELECT COUNT(*) FROM {q}.shipments WHERE order_id IN {old}",
        "shipment_items": f"SELECT COUNT(*) FROM {q}.shipment_items WHERE shipment_id IN "
                          f"(SELECT id FROM {q}.shipments WHERE order_id IN {old})",
    }
    return {t: int(gatest.sql("source", s)[0][0]) for t, s in counts.items()}


def read(path):
    with open(path) as f:
        return f.read()


def counts(sc, server):
    return {t: int(sc.count(server, t)) for t in SHOP_TABLES}


def wait_until(cond, timeout=30, step=0.1, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def hold_order_lock(test, sc, order_id=50):
    """Locks one old order row of the source (SELECT .. FOR UPDATE in an open transaction) so that the run blocks
    when it deletes that order's batch: a deterministic slow run. Returns release(); a cleanup releases it too."""
    conn = gatest.connect("source", sc.src_db, autocommit=False)
    with conn.cursor() as cur:
        cur.execute("SELECT id FROM orders WHERE id = %s FOR UPDATE", (order_id,))
        if not cur.fetchall():
            raise AssertionError(f"order {order_id} does not exist")
    done = []

    def release():
        if done:
            return
        done.append(1)
        try:
            conn.rollback()
            conn.close()
        except Exception:
            pass
    test.addCleanup(release)
    return release


def env_with(**kv):
    e = dict(os.environ)
    for k, v in kv.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


class Background:
    """goarchive ARGS in the background with stdout and stderr collected by threads (no pipe can fill up).

    pty=True puts stderr on the slave side of a pseudo-terminal (isatty(2) is true in the child); .err is then what
    the terminal received (the line discipline turns "\\n" into "\\r\\n")."""

    def __init__(self, args, env=None, pty=False, cols=200):
        self._out, self._err = bytearray(), bytearray()
        self._lock = threading.Lock()
        e = dict(os.environ) if env is None else env
        master = slave = None
        if pty:
            import fcntl
            import struct
            import termios
            master, slave = os.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
        self.proc = subprocess.Popen([BIN, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=slave if pty else subprocess.PIPE, env=e)
        self.pid = self.proc.pid
        self._threads = [threading.Thread(target=self._pump, args=(self.proc.stdout.fileno(), self._out), daemon=True)]
        if pty:
            os.close(slave)
            self._threads.append(threading.Thread(target=self._pump, args=(master, self._err, True), daemon=True))
        else:
            self._threads.append(threading.Thread(target=self._pump, args=(self.proc.stderr.fileno(), self._err),
                                                  daemon=True))
        for t in self._threads:
            t.start()

    def _pump(self, fd, buf, close=False):
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the pty's last writer is gone
                    break
                if not chunk:
                    break
                with self._lock:
                    buf.extend(chunk)
        finally:
            if close:
                os.close(fd)

    @property
    def out(self):
        with self._lock:
            return self._out.decode("utf-8", "replace")

    @property
    def err(self):
        with self._lock:
            return self._err.decode("utf-8", "replace")

    def running(self):
        return self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=120):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        for t in self._threads:
            t.join(timeout=10)
        self.proc.stdout.close()
        if self.proc.stderr:
            self.proc.stderr.close()
        return rc

    def kill_on_cleanup(self, test):
        def stop():
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        test.addCleanup(stop)
        return self

    def __repr__(self):
        return f"rc={self.proc.returncode}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


def replace_in_section(path, section, old_line, new_lines):
    """Rewrites config PATH: in [SECTION], the line OLD_LINE is replaced by NEW_LINES (a list, may be empty)."""
    with open(path) as f:
        lines = f.read().split("\n")
    cur = None
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("[") and s.endswith("]"):
            cur = s.strip("[]")
        elif cur == section and s == old_line:
            lines[i:i + 1] = new_lines
            break
    else:
        raise AssertionError(f"{old_line!r} not found in [{section}] of {path}")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def summary_tables(out):
    """{table: (copied, verified, deleted)} from the summary table that a run prints on stdout."""
    rows = {}
    in_table = False
    for line in out.splitlines():
        if re.match(r"^\s+table\s+copied\s+verified\s+deleted\s*$", line):
            in_table = True
            continue
        if in_table:
            m = re.match(r"^\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", line)
            if not m:
                in_table = False
                continue
            rows[m.group(1)] = tuple(int(m.group(i)) for i in (2, 3, 4))
    return rows


def summary_head(out):
    """(mode, job, run id, reason, exit code) from the summary's first line."""
    m = re.search(r"^goarchive (\S+) job=(\S+) run=(\d+): (.*) in \S+ \(exit (\d+)\)$", out, re.M)
    if not m:
        raise AssertionError(f"no summary line in stdout:\n{out}")
    return m.group(1), m.group(2), int(m.group(3)), m.group(4), int(m.group(5))


def summary_batches(out):
    m = re.search(r"^\s+batches (\d+), roots (\d+) .*retries (\d+)$", out, re.M)
    if not m:
        raise AssertionError(f"no batches line in stdout:\n{out}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def registry_runs(sc):
    """[(id, status, exit_code, reason, summary dict or None)] of the scenario's registry."""
    rows = gatest.sql("destination", f"SELECT id, status, exit_code, reason, summary FROM "
                                     f"{gatest.quote_ident(sc.job_schema)}.runs ORDER BY id")
    return [(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None) for r in rows]


# -- the replica's SQL thread ------------------------------------------------------------------------------------
def replica_root(stmt):
    subprocess.run(["bash", SERVERS_SH, "sql", "replica", "-e", stmt], check=True, capture_output=True, timeout=60)


def stop_sql_thread(test):
    """Stops the replica's SQL thread; a cleanup (registered first) always starts it again."""
    test.addCleanup(start_sql_thread)
    replica_root("STOP SLAVE SQL_THREAD")
    wait_until(lambda: gatest.replica_status().get("Slave_SQL_Running") == "No", 20, what="SQL thread stopped")


def start_sql_thread():
    replica_root("START SLAVE SQL_THREAD")
    wait_until(lambda: gatest.replica_status().get("Slave_SQL_Running") == "Yes", 30, what="SQL thread running")


def replication_block(port=None, user="monitor", password="monitor-pw", max_lag=10, check_interval=0.5,
                      max_hold=None):
    port = port or gatest.env("GA_REPLICA_PORT")
    lines = ["", "[replication]", "enabled = true", f"max_lag_seconds = {max_lag}",
             f"check_interval = {check_interval}"]
    if max_hold is not None:
        lines.append(f"max_hold = {max_hold}")
    lines += ["", "[[replication.servers]]", f'host = "{os.environ.get("GA_HOST", "127.0.0.1")}"', f"port = {port}",
              f'user = "{user}"', f'password = "{password}"', ""]
    return "\n".join(lines)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
