#!/usr/bin/python3
"""Seed 001, "Concurrency and Locking": the named locks, their names, the heartbeat and the lock sessions.

Each test is named after the sentence of the chapter it proves. A run is held "in the middle" with a sentinel file:
it has taken its locks and marked its job running, and pauses at a batch boundary until the file is removed.
The unfinished-work guard is in test_guard.py.
"""

import hashlib
import os
import re
import signal
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
import pymysql  # noqa: E402
from lockkit import (SQL_JOB_LOCK, SQL_SCHEMA_LOCK, SQL_TABLE_LOCK, TREE_JOB, TREE_RELATIONS, TREE_TABLES,  # noqa: E402
                     LockScenario, job_lock_holder, kill, schema_lock_holder, server_lock_name, table_lock_holder,
                     wait_until)

LOCKS_LINE = re.compile(r"^(goarchive:[sjt]:[0-9a-f]{32})\s+(destination|source)\s+(.*?)\s+"
                        r"(held by connection (\d+)|free)\s*$")


def table_refusal(db, table, holder):
    return (f"the source table {db}.{table} is in use by another GoArchive run (source connection\n{holder}). "
            f"Jobs whose tables overlap run one at a time; this run did nothing.")


def parse_locks(out):
    """`goarchive locks` output -> [(name, server, stands for, holder id or None)]."""
    rows = []
    for line in out.splitlines():
        m = LOCKS_LINE.match(line)
        if m:
            rows.append((m.group(1), m.group(2), m.group(3).strip(), int(m.group(5)) if m.group(5) else None))
    return rows


def client_name(prefix, a, b):
    return prefix + hashlib.sha256((a.lower() + "\0" + b.lower()).encode("utf-8")).hexdigest()[:32]


