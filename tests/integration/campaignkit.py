"""What the fault campaign (tests/faults/faultkit.py) and the chaos test (tests/chaos/chaoskit.py) share: servers of
their own, a private copy of the binary, goarchive under SIGKILL, rows by key, orphan rows and the closing table.

Both stop and restart servers, so neither may touch the shared test servers: each names its own directory and ports
(PREFIX_SERVERS_DIR, PREFIX_SOURCE_PORT, PREFIX_REPLICA_PORT, PREFIX_DEST_PORT) and points the harness (gatest reads
GA_SOURCE_PORT/GA_DEST_PORT from os.environ at every call) at them.
"""

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import gatest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SERVERS_SH = os.path.join(ROOT, "scripts", "servers.sh")


# -- servers and binary ---------------------------------------------------------------------------------------------
class OwnServers:
    """The servers of one suite: scripts/servers.sh with PREFIX_* variables (or the defaults: DIR and ports
    BASE_PORT, +1, +2), refused on any of FORBIDDEN ports with REFUSAL."""

    def __init__(self, prefix, default_dir, base_port, forbidden, refusal):
        self.env = {
            "GOARCHIVE_TEST_DIR": os.environ.get(f"{prefix}_SERVERS_DIR", default_dir),
            "GA_SOURCE_PORT": os.environ.get(f"{prefix}_SOURCE_PORT", str(base_port)),
            "GA_REPLICA_PORT": os.environ.get(f"{prefix}_REPLICA_PORT", str(base_port + 1)),
            "GA_DEST_PORT": os.environ.get(f"{prefix}_DEST_PORT", str(base_port + 2)),
        }
        self.forbidden = set(forbidden)
        self.refusal = refusal

    def use(self):
        """Points this process (the harness and every goarchive it starts) at these servers."""
        ports = {self.env["GA_SOURCE_PORT"], self.env["GA_REPLICA_PORT"], self.env["GA_DEST_PORT"]}
        if self.forbidden & ports:
            raise RuntimeError(self.refusal)
        os.environ.update(self.env)
        os.environ["GA_HOST"] = "127.0.0.1"
        os.environ["GA_USER"] = "goarchive"
        os.environ["GA_PASSWORD"] = "goarchive-test-pw"  # scripts/servers.sh's test account
        for var in ("GA_SOURCE_SOCKET", "GA_DEST_SOCKET", "GA_REPLICA_SOCKET", "GOARCHIVE_FAULT", "GOARCHIVE_PAUSE"):
            os.environ.pop(var, None)

    def start(self, path):
        """Points this process at these servers, pins the binary at PATH (returned) and starts the source and the
        destination."""
        self.use()
        dest = self.pin_binary(path)
        self.servers("start", "source", "destination")
        return dest

    def servers(self, command, *names, timeout=180):
        """scripts/servers.sh COMMAND NAMES... on these servers; raises on failure."""
        env = dict(os.environ)
        env.update(self.env)
        for attempt in range(3):
            r = subprocess.run(["bash", SERVERS_SH, command, *names], env=env, capture_output=True, text=True,
                               timeout=timeout)
            if r.returncode == 0 or command != "start":
                break
            # servers.sh's wait_ready can check /proc/<pid>/cmdline before the background child has exec'd mariadbd
            # and report "did not come up" for a server that does come up (seen under load): a second `start`
            # finds it running and only (re)creates the accounts.
            print(f"servers.sh start {' '.join(names)} failed (attempt {attempt + 1}), retrying:\n{r.stderr}",
                  file=sys.stderr, flush=True)
            time.sleep(2)
        if r.returncode != 0:
            raise RuntimeError(f"servers.sh {command} {' '.join(names)} failed (rc={r.returncode}):\n"
                               f"{r.stdout}{r.stderr}")
        return r

    def pin_binary(self, path):
        """A private copy of the goarchive binary at PATH, removed at exit: another engineer may rebuild
        build/goarchive while the suite runs."""
        dest_dir = os.path.join(self.env["GOARCHIVE_TEST_DIR"], "bin")
        os.makedirs(dest_dir, exist_ok=True)
        dest = os.path.join(dest_dir, f"goarchive.{os.getpid()}")
        deadline = time.monotonic() + 120
        while True:  # a link in progress leaves the file unreadable or truncated for a moment
            try:
                shutil.copy2(path, dest)
                r = subprocess.run([dest, "version"], capture_output=True, text=True, timeout=30)
                if r.returncode == 0:
                    break
            except (OSError, subprocess.SubprocessError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no working goarchive binary at {path}")
            time.sleep(1)
        atexit.register(lambda: os.path.exists(dest) and os.unlink(dest))
        return dest


def require_fault_hooks(bin_path, points):
    """Raises unless the binary at BIN_PATH has the fault hooks and knows every one of POINTS: a binary built
    without them refuses GOARCHIVE_FAULT with "this build has no fault hooks" (and an old one ignored it, exit 0),
    and a suite that kills at fault points would otherwise count runs nothing killed as clean ones. Returns the
    binary's known points."""
    probe = "no_such_fault_point"
    r = subprocess.run([bin_path, "version"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, GOARCHIVE_FAULT=probe))
    marker = "the known points: "
    if r.returncode != 2 or f'unknown fault point "{probe}"' not in r.stderr or marker not in r.stderr:
        raise RuntimeError(f"{bin_path} has no usable fault hooks (GOARCHIVE_FAULT={probe} gave rc={r.returncode}, "
                           f"expected 2 and the known points):\n{r.stderr.strip()}\nBuild it with "
                           "-DCMAKE_BUILD_TYPE=Debug (or -DGOARCHIVE_FAULT_HOOKS=ON).")
    known = {p.strip() for p in r.stderr.split(marker, 1)[1].splitlines()[0].split(",")}
    missing = sorted(set(points) - known)
    if missing:
        raise RuntimeError(f"{bin_path} does not know the fault points {', '.join(missing)} this suite kills at "
                           f"(it knows: {', '.join(sorted(known))})")
    return known


# -- goarchive ------------------------------------------------------------------------------------------------------
def run(bin_path, args, env=None, kill_after=None, timeout=180):
    """BIN_PATH ARGS to its end (or SIGKILLed KILL_AFTER seconds after its start); returns (rc, out, err)."""
    e = dict(os.environ)
    e.update(env or {})
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([bin_path, *args], stdout=out, stderr=err, env=e, text=True)
        try:
            if kill_after is not None:
                try:
                    p.wait(kill_after)
                except subprocess.TimeoutExpired:
                    p.send_signal(signal.SIGKILL)
            p.wait(timeout)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read()


def tail(text, n=25):
    """The last N lines of TEXT."""
    return "\n".join(text.splitlines()[-n:])


# -- rows -----------------------------------------------------------------------------------------------------------
def rows_by_key(server, db, table, cols, key_cols):
    """{key tuple: row tuple} of DB.TABLE on SERVER: COLS in that order, keyed by the values of KEY_COLS."""
    q = gatest.quote_ident
    idx = [cols.index(c) for c in key_cols]
    rows = gatest.sql(server, f"SELECT {', '.join(q(c) for c in cols)} FROM {q(db)}.{q(table)}")
    return {tuple(r[i] for i in idx): tuple(r) for r in rows}


def orphans(server, db, child, fk, parent, refs, cols):
    """COLS of the rows of DB.CHILD on SERVER whose foreign key FK (all of it set) names no row of PARENT (by REFS)."""
    q = gatest.quote_ident
    on = " AND ".join(f"p.{q(r)} = c.{q(f)}" for f, r in zip(fk, refs))
    notnull = " AND ".join(f"c.{q(f)} IS NOT NULL" for f in fk)
    return gatest.sql(server, f"SELECT {', '.join('c.' + q(c) for c in cols)} FROM {q(db)}.{q(child)} c "
                              f"WHERE {notnull} AND NOT EXISTS (SELECT 1 FROM {q(db)}.{q(parent)} p WHERE {on})")


def closing_table(title, rows):
    """TITLE over ROWS ((label, value) pairs), labels left-aligned, values right-aligned."""
    w = max(len(k) for k, _ in rows)
    out = [title, "-" * (w + 14)]
    out += [f"{k:<{w}}  {v:>10}" for k, v in rows]
    return out
