"""Helpers for the locking and guard tests (test_locks.py, test_guard.py): seed 001, "Concurrency and Locking".

LockScenario is a Scenario whose config() can point the source at another server or database and the destination
at another database or job_schema (two destinations, the replica as a source), a run held "in the middle" with a
sentinel file, and the chapter's three SQL statements that find a lock holder.
"""

import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid

import gatest
from scenario import BIN, Result, Scenario, toml_value

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")

# The chapter's statements, word for word, with the two names as parameters (pymysql inlines them as literals).
SQL_JOB_LOCK = ("SELECT IS_USED_LOCK(CONCAT('goarchive:j:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER(%s)), "
                "256), 32)))")
SQL_TABLE_LOCK = ("SELECT IS_USED_LOCK(CONCAT('goarchive:t:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER(%s)), "
                  "256), 32)))")
SQL_SCHEMA_LOCK = ("SELECT IS_USED_LOCK(CONCAT('goarchive:s:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER('')), "
                   "256), 32)))")
NAME_EXPR = "CONCAT(%s, LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER(%s)), 256), 32))"

# A two-table tree: p (root) -> c (c.pid references p.id), 100 roots, 50 of them matched by the job.
TREE_JOB = {"root_table": "p", "where": "id <= 50", "relations": [{"table": "c", "foreign_key": "pid"}]}
TREE_TABLES = ["p", "c"]
TREE_RELATIONS = [("c", ["pid"], "p", ["id"])]


def toml_key(name):
    return name if _BARE_KEY.match(name) else toml_value(name)


def job_lock_holder(job_schema, job):
    return gatest.sql("destination", SQL_JOB_LOCK, (job_schema, job))[0][0]


def table_lock_holder(database, table, server="source"):
    return gatest.sql(server, SQL_TABLE_LOCK, (database, table))[0][0]


def schema_lock_holder(job_schema):
    return gatest.sql("destination", SQL_SCHEMA_LOCK, (job_schema,))[0][0]


def server_lock_name(server, prefix, a, b):
    """The lock name as SERVER computes it over a utf8mb4 connection."""
    return gatest.sql(server, "SELECT " + NAME_EXPR, (prefix, a, b))[0][0]


def kill(server, connection_id):
    gatest.sql(server, f"KILL {int(connection_id)}")


def wait_until(predicate, timeout=20.0, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Background:
    """A goarchive process in the background whose stdout and stderr are collected as they come."""

    def __init__(self, args, env):
        self.args = args
        self.proc = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env, start_new_session=True)
        self.pid = self.proc.pid
        self._out, self._err = [], []
        self._threads = [threading.Thread(target=self._pump, args=(self.proc.stdout, self._out), daemon=True),
                         threading.Thread(target=self._pump, args=(self.proc.stderr, self._err), daemon=True)]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream, sink):
        for line in stream:
            sink.append(line)

    @property
    def err(self):
        return "".join(self._err)

    @property
    def out(self):
        return "".join(self._out)

    def wait_for(self, text, timeout=20.0):
        """Waits until TEXT appears in stderr; fails when the process ends first."""
        deadline = time.monotonic() + timeout
        while text not in self.err:
            if self.proc.poll() is not None:
                for t in self._threads:
                    t.join(2)
                if text in self.err:
                    return
                raise AssertionError(f"goarchive ended (rc={self.proc.returncode}) before logging {text!r}:\n"
                                     f"{self.err}")
            if time.monotonic() > deadline:
                raise AssertionError(f"goarchive did not log {text!r} within {timeout}s:\n{self.err}")
            time.sleep(0.05)

    def alive(self):
        return self.proc.poll() is None

    def finish(self, timeout=60):
        """Waits for the process to end; returns a Result (rc, out, err)."""
        self.proc.wait(timeout)
        self._close()

        class _P:
            pass

        p = _P()
        p.returncode, p.stdout, p.stderr = self.proc.returncode, self.out, self.err
        return Result(p)

    def _close(self):
        for t in self._threads:
            t.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass

    def signal(self, sig):
        if self.alive():
            os.kill(self.pid, sig)

    def kill(self):
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self._close()