# -- Locks without locking your tables; Finding a lock holder ---------------------------------------------------
class LockNamesTest(unittest.TestCase):
    def test_chapter_sql_statements_return_the_holding_connection_of_each_lock(self):
        """The three SQL statements of "Finding a lock holder", run by hand on the right server, return the run's
        lock sessions; the run holds two sets (job lock on the destination, every table of its tree on the source)
        for its whole length, each on its own dedicated session; the schema lock is free again; NULL when free."""
        sc = LockScenario(self, "names")
        sc.tree()
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a")
        job_holder = job_lock_holder(sc.job_schema, "a")
        p_holder = table_lock_holder(sc.src_db, "p")
        c_holder = table_lock_holder(sc.src_db, "c")
        self.assertIsNotNone(job_holder, "job lock not held while the run is paused")
        self.assertIsNotNone(p_holder, "root table lock not held")
        self.assertEqual(p_holder, c_holder, "every table of the tree is locked by the same source lock session")
        # The run recorded its lock sessions: they are the holders the SQL found.
        src_conn, dst_conn = sc.reg("SELECT source_connection, destination_connection FROM runs "
                                    "WHERE status = 'running'")[0]
        self.assertEqual((src_conn, dst_conn), (p_holder, job_holder))
        # The holders are live sessions of the run (dedicated lock sessions: see the -vvv test below).
        for server, cid in (("source", p_holder), ("destination", job_holder)):
            row = gatest.sql(server, "SELECT COMMAND FROM information_schema.PROCESSLIST WHERE ID = %s", (cid,))
            self.assertEqual(len(row), 1, f"lock session {cid} not in the {server}'s processlist")
        # The schema lock is held only while a new tracking schema is created: free now.
        self.assertIsNone(schema_lock_holder(sc.job_schema))
        # The chapter's SQL answers NULL for a lock nobody holds.
        self.assertIsNone(table_lock_holder(sc.src_db, "no_such_table"))
        self.assertIsNone(job_lock_holder(sc.job_schema, "no_such_job"))
        r = sc.release(bg)
        self.assertEqual(r.rc, 0, r)
        # For its whole length only: all free after the run.
        self.assertIsNone(job_lock_holder(sc.job_schema, "a"))
        self.assertIsNone(table_lock_holder(sc.src_db, "p"))
        self.assertIsNone(table_lock_holder(sc.src_db, "c"))

    def test_locks_command_prints_each_lock_name_what_it_stands_for_and_its_holder(self):
        """`goarchive locks -j NAME`: every lock name of the job (schema, job, every table), what it stands for and
        its current holder's connection id."""
        sc = LockScenario(self, "lockscmd")
        sc.tree()
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a")
        r = sc.run("locks", "-c", cfg, "-j", "a")
        self.assertEqual(r.rc, 0, r)
        rows = parse_locks(r.out)
        self.assertEqual(len(rows), 4, r)
        by_name = {n: (server, what, holder) for n, server, what, holder in rows}
        expect = {
            server_lock_name("destination", "goarchive:s:", sc.job_schema, ""):
                ("destination", sc.job_schema, None),
            server_lock_name("destination", "goarchive:j:", sc.job_schema, "a"):
                ("destination", '"a"', job_lock_holder(sc.job_schema, "a")),
            server_lock_name("source", "goarchive:t:", sc.src_db, "p"):
                ("source", f"{sc.src_db}.p", table_lock_holder(sc.src_db, "p")),
            server_lock_name("source", "goarchive:t:", sc.src_db, "c"):
                ("source", f"{sc.src_db}.c", table_lock_holder(sc.src_db, "c")),
        }
        self.assertEqual(set(by_name), set(expect), r.out)
        for name, (server, what, holder) in expect.items():
            self.assertEqual(by_name[name][0], server, name)
            self.assertIn(what, by_name[name][1], name)
            self.assertEqual(by_name[name][2], holder, f"{name}: {r.out}")
        self.assertIsNotNone(by_name[next(n for n in expect if n.startswith("goarchive:j:"))][2])
        self.assertEqual(sc.release(bg).rc, 0)
        r = sc.run("locks", "-c", cfg, "-j", "a")
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(all(h is None for _, _, _, h in parse_locks(r.out)), r.out)

    def test_lock_names_fit_any_name_and_equal_server_sha2_for_non_ascii_names(self):
        """Every lock name is a prefix and a hash, so any table or job name fits; the server computes the same
        names (non-ASCII table and job_schema names, mixed-case job name)."""
        sc = LockScenario(self, "utf8")
        js = sc.extra_schema(sc.job_schema + "_Ödön")
        job_name = "Mixed_Case-Job.N" + "x" * 40
        sc.both("CREATE TABLE `Ärger` (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
        sc.both("CREATE TABLE `Übel_ß` (id INT PRIMARY KEY, `ärger_id` INT NOT NULL, KEY (`ärger_id`)) "
                "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
        sc.src("INSERT INTO `Ärger` SELECT seq, 'x' FROM seq_1_to_20")
        sc.src("INSERT INTO `Übel_ß` SELECT seq, seq FROM seq_1_to_20")
        job = {"root_table": "Ärger", "where": "id <= 10",
               "relations": [{"table": "Übel_ß", "foreign_key": "ärger_id"}]}
        cfg = sc.paused_config({job_name: job}, destination={"job_schema": js})
        bg = sc.hold("archive", cfg, job_name)
        r = sc.run("locks", "-c", cfg, "-j", job_name)
        self.assertEqual(r.rc, 0, r)
        names = {n: holder for n, _, _, holder in parse_locks(r.out)}
        cases = [("destination", "goarchive:s:", js, "", SQL_SCHEMA_LOCK, (js,)),
                 ("destination", "goarchive:j:", js, job_name, SQL_JOB_LOCK, (js, job_name)),
                 ("source", "goarchive:t:", sc.src_db, "Ärger", SQL_TABLE_LOCK, (sc.src_db, "Ärger")),
                 ("source", "goarchive:t:", sc.src_db, "Übel_ß", SQL_TABLE_LOCK, (sc.src_db, "Übel_ß"))]
        for server, prefix, a, b, stmt, args in cases:
            with self.subTest(lock=prefix + b):
                on_server = server_lock_name(server, prefix, a, b)
                self.assertRegex(on_server, r"^goarchive:[sjt]:[0-9a-f]{32}$")
                self.assertEqual(on_server, client_name(prefix, a, b), "server SHA2 vs SHA-256 of LOWER(a) 0 LOWER(b)")
                self.assertIn(on_server, names, f"`locks` does not print the server's name {on_server}:\n{r.out}")
                holder = gatest.sql(server, stmt, args)[0][0]
                self.assertEqual(names[on_server], holder)
                if prefix != "goarchive:s:":
                    self.assertIsNotNone(holder, f"the chapter's SQL finds no holder for {prefix}{a}/{b}")
        self.assertEqual(sc.release(bg).rc, 0)
        self.assertEqual(sc.count("destination", "Ärger"), 10)

    def test_each_lock_is_logged_at_debug_level_with_what_it_stands_for(self):
        """A run also logs each lock with the job or table it stands for, at debug level."""
        sc = LockScenario(self, "debuglog")
        sc.tree()
        cfg = sc.config({"a": TREE_JOB})
        r = sc.go("archive", cfg, "a", "-vv")
        self.assertEqual(r.rc, 0, r)
        for server, prefix, a, b, what in (
                ("destination", "goarchive:s:", sc.job_schema, "", sc.job_schema),
                ("destination", "goarchive:j:", sc.job_schema, "a", 'job "a"'),
                ("source", "goarchive:t:", sc.src_db, "p", f"{sc.src_db}.p"),
                ("source", "goarchive:t:", sc.src_db, "c", f"{sc.src_db}.c")):
            name = server_lock_name(server, prefix, a, b)
            lines = [ln for ln in r.err.splitlines() if name in ln]
            self.assertTrue(lines, f"lock {name} ({what}) not logged:\n{r.err}")
            self.assertIn("debug", lines[0])
            self.assertIn(what, lines[0])
        r = sc.go("archive", cfg, "a", "-v")
        self.assertNotIn("goarchive:t:", r.err, "lock lines must be debug level only")

    def test_lock_sets_on_dedicated_sessions_that_a_lost_host_frees_within_5_minutes(self):
        """Each lock set is on a dedicated session (-vvv: the source lock and destination lock sessions run lock
        statements only, never data or registry statements) whose idle timeout lets the server free the locks
        within 5 minutes of a lost host (wait_timeout <= 300 s, while the heartbeat keeps a live session busy)."""
        sc = LockScenario(self, "dedicated")
        sc.tree()
        r = sc.go("archive", sc.config({"a": TREE_JOB}, processing={"batch_size": 20}), "a", "-vvv")
        self.assertEqual(r.rc, 0, r)
        allowed = re.compile(r"^(/\* goarchive [^*]*\*/ )?(SELECT (GET_LOCK|IS_USED_LOCK|CONCAT\('goarchive:|"
                             r"IFNULL\(IS_USED_LOCK|CONNECTION_ID\(\)|@@max_allowed_packet|@@version)|DO RELEASE_LOCK|"
                             r"DO RELEASE_ALL_LOCKS|SELECT RELEASE_|SET (SESSION|NAMES))")
        for label in ("source lock", "destination lock"):
            stmts = [ln.split(f"[{label}] ", 1)[1] for ln in r.err.splitlines() if f"[{label}] " in ln]
            self.assertTrue(any("GET_LOCK" in x for x in stmts), f"no statements logged for [{label}]")
            for stmt in stmts:
                self.assertRegex(stmt, allowed, f"[{label}] ran a statement that is not about its locks")
            timeouts = [int(m) for x in stmts for m in re.findall(r"wait_timeout\s*=\s*(\d+)", x)]
            self.assertTrue(timeouts, f"[{label}] does not set its idle timeout")
            self.assertLessEqual(max(timeouts), 300, f"[{label}] wait_timeout")

    def test_locks_need_no_privilege(self):
        """Locks need no privilege: a run whose user has only table privileges takes and reports them, and a user
        with no privilege at all finds the holders with the chapter's SQL. The run uses three source and four
        destination connections (A run needs at least three source connections and four destination
        connections)."""
        sc = LockScenario(self, "nopriv")
        sc.tree()
        user = f"ga_np_{uuid.uuid4().hex[:8]}"
        pw = gatest.env("GA_PASSWORD")
        runner = f"ga_run_{uuid.uuid4().hex[:8]}"
        q = gatest.quote_ident
        for server in ("source", "destination"):
            gatest.sql(server, f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (pw,))
            gatest.sql(server, f"CREATE USER '{runner}'@'%%' IDENTIFIED BY %s", (pw,))
            self.addCleanup(gatest.sql, server, f"DROP USER IF EXISTS '{user}'@'%'")
            self.addCleanup(gatest.sql, server, f"DROP USER IF EXISTS '{runner}'@'%'")
        gatest.sql("source", f"GRANT SELECT, DELETE ON {q(sc.src_db)}.* TO '{runner}'@'%'")
        gatest.sql("destination", f"GRANT SELECT, INSERT, UPDATE, DELETE ON {q(sc.dst_db)}.* TO '{runner}'@'%'")
        gatest.sql("destination", f"GRANT ALL ON {q(sc.job_schema)}.* TO '{runner}'@'%'")
        cfg = sc.paused_config({"a": TREE_JOB}, source={"user": runner}, destination={"user": runner})
        bg = sc.hold("archive", cfg, "a")
        for server, stmt, args in (("destination", SQL_JOB_LOCK, (sc.job_schema, "a")),
                                   ("source", SQL_TABLE_LOCK, (sc.src_db, "p")),
                                   ("source", SQL_TABLE_LOCK, (sc.src_db, "c"))):
            c = pymysql.connect(host=os.environ.get("GA_HOST", "127.0.0.1"),
                                port=int(gatest.env("GA_SOURCE_PORT" if server == "source" else "GA_DEST_PORT")),
                                user=user, password=pw, charset="utf8mb4", autocommit=True)
            try:
                with c.cursor() as cur:
                    cur.execute("SHOW GRANTS")
                    grants = " ".join(r[0] for r in cur.fetchall())
                    self.assertIn("USAGE", grants)
                    cur.execute(stmt, args)
                    holder = cur.fetchone()[0]
            finally:
                c.close()
            self.assertIsNotNone(holder, f"{server}: {stmt} {args}")
            self.assertEqual(holder, gatest.sql(server, stmt, args)[0][0])
        n_src = gatest.sql("source", "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                           (runner,))[0][0]
        n_dst = gatest.sql("destination", "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                           (runner,))[0][0]
        self.assertGreaterEqual(n_src, 2, "source: a data session and a dedicated lock session")
        self.assertGreaterEqual(n_dst, 3, "destination: data, job-lock and registry (heartbeat) sessions")
        r = sc.release(bg)
        self.assertEqual(r.rc, 0, r)


# -- 2. The job lock --------------------------------------------------------------------------------------------
class JobLockTest(unittest.TestCase):
    def test_second_run_of_same_job_refused_exit4(self):
        """A second run of the same job is refused: job "<name>" is already running: its advisory lock is held by
        another session (destination connection <id>). A refused run exits 4 and does nothing, so a scheduler can
        simply try again later."""
        sc = LockScenario(self, "joblock")
        sc.tree()
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a")
        holder = job_lock_holder(sc.job_schema, "a")
        before, log_before = sc.checksums(TREE_TABLES), sc.log_rows()
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 4, r)
        self.assertIn(f'job "a" is already running: its advisory lock is held by another session '
                      f'(destination connection {holder})', r.err)
        self.assertEqual(sc.checksums(TREE_TABLES), before)
        self.assertEqual(sc.log_rows(), log_before)
        self.assertEqual(sc.job_row("a")["runs"], 1, "the refused run must not record a run")
        # Whatever the command: copy-only and purge of the same job are refused by the same lock.
        for cmd in ("copy-only", "purge"):
            r = sc.go(cmd, cfg, "a")
            self.assertEqual(r.rc, 4, f"{cmd}: {r}")
            self.assertIn(f'job "a" is already running', r.err)
        self.assertEqual(sc.release(bg).rc, 0)
        r = sc.go("archive", cfg, "a")  # try again later: goes through
        self.assertEqual(r.rc, 0, r)


# -- 3. The table locks ------------------------------------------------------------------------------------------
class TableLockTest(unittest.TestCase):
    def refused(self, sc, cmd, cfg, job, table, holder, tables=TREE_TABLES, job_schema=None, dst_db=None):
        """Runs CMD of JOB, expects the table-lock refusal naming TABLE and HOLDER, and that it did nothing."""
        before = sc.checksums(tables, dst_db=dst_db)
        log_before = sc.log_rows(job_schema)
        r = sc.go(cmd, cfg, job)
        self.assertEqual(r.rc, 4, r)
        self.assertIn(table_refusal(sc.src_db, table, holder), r.err)
        self.assertEqual(sc.checksums(tables, dst_db=dst_db), before, "the refused run changed data")
        log_after = sc.log_rows(job_schema)
        if log_before:
            self.assertEqual(log_after, log_before, "the refused run wrote the work log")
        else:  # a new tracking schema is created before the job and table locks are taken (the schema lock)
            self.assertEqual({t: n for t, (n, _) in log_after.items() if t != "schema_version" and n}, {},
                             "the refused run wrote the work log")
        row = sc.job_row(job, job_schema)
        self.assertTrue(row is None or row["runs"] == 0, f"the refused run left a run in the registry: {row}")
        return r

    def test_job_sharing_a_table_with_running_job_refused_exit4_two_line_message(self):
        """A run whose tree shares a table with a running job is refused before it does anything (whatever its job
        name and root table), with the chapter's two-line message and exit 4; it goes through once the other run
        is over."""
        sc = LockScenario(self, "tbl")
        sc.tree()
        only_c = {"root_table": "c", "where": "id > 90"}
        cfg = sc.paused_config({"a": TREE_JOB, "b": only_c})
        bg = sc.hold("archive", cfg, "a")
        holder = table_lock_holder(sc.src_db, "c")
        self.refused(sc, "archive", cfg, "b", "c", holder)
        self.assertEqual(sc.release(bg).rc, 0)
        r = sc.go("archive", cfg, "b")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "c"), 60)

    def test_every_job_type_refused_by_table_lock(self):
        """This holds for every job type: archive, copy-only and purge, as the running job and as the refused
        one."""
        sc = LockScenario(self, "types")
        sc.tree()
        tail = dict(TREE_JOB, where="id > 90")
        jobs = {"a": TREE_JOB, "b": tail}
        cfg = sc.paused_config(jobs)
        for running, refused in (("archive", "copy-only"), ("archive", "purge"), ("copy-only", "archive"),
                                 ("copy-only", "purge"), ("purge", "archive"), ("purge", "copy-only")):
            with self.subTest(running=running, refused=refused):
                bg = sc.hold(running, cfg, "a")
                holder = table_lock_holder(sc.src_db, "p")
                self.assertIsNotNone(holder)
                first = min(("p", "c"), key=lambda t: server_lock_name("source", "goarchive:t:", sc.src_db, t))
                self.refused(sc, refused, cfg, "b", first, holder)
                # Stop the holder without letting it work: SIGTERM at the boundary.
                bg.signal(signal.SIGTERM)
                r = bg.finish(30)
                self.assertEqual(r.rc, 143, r)

    def test_two_copy_only_jobs_reading_same_tables_run_one_after_the_other(self):
        """Two copy-only jobs reading the same tables run one after the other."""
        sc = LockScenario(self, "copies")
        sc.tree()
        dst2 = sc.extra_db("destination", sc.dst_db + "_2")
        for stmt in ("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE c (id INT PRIMARY KEY, pid INT NOT NULL, w VARCHAR(20), KEY (pid)) ENGINE=InnoDB"):
            gatest.sql("destination", stmt, db=dst2)
        cfg1 = sc.paused_config({"copy1": TREE_JOB})
        cfg2 = sc.paused_config({"copy2": TREE_JOB}, destination={"database": dst2})
        bg = sc.hold("copy-only", cfg1, "copy1")
        holder = table_lock_holder(sc.src_db, "p")
        first = min(("p", "c"), key=lambda t: server_lock_name("source", "goarchive:t:", sc.src_db, t))
        self.refused(sc, "copy-only", cfg2, "copy2", first, holder, dst_db=dst2)
        self.assertEqual(sc.release(bg).rc, 0)
        r = sc.go("copy-only", cfg2, "copy2")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(gatest.sql("destination", "SELECT COUNT(*) FROM c", db=dst2)[0][0], 50)
        self.assertEqual(sc.count("destination", "c"), 50)
        self.assertEqual(sc.count("source", "c"), 100)

    def test_same_source_tables_two_destinations_run_one_after_the_other(self):
        """Across destinations: the same source tables archived to two destinations (other database, other
        job_schema, even the same job name) run one after the other."""
        sc = LockScenario(self, "twodst")
        sc.tree()
        dst2 = sc.extra_db("destination", sc.dst_db + "_2")
        js2 = sc.extra_schema(sc.job_schema + "_2")
        for stmt in ("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE c (id INT PRIMARY KEY, pid INT NOT NULL, w VARCHAR(20), KEY (pid)) ENGINE=InnoDB"):
            gatest.sql("destination", stmt, db=dst2)
        original = sc.snapshot(TREE_TABLES)
        cfg1 = sc.paused_config({"a": TREE_JOB})
        cfg2 = sc.paused_config({"a": dict(TREE_JOB, where="id <= 60")},
                                destination={"database": dst2, "job_schema": js2})
        bg = sc.hold("archive", cfg1, "a")
        holder = table_lock_holder(sc.src_db, "p")
        first = min(("p", "c"), key=lambda t: server_lock_name("source", "goarchive:t:", sc.src_db, t))
        self.refused(sc, "archive", cfg2, "a", first, holder, job_schema=js2, dst_db=dst2)
        self.assertEqual(sc.release(bg).rc, 0)
        r = sc.go("archive", cfg2, "a")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "p"), 50)
        self.assertEqual(gatest.sql("destination", "SELECT COUNT(*) FROM p", db=dst2)[0][0], 10)
        self.assertEqual(sc.count("source", "p"), 40)


class DisjointJobsTest(unittest.TestCase):
    def test_jobs_whose_trees_share_no_table_run_at_the_same_time(self):
        """Only runs that would touch the same source table are kept apart (DESIGN.md §9: jobs whose trees do not
        share a table run at the same time): two jobs on disjoint tables that start together in one registry both
        finish. Their start is lined up by a session that briefly holds the registry's job_tables rows, so both
        runs record their tables at the same moment."""
        sc = LockScenario(self, "disjoint")
        sc.tree()
        for t in ("q", "r"):
            sc.both(f"CREATE TABLE {t} (id INT PRIMARY KEY) ENGINE=InnoDB")
            sc.src(f"INSERT INTO {t} SELECT seq FROM seq_1_to_30")
        cfg = sc.config({"z": {"root_table": "r", "where": "id <= 5"}, "a": TREE_JOB,
                         "b": {"root_table": "q", "where": "id <= 10"}})
        self.assertEqual(sc.go("archive", cfg, "z").rc, 0)  # the registry exists, with one job in it
        blocker = gatest.connect("destination", sc.job_schema, autocommit=False)
        self.addCleanup(blocker.close)
        with blocker.cursor() as cur:
            cur.execute("SELECT * FROM job_tables FOR UPDATE")
        bga = sc.background("archive", cfg, "a")
        bgb = sc.background("archive", cfg, "b")
        try:
            wait_until(lambda: gatest.sql("destination", "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE "
                                                         "INFO LIKE %s AND ID <> CONNECTION_ID()",
                                          (f"%`{sc.job_schema}`.`job_tables`%",))[0][0]
                       >= 2 or not (bga.alive() and bgb.alive()), 10, what="both runs to reach the registry")
        finally:
            blocker.commit()
        ra, rb = bga.finish(60), bgb.finish(60)
        self.assertEqual(ra.rc, 0, ra)
        self.assertEqual(rb.rc, 0, rb)
        self.assertEqual(sc.count("destination", "p"), 50)
        self.assertEqual(sc.count("destination", "q"), 10)