class LockScenario(Scenario):
    """A Scenario with a configurable source/destination, extra databases and background runs that are always
    reaped (SIGKILL) when the test ends."""

    def __init__(self, test, tag):
        super().__init__(test, tag)
        self._extra = []  # (server, database) to drop
        self._bg = []
        self.sentinel = os.path.join(self.tmp, "sentinel")
        test.addCleanup(self._reap)

    # -- setup -------------------------------------------------------------------------------------------------
    def tree(self, roots=100, dst_dbs=()):
        """The p -> c tree on the source (ROOTS roots, one child each) and empty on the destination database(s)."""
        ddl = ["CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
               "CREATE TABLE c (id INT PRIMARY KEY, pid INT NOT NULL, w VARCHAR(20), KEY (pid)) ENGINE=InnoDB"]
        for stmt in ddl:
            self.both(stmt)
            for db in dst_dbs:
                gatest.sql("destination", stmt, db=db)
        self.src(f"INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_{roots}")
        self.src(f"INSERT INTO c SELECT seq, seq, CONCAT('c', seq) FROM seq_1_to_{roots}")

    def extra_db(self, server, name):
        """Creates database NAME on SERVER, dropped when the test ends."""
        gatest.sql(server, f"CREATE DATABASE {gatest.quote_ident(name)}")
        self._extra.append((server, name))
        return name

    def extra_schema(self, name):
        """A job_schema NAME on the destination that the test may create; dropped when the test ends."""
        self._extra.append(("destination", name))
        return name

    def cleanup(self):
        super().cleanup()
        for server, db in self._extra:
            try:
                gatest.sql(server, f"DROP DATABASE IF EXISTS {gatest.quote_ident(db)}")
            except Exception:
                pass

    # -- config ------------------------------------------------------------------------------------------------
    def config(self, jobs, processing=None, verification="sha256", destination=None, source=None, extra=""):
        """As Scenario.config, but SOURCE and DESTINATION override the base keys (port, database, job_schema...)
        and job names that are not bare TOML keys are quoted."""
        host = os.environ.get("GA_HOST", "127.0.0.1")
        base_src = {"host": host, "port": int(gatest.env("GA_SOURCE_PORT")), "user": gatest.env("GA_USER"),
                    "password_env": "GA_PASSWORD", "database": self.src_db}
        base_dst = {"host": host, "port": int(gatest.env("GA_DEST_PORT")), "user": gatest.env("GA_USER"),
                    "password_env": "GA_PASSWORD", "database": self.dst_db, "job_schema": self.job_schema}
        base_src.update(source or {})
        base_dst.update(destination or {})
        lines = ["[source]"] + [f"{k} = {toml_value(v)}" for k, v in base_src.items()]
        lines += ["", "[destination]"] + [f"{k} = {toml_value(v)}" for k, v in base_dst.items()]
        lines += ["", "[processing]"] + [f"{k} = {toml_value(v)}" for k, v in (processing or {}).items()]
        lines += ["", "[verification]", f'method = "{verification}"', ""]
        for name, job in jobs.items():
            key = toml_key(name)
            lines.append(f"[jobs.{key}]")
            lines += [f"{k} = {toml_value(v)}" for k, v in job.items() if k != "relations"]
            for rel in job.get("relations", []):
                lines += ["", f"[[jobs.{key}.relations]]"] + [f"{k} = {toml_value(v)}" for k, v in rel.items()]
            lines.append("")
        path = os.path.join(self.tmp, f"{uuid.uuid4().hex[:8]}.toml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n" + extra)
        return path

    def paused_config(self, jobs, **kw):
        """A config whose runs pause at every batch boundary while self.sentinel exists."""
        processing = dict(kw.pop("processing", None) or {"batch_size": 10})
        processing["sentinel_file"] = self.sentinel
        return self.config(jobs, processing=processing, **kw)

    # -- runs --------------------------------------------------------------------------------------------------
    def go(self, command, cfg, job, *args, env=None, timeout=120):
        """`goarchive COMMAND -c CFG -j JOB --no-progress ARGS...` to the end."""
        return self.run(command, "-c", cfg, "-j", job, "--no-progress", *args, env=env, timeout=timeout)

    def background(self, command, cfg, job, *args, env=None):
        e = dict(os.environ)
        e.update(env or {})
        bg = Background([command, "-c", cfg, "-j", job, "--no-progress", *args], e)
        self._bg.append(bg)
        return bg

    def hold(self, command, cfg, job, *args, env=None):
        """Starts a run that pauses at its first batch boundary (sentinel file), after taking its locks and
        marking its job running; returns once it logged the pause."""
        open(self.sentinel, "w").close()
        bg = self.background(command, cfg, job, *args, env=env)
        bg.wait_for("paused: sentinel file")
        return bg

    def release(self, bg, timeout=60):
        """Removes the sentinel file and waits for BG to end; returns its Result."""
        if os.path.exists(self.sentinel):
            os.unlink(self.sentinel)
        return bg.finish(timeout)

    def _reap(self):
        for bg in self._bg:
            bg.kill()  # SIGKILL also ends a stopped (SIGSTOP) process

    # -- registry ----------------------------------------------------------------------------------------------
    def reg(self, stmt, args=None, job_schema=None):
        return gatest.sql("destination", stmt, args, db=job_schema or self.job_schema)

    def job_row(self, name, job_schema=None):
        """Job NAME as `goarchive jobs --format json` shows it ({"status", "live", "unfinished_roots", ...}) plus
        "runs" (its number of recorded runs); None when the registry has no row for it."""
        js = job_schema or self.job_schema
        cfg = self.config({"x": {"root_table": "x", "where": "1=0"}}, destination={"job_schema": js})
        r = self.run("jobs", "-c", cfg, "--format", "json")
        self.test.assertEqual(r.rc, 0, r)
        jobs = {j["job"]: j for j in json.loads(r.out)["jobs"]}
        if name not in jobs:
            return None
        row = dict(jobs[name])
        row["runs"] = int(self.reg("SELECT COUNT(*) FROM runs r JOIN jobs j ON j.id = r.job_id WHERE j.name = %s",
                                   (name,), job_schema=js)[0][0])
        return row

    def log_rows(self, job_schema=None):
        """A fingerprint of the registry's work log: (count, checksum) of every registry table except jobs and runs
        (whose heartbeat and end-of-run columns change without any work) and job_tables and job_gtid_states (a run
        records its job, its source's GTID history and its tables before the guard looks, even when the guard then
        refuses it), to show no work was committed."""
        js = job_schema or self.job_schema
        tables = [t[0] for t in gatest.sql("destination", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE "
                                                          "TABLE_SCHEMA = %s ORDER BY 1", (js,))]
        return {t: gatest.checksum_table("destination", js, t) for t in tables if t not in ("jobs", "runs", "job_tables", "job_gtid_states")}

    def age_heartbeat(self, name, seconds=120, job_schema=None):
        """Moves job NAME's heartbeat SECONDS into the past (as if its process had been gone that long)."""
        self.reg("UPDATE jobs SET heartbeat_at = NOW(6) - INTERVAL %s SECOND WHERE name = %s", (seconds, name),
                 job_schema=job_schema)
        self.reg("UPDATE runs r JOIN jobs j ON j.id = r.job_id SET r.heartbeat_at = NOW(6) - INTERVAL %s SECOND "
                 "WHERE j.name = %s AND r.status = 'running'", (seconds, name), job_schema=job_schema)

    def checksums(self, tables, dst_db=None):
        """(count, sha256) of TABLES on the source and destination databases."""
        out = {}
        for t in tables:
            out[("source", t)] = gatest.checksum_table("source", self.src_db, t)
            out[("destination", t)] = gatest.checksum_table("destination", dst_db or self.dst_db, t)
        return out