# -- "GoArchive never runs LOCK TABLES ... the application's reads and writes are not blocked" -------------------
class NoTableLocksTest(unittest.TestCase):
    def test_application_reads_and_writes_not_blocked_while_run_holds_locks(self):
        """A name locks no table or row: while a run holds its locks, the application SELECTs (also FOR UPDATE),
        INSERTs, UPDATEs and DELETEs rows of the archived tables, with 1 s lock waits, without waiting."""
        sc = LockScenario(self, "nolock")
        sc.tree()
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a")
        conn = gatest.connect("source", sc.src_db)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION innodb_lock_wait_timeout = 1, lock_wait_timeout = 1")
                stmts = ["SELECT COUNT(*) FROM p WHERE id <= 50", "SELECT * FROM c WHERE pid = 3",
                         "BEGIN", "SELECT * FROM p WHERE id = 4 FOR UPDATE", "SELECT * FROM c WHERE pid = 4 FOR UPDATE",
                         "COMMIT",
                         "INSERT INTO p VALUES (1001, 'new')", "INSERT INTO c VALUES (1001, 1001, 'new')",
                         "UPDATE p SET v = 'app-upd' WHERE id = 2", "UPDATE c SET w = 'app-upd' WHERE id = 2",
                         "DELETE FROM c WHERE id = 5", "DELETE FROM p WHERE id = 5",
                         "DELETE FROM c WHERE id = 99", "DELETE FROM p WHERE id = 99"]
                for stmt in stmts:
                    t0 = time.monotonic()
                    cur.execute(stmt)
                    self.assertLess(time.monotonic() - t0, 0.9, f"{stmt} waited")
        finally:
            conn.close()
        self.assertTrue(bg.alive())
        r = sc.release(bg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(gatest.sql("destination", "SELECT v FROM p WHERE id = 2", db=sc.dst_db)[0][0], "app-upd")
        self.assertEqual(sc.count("destination", "p"), 49)

    def test_never_runs_lock_tables(self):
        """GoArchive never runs LOCK TABLES: no statement the servers received from a run has it. Read from the
        servers' own general log (the tool's log could leave a statement out), with the saved globals restored."""
        sc = LockScenario(self, "nolocktables")
        sc.tree()
        saved = {s: gatest.sql(s, "SELECT @@GLOBAL.general_log, @@GLOBAL.log_output")[0] for s in ("source",
                                                                                                "destination")}
        for server, (on, output) in saved.items():
            self.addCleanup(gatest.sql, server, f"SET GLOBAL general_log = {int(on)}, log_output = '{output}'")
            self.addCleanup(gatest.sql, server, "TRUNCATE TABLE mysql.general_log")
            gatest.sql(server, "SET GLOBAL log_output = 'TABLE', general_log = 1")
        cfg = sc.config({"a": TREE_JOB}, processing={"batch_size": 20})
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        r = sc.go("purge", sc.config({"a": dict(TREE_JOB, where="id > 90")}), "a")
        self.assertEqual(r.rc, 0, r)
        for server in saved:
            gatest.sql(server, "SET GLOBAL general_log = 0")
            # Every statement of every session of the runs (a session is the runs' when it sent a tagged one; the
            # lock sessions take their locks before the tag is set).
            sent = [a.decode() if isinstance(a, bytes) else a for (a,) in gatest.sql(
                server, "SELECT argument FROM mysql.general_log WHERE thread_id IN (SELECT thread_id FROM "
                        "mysql.general_log WHERE argument LIKE '%%goarchive job=a %%')")]
            # Not vacuous: the log holds the runs' statements, the named locks and the data writes among them.
            write = "DELETE FROM" if server == "source" else "INSERT INTO"
            self.assertTrue(any("GET_LOCK" in a for a in sent), f"{server}: the runs' named locks were not logged")
            self.assertTrue(any(write in a for a in sent), f"{server}: the runs' writes were not logged")
            self.assertEqual([a for a in sent if re.search(r"LOCK\s+TABLES?\b", a.upper())], [], server)


# -- 1. The schema lock -----------------------------------------------------------------------------------------
class SchemaLockTest(unittest.TestCase):
    def hold_schema_lock(self, job_schema):
        conn = gatest.connect("destination")
        self.addCleanup(conn.close)
        with conn.cursor() as cur:
            cur.execute("SELECT GET_LOCK(CONCAT('goarchive:s:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER('')), "
                        "256), 32)), 0), CONNECTION_ID()", (job_schema,))
            got, cid = cur.fetchone()
        self.assertEqual(got, 1)
        return conn, cid

    def waiting_for(self, job_schema):
        name = server_lock_name("destination", "goarchive:s:", job_schema, "")
        return gatest.sql("destination", "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE %s",
                          (f"%GET_LOCK('{name}'%",))

    def test_run_waits_for_schema_lock_finds_schema_ready_and_goes_on(self):
        """One run at a time creates the tables and the label; another run starting then waits for it, finds the
        schema ready and goes on."""
        sc = LockScenario(self, "schemawait")
        sc.tree()
        # A template registry, created by a run in another job_schema, to play "the other run" that creates ours.
        tmpl = sc.extra_schema(sc.job_schema + "_t")
        r = sc.go("copy-only", sc.config({"t": dict(TREE_JOB, where="id > 1000")}, destination={"job_schema": tmpl}), "t")
        self.assertEqual(r.rc, 0, r)
        # The template registry's run recorded itself as the archive database's owner: it was only a stand-in.
        gatest.sql("destination", f"DROP TABLE {gatest.quote_ident(sc.dst_db)}.goarchive_owner")
        conn, cid = self.hold_schema_lock(sc.job_schema)
        cfg = sc.config({"a": TREE_JOB})
        bg = sc.background("archive", cfg, "a", "-v", env={"GOARCHIVE_SCHEMA_LOCK_WAIT": "30"})
        wait_until(lambda: self.waiting_for(sc.job_schema), 10, what="the run waiting on the schema lock")
        time.sleep(1)
        self.assertTrue(bg.alive(), bg.err)
        self.assertEqual(gatest.sql("destination", "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE "
                                                   "SCHEMA_NAME = %s", (sc.job_schema,))[0][0], 0)
        # "The other run" creates the tables and the label while it holds the lock, then releases it.
        q = gatest.quote_ident
        gatest.sql("destination", f"CREATE DATABASE {q(sc.job_schema)} DEFAULT CHARACTER SET utf8mb4 "
                                  "COLLATE utf8mb4_bin")
        tables = [t[0] for t in gatest.sql("destination", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE "
                                                          "TABLE_SCHEMA = %s", (tmpl,))]
        for t in tables:
            ddl = gatest.sql("destination", f"SHOW CREATE TABLE {q(tmpl)}.{q(t)}")[0][1]
            gatest.sql("destination", ddl, db=sc.job_schema)
        gatest.sql("destination", f"INSERT INTO {q(sc.job_schema)}.schema_version SELECT * FROM {q(tmpl)}.schema_version")
        with conn.cursor() as cur:
            cur.execute("DO RELEASE_LOCK(CONCAT('goarchive:s:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER('')), "
                        "256), 32)))", (sc.job_schema,))
        r = bg.finish(60)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("applied", r.err, "the waiting run found the schema ready and must not create it again")
        self.assertEqual(sc.count("destination", "p"), 50)

    def test_run_waits_for_schema_lock_released_within_wait_and_finishes(self):
        """Another run starting then waits for it, up to 60 seconds (GOARCHIVE_SCHEMA_LOCK_WAIT=30 here): released
        within the wait, the run goes on and finishes."""
        sc = LockScenario(self, "schemarel")
        sc.tree()
        conn, cid = self.hold_schema_lock(sc.job_schema)
        cfg = sc.config({"a": TREE_JOB})
        bg = sc.background("archive", cfg, "a", "-v", env={"GOARCHIVE_SCHEMA_LOCK_WAIT": "30"})
        wait_until(lambda: self.waiting_for(sc.job_schema), 10, what="the run waiting on the schema lock")
        time.sleep(1.5)
        self.assertTrue(bg.alive(), bg.err)
        with conn.cursor() as cur:
            cur.execute("DO RELEASE_LOCK(CONCAT('goarchive:s:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER('')), "
                        "256), 32)))", (sc.job_schema,))
        r = bg.finish(60)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("applied 001", r.err)
        self.assertEqual(sc.count("destination", "p"), 50)

    def test_two_runs_on_new_tracking_schema_one_creates_it_the_other_goes_on(self):
        """One run at a time creates the tables and the label; another run starting then waits for it, finds the
        schema ready and goes on: two jobs on disjoint tables start together on a new tracking schema (both held
        at its schema lock, then let go at once): both finish, the schema is created once."""
        sc = LockScenario(self, "schematwo")
        sc.tree()
        sc.both("CREATE TABLE q (id INT PRIMARY KEY) ENGINE=InnoDB")
        sc.src("INSERT INTO q SELECT seq FROM seq_1_to_30")
        conn, cid = self.hold_schema_lock(sc.job_schema)
        cfg = sc.config({"a": TREE_JOB, "b": {"root_table": "q", "where": "id <= 10"}})
        env = {"GOARCHIVE_SCHEMA_LOCK_WAIT": "30"}
        bga = sc.background("archive", cfg, "a", "-v", env=env)
        bgb = sc.background("archive", cfg, "b", "-v", env=env)
        wait_until(lambda: len(self.waiting_for(sc.job_schema)) >= 2, 10, what="both runs waiting on the schema lock")
        with conn.cursor() as cur:
            cur.execute("DO RELEASE_LOCK(CONCAT('goarchive:s:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER('')), "
                        "256), 32)))", (sc.job_schema,))
        ra, rb = bga.finish(60), bgb.finish(60)
        self.assertEqual(ra.rc, 0, ra)
        self.assertEqual(rb.rc, 0, rb)
        self.assertEqual((ra.err + rb.err).count("applied 001"), 1, ra.err + rb.err)
        self.assertEqual(sc.count("destination", "p"), 50)
        self.assertEqual(sc.count("destination", "q"), 10)

    def test_schema_lock_still_held_after_wait_refused_exit4_naming_holder(self):
        """If the lock is still held after the wait (60 s; GOARCHIVE_SCHEMA_LOCK_WAIT=2 here), the run does not
        start (exit code 4) and names the connection holding it."""
        sc = LockScenario(self, "schematimeout")
        sc.tree()
        conn, cid = self.hold_schema_lock(sc.job_schema)
        cfg = sc.config({"a": TREE_JOB})
        before = sc.checksums(TREE_TABLES)
        t0 = time.monotonic()
        r = sc.go("archive", cfg, "a", env={"GOARCHIVE_SCHEMA_LOCK_WAIT": "2"})
        elapsed = time.monotonic() - t0
        self.assertEqual(r.rc, 4, r)
        self.assertIn(f"destination connection {cid}", r.err)
        self.assertGreaterEqual(elapsed, 1.9)
        self.assertLess(elapsed, 15)
        self.assertEqual(sc.checksums(TREE_TABLES), before)
        n = gatest.sql("destination", "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                       (sc.job_schema,))[0][0]
        self.assertEqual(n, 0, "the refused run must not create the tracking schema")

    def test_schema_lock_held_only_while_creating_new_tracking_schema(self):
        """The schema lock is held only while a run creates a new tracking schema: once the schema exists, a run
        neither waits for nor takes it."""
        sc = LockScenario(self, "schemaonly")
        sc.tree()
        cfg = sc.config({"a": dict(TREE_JOB, where="id <= 10"), "b": dict(TREE_JOB, where="id <= 20")})
        self.assertEqual(sc.go("archive", cfg, "a").rc, 0)
        conn, cid = self.hold_schema_lock(sc.job_schema)
        t0 = time.monotonic()
        r = sc.go("archive", cfg, "b", "-vv", env={"GOARCHIVE_SCHEMA_LOCK_WAIT": "20"})
        self.assertEqual(r.rc, 0, r)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertNotIn(server_lock_name("destination", "goarchive:s:", sc.job_schema, ""), r.err)
        self.assertEqual(schema_lock_holder(sc.job_schema), cid)


# -- Heartbeat and lock sessions ----------------------------------------------------------------------------------
class HeartbeatTest(unittest.TestCase):
    def crashed_then_held(self, sc, cfg, env=None):
        """Job a crashes after its first copy commit (10 copied roots), then its rerun pauses before recovery."""
        r = sc.go("archive", cfg, "a", env={"GOARCHIVE_FAULT": "after_copy_commit"})
        self.assertEqual(r.rc, -9, r)
        self.assertEqual(sc.unfinished(), 10)
        bg = sc.hold("archive", cfg, "a", env=env)
        self.assertIn("recovery start", bg.err)
        return bg

    def lock_loss(self, server):
        sc = LockScenario(self, f"lost_{server[:3]}")
        sc.tree()
        original = sc.snapshot(TREE_TABLES)
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = self.crashed_then_held(sc, cfg)
        before, log_before = sc.checksums(TREE_TABLES), sc.log_rows()
        holder = table_lock_holder(sc.src_db, "p") if server == "source" else job_lock_holder(sc.job_schema, "a")
        kill(server, holder)
        r = sc.release(bg)
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn(f"the run lost its named locks on the {server}", r.err)
        self.assertEqual(sc.checksums(TREE_TABLES), before, "committed data without its locks")
        self.assertEqual(sc.log_rows(), log_before, "committed a log write without its locks")
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)
        self.assertEqual(sc.count("destination", "p"), 50)
        sc.assert_invariant(original, TREE_RELATIONS)

    def test_killed_source_lock_session_stops_run_before_next_commit(self):
        """Before every transaction it commits, a run checks that its sessions still hold both lock sets; the
        source (table) lock set lost: the run stops, the transaction in flight rolls back, nothing is committed
        without the locks; the rerun finishes the work."""
        self.lock_loss("source")

    def test_killed_destination_job_lock_session_stops_run_before_next_commit(self):
        """As above, the destination (job) lock session killed."""
        self.lock_loss("destination")

    def lock_loss_before_delete_commit(self, server):
        sc = LockScenario(self, f"lostdel_{server[:3]}")
        sc.tree()
        original = sc.snapshot(TREE_TABLES)
        cfg = sc.config({"a": TREE_JOB}, processing={"batch_size": 10})
        r = sc.go("archive", cfg, "a", env={"GOARCHIVE_FAULT": "after_copy_commit"})
        self.assertEqual(r.rc, -9, r)
        # The rerun's recovery marks the copied batch deleting, then holds before its delete on the replication gate
        # (its monitor account does not exist yet, so the replica is "unreachable").
        gate_user = f"ga_gate_{uuid.uuid4().hex[:8]}"
        gate = (f"[replication]\nenabled = true\nmax_lag_seconds = 3600\ncheck_interval = 0.2\n\n"
                f"[[replication.servers]]\nhost = \"{os.environ.get('GA_HOST', '127.0.0.1')}\"\n"
                f"port = {gatest.env('GA_REPLICA_PORT')}\nuser = \"{gate_user}\"\npassword_env = \"GA_PASSWORD\"\n")
        gcfg = sc.config({"a": TREE_JOB}, processing={"batch_size": 10}, extra=gate)
        bg = sc.background("archive", gcfg, "a", "-v")
        bg.wait_for("held before delete", timeout=20)
        before, log_before = sc.checksums(TREE_TABLES), sc.log_rows()
        holder = table_lock_holder(sc.src_db, "p") if server == "source" else job_lock_holder(sc.job_schema, "a")
        kill(server, holder)
        # The monitor account appears (created on the source, replicated): the gate lets the delete go.
        self.addCleanup(gatest.sql, "source", f"DROP USER IF EXISTS '{gate_user}'@'%'")
        gatest.sql("source", f"CREATE USER '{gate_user}'@'%%' IDENTIFIED BY %s", (gatest.env("GA_PASSWORD"),))
        gatest.sql("source", f"GRANT SLAVE MONITOR ON *.* TO '{gate_user}'@'%'")
        r = bg.finish(60)
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn(f"the run lost its named locks on the {server}", r.err)
        self.assertEqual(sc.checksums(TREE_TABLES), before, "deleted from the source without the locks")
        self.assertEqual(sc.log_rows(), log_before, "committed a log write without its locks")
        self.assertEqual(sc.count("source", "p"), 100)
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(original, TREE_RELATIONS)

    def test_source_lock_lost_before_delete_commit_the_delete_rolls_back(self):
        """GoArchive never commits a delete without its locks: the source lock session is killed while a batch
        marked deleting waits before its delete (replication gate); the delete transaction rolls back, the rows stay
        in the source; the rerun finishes the work."""
        self.lock_loss_before_delete_commit("source")

    def test_destination_lock_lost_before_delete_commit_the_delete_rolls_back(self):
        """As above, the destination (job) lock session killed."""
        self.lock_loss_before_delete_commit("destination")

    def heartbeat_notices(self, server):
        sc = LockScenario(self, f"hb_{server[:3]}")
        sc.tree()
        original = sc.snapshot(TREE_TABLES)
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a", env={"GOARCHIVE_HEARTBEAT_SECONDS": "1"})
        hb1 = sc.reg("SELECT heartbeat_at FROM jobs WHERE name = 'a'")[0][0]
        time.sleep(2.2)
        hb2 = sc.reg("SELECT heartbeat_at FROM jobs WHERE name = 'a'")[0][0]
        self.assertGreater(hb2, hb1, "the heartbeat is not recorded while the run is paused")
        holder = table_lock_holder(sc.src_db, "p") if server == "source" else job_lock_holder(sc.job_schema, "a")
        kill(server, holder)
        bg.wait_for("heartbeat: a lock set is lost", timeout=6)
        # Noticed while paused, before any commit; the paused run then stops on its own (see the next test).
        r = sc.release(bg)
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("lost its named locks", r.err)
        self.assertEqual(sc.count("destination", "p"), 0)
        sc.assert_invariant(original, TREE_RELATIONS)
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)

    def test_heartbeat_notices_lost_source_lock_session(self):
        """Every 30 seconds (GOARCHIVE_HEARTBEAT_SECONDS=1 here) a run checks that its own sessions still hold
        both lock sets: a killed source lock session is noticed by the heartbeat, without any commit."""
        self.heartbeat_notices("source")

    def test_heartbeat_notices_lost_destination_lock_session(self):
        """As above, the destination lock session."""
        self.heartbeat_notices("destination")

    def test_run_stops_when_heartbeat_finds_a_lock_set_lost_even_while_paused(self):
        """If either is lost, the run stops: a run paused at its sentinel whose source lock session is killed stops
        on its own once the heartbeat notices (it does not keep its other locks and a live heartbeat until it is
        unpaused)."""
        sc = LockScenario(self, "hbstop")
        sc.tree()
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a", env={"GOARCHIVE_HEARTBEAT_SECONDS": "1"})
        kill("source", table_lock_holder(sc.src_db, "p"))
        bg.wait_for("heartbeat: a lock set is lost", timeout=6)
        try:
            wait_until(lambda: not bg.alive(), 5, what="the run to stop after losing its source locks")
        finally:
            alive = bg.alive()
            job_lock = job_lock_holder(sc.job_schema, "a")
            r = sc.release(bg)
        self.assertFalse(alive)
        self.assertNotEqual(r.rc, 0, r)
        self.assertIsNone(job_lock, "the stopped run must not keep its job lock")
        self.assertFalse(sc.job_row("a")["live"])

    def test_process_death_frees_locks_at_once(self):
        """If GoArchive's process dies, the server frees its locks at once: a new run starts immediately."""
        sc = LockScenario(self, "death")
        sc.tree()
        original = sc.snapshot(TREE_TABLES)
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a")
        self.assertIsNotNone(table_lock_holder(sc.src_db, "p"))
        bg.kill()
        t0 = time.monotonic()
        wait_until(lambda: table_lock_holder(sc.src_db, "p") is None and job_lock_holder(sc.job_schema, "a") is None,
                   5, 0.02, "the locks of the killed run to be free")
        self.assertLess(time.monotonic() - t0, 1.0)
        os.unlink(sc.sentinel)
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("marked crashed", r.err)
        sc.assert_invariant(original, TREE_RELATIONS)

    def test_lost_host_run_started_before_locks_freed_refused_at_once_then_next_goes_through(self):
        """If its host or network is lost, the server frees the locks later (within 5 minutes): a run started before
        then is refused at once, and the next start after that goes through. A frozen process (SIGSTOP) plays the
        lost host; KILLing its lock sessions plays the server freeing them after its idle timeout."""
        sc = LockScenario(self, "losthost")
        sc.tree()
        original = sc.snapshot(TREE_TABLES)
        cfg = sc.paused_config({"a": TREE_JOB})
        bg = sc.hold("archive", cfg, "a")
        bg.signal(signal.SIGSTOP)
        src_holder, dst_holder = table_lock_holder(sc.src_db, "p"), job_lock_holder(sc.job_schema, "a")
        t0 = time.monotonic()
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 4, r)
        self.assertLess(time.monotonic() - t0, 5, "refused at once, not after a wait")
        kill("source", src_holder)
        kill("destination", dst_holder)
        # By the time the server frees a lost host's locks (minutes), its run's heartbeat is stale too: without
        # that, the registry keeps the run's single active slot (I1).
        gatest.sql("destination", f"UPDATE {gatest.quote_ident(sc.job_schema)}.runs "
                                  "SET heartbeat_at = NOW(6) - INTERVAL 2 MINUTE WHERE status = 'running'")
        os.unlink(sc.sentinel)
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        bg.kill()
        sc.assert_invariant(original, TREE_RELATIONS)


if __name__ == "__main__":
    unittest.main()
