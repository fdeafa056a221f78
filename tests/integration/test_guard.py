#!/usr/bin/python3
"""Seed 001, "Concurrency and Locking": the unfinished-work guard, same source data, its limits, `jobs clear`.

Job "a" stops with work in its log (GOARCHIVE_FAULT SIGKILLs it after a commit); job "b", another name on the same
tables, must be refused before it does anything until a's rerun finished that work. "A process gone for more than
60 seconds" is played by moving the job's heartbeat two minutes into the past.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from lockkit import TREE_JOB, TREE_RELATIONS, TREE_TABLES, LockScenario, table_lock_holder  # noqa: E402

TAIL_JOB = dict(TREE_JOB, where="id > 90")  # job b: the same tree (p -> c), other roots
GUARD_HEAD = ("this run shares tables with other jobs that are running or hold unfinished work on the same source "
              "data; this run did nothing:")


def crash(test, sc, cfg, job, point="after_copy_commit", cmd="archive"):
    r = sc.go(cmd, cfg, job, env={"GOARCHIVE_FAULT": point})
    test.assertEqual(r.rc, -9, r)


class GuardTest(unittest.TestCase):
    def setUp(self):
        self.sc = LockScenario(self, "guard")
        self.sc.tree()
        self.original = self.sc.snapshot(TREE_TABLES)

    def assert_refused_did_nothing(self, cmd, cfg, job, rc, job_schema=None, dst_db=None):
        sc = self.sc
        before, log_before = sc.checksums(TREE_TABLES, dst_db=dst_db), sc.log_rows(job_schema)
        r = sc.go(cmd, cfg, job)
        self.assertEqual(r.rc, rc, r)
        self.assertIn(GUARD_HEAD, r.err)
        self.assertEqual(sc.checksums(TREE_TABLES, dst_db=dst_db), before, "the refused run changed data")
        self.assertEqual(sc.log_rows(job_schema), log_before, "the refused run wrote the work log")
        row = sc.job_row(job, job_schema)
        self.assertTrue(row is None or (row["runs"] == 0 and row["unfinished_roots"] == 0), row)
        return r

    def a_line(self, err, name="a"):
        lines = [ln for ln in err.splitlines() if ln.strip().startswith(f'job "{name}"')]
        self.assertEqual(len(lines), 1, err)
        return lines[0]

    def finish_both(self, cfg, b_cmd="archive"):
        sc = self.sc
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)
        r = sc.go(b_cmd, cfg, "b")
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(self.original, TREE_RELATIONS)

    # -- the guard -----------------------------------------------------------------------------------------------
    def test_stopped_job_with_copied_roots_blocks_job_sharing_tables_exit1_says_rerun_it(self):
        """A run is refused before it does anything when another job in the same registry is on the same source
        data, shares a table of its tree and holds unfinished roots (copied); the refusal lists the job with its
        state and the tables it shares, and the way out (rerun it); exit 1: a stopped job's work waits for that
        job's rerun. After that rerun the other job runs fine. For every job type."""
        sc = self.sc
        cfg = sc.config({"a": TREE_JOB, "b": TAIL_JOB}, processing={"batch_size": 10})
        crash(self, sc, cfg, "a")
        self.assertEqual(sc.unfinished(), 10)
        sc.age_heartbeat("a")
        r = self.assert_refused_did_nothing("archive", cfg, "b", 1)
        line = self.a_line(r.err)
        self.assertIn("10 copied", line)
        self.assertIn("marked running", line)
        self.assertIn(f"{sc.src_db}.p", line)
        self.assertIn(f"{sc.src_db}.c", line)
        self.assertIn('rerun job "a" so its recovery finishes its work', r.err)
        for cmd in ("copy-only", "purge"):
            with self.subTest(cmd=cmd):
                self.assert_refused_did_nothing(cmd, cfg, "b", 1)
        self.finish_both(cfg)

    def test_job_that_stopped_less_than_60s_ago_counts_as_live_exit4(self):
        """It exits 4 while every job it names is live (marked running, with a heartbeat within the last 60
        seconds): a job killed a moment ago still has its heartbeat."""
        sc = self.sc
        cfg = sc.config({"a": TREE_JOB, "b": TAIL_JOB}, processing={"batch_size": 10})
        crash(self, sc, cfg, "a")
        r = self.assert_refused_did_nothing("archive", cfg, "b", 4)
        self.assertIn("running, live", self.a_line(r.err))
        self.finish_both(cfg)

    def test_deleting_roots_block_whatever_the_job_status(self):
        """... or holds unfinished roots (copied or deleting) in its log, whatever its status."""
        sc = self.sc
        cfg = sc.config({"a": TREE_JOB, "b": TAIL_JOB}, processing={"batch_size": 10})
        crash(self, sc, cfg, "a", "after_mark_deleting")
        sc.age_heartbeat("a")
        for status in ("running", "failed", "stopped", "finished", "idle"):
            with self.subTest(status=status):
                sc.reg("UPDATE jobs SET status = %s WHERE name = 'a'", (status,))
                r = self.assert_refused_did_nothing("archive", cfg, "b", 1)
                line = self.a_line(r.err)
                self.assertIn("10 deleting", line)
                if status != "running":
                    self.assertIn(f"({status};", line)
        sc.reg("UPDATE jobs SET status = 'failed' WHERE name = 'a'")
        self.finish_both(cfg)

    def test_live_job_that_claimed_roots_refuses_other_job_by_table_lock_exit4(self):
        """The locks stop a live run: while a's rerun holds its locks (paused after claiming roots), b is refused by
        the table lock (exit 4), not by the guard."""
        sc = self.sc
        cfg = sc.paused_config({"a": TREE_JOB, "b": TAIL_JOB})
        crash(self, sc, cfg, "a")
        bg = sc.hold("archive", cfg, "a")
        holder = table_lock_holder(sc.src_db, "p")
        r = sc.go("archive", cfg, "b")
        self.assertEqual(r.rc, 4, r)
        self.assertIn("is in use by another GoArchive run (source connection\n%d)" % holder, r.err)
        self.assertNotIn(GUARD_HEAD, r.err)
        r = sc.release(bg)
        self.assertEqual(r.rc, 0, r)
        r = sc.go("archive", cfg, "b")
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(self.original, TREE_RELATIONS)

    def test_job_marked_running_with_live_heartbeat_refuses_exit4(self):
        """... and is marked running: with a live heartbeat (its locks free) the refusal exits 4; once the heartbeat
        is older than 60 seconds, exit 1 and the way out is `jobs clear`."""
        sc = self.sc
        cfg = sc.config({"a": TREE_JOB, "b": TAIL_JOB}, processing={"batch_size": 25})
        self.assertEqual(sc.go("archive", cfg, "a").rc, 0)
        sc.reg("UPDATE jobs SET status = 'running', heartbeat_at = NOW(6) WHERE name = 'a'")
        r = self.assert_refused_did_nothing("archive", cfg, "b", 4)
        self.assertIn("running, live", self.a_line(r.err))
        sc.age_heartbeat("a")
        r = self.assert_refused_did_nothing("copy-only", cfg, "b", 1)
        self.assertIn("goarchive jobs clear -j a", r.err)
        r = sc.run("jobs", "clear", "-c", cfg, "-j", "a")
        self.assertEqual(r.rc, 0, r)
        r = sc.go("archive", cfg, "b")
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(self.original, TREE_RELATIONS)

    def test_refusal_lists_each_job_and_exits4_only_when_every_named_job_is_live(self):
        """The refusal lists each job with its state and the tables it shares; exit 4 while every job it names is
        live, 1 otherwise."""
        sc = self.sc
        sc.both("CREATE TABLE q (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB")
        sc.src("INSERT INTO q SELECT seq, 'q' FROM seq_1_to_100")
        a2 = {"root_table": "q", "where": "id <= 50"}
        b = {"root_table": "q", "where": "id > 90", "relations": [{"table": "c", "foreign_key": "pid"}]}
        cfg = sc.config({"a": TREE_JOB, "a2": a2, "b": b}, processing={"batch_size": 10})
        crash(self, sc, cfg, "a")
        crash(self, sc, cfg, "a2")
        sc.age_heartbeat("a")
        sc.age_heartbeat("a2")
        r = self.assert_refused_did_nothing("archive", cfg, "b", 1)
        la, la2 = self.a_line(r.err, "a"), self.a_line(r.err, "a2")
        self.assertIn(f"shares {sc.src_db}.c", la)
        self.assertNotIn(f"{sc.src_db}.p", la, "only the tables it shares with this run")
        self.assertIn(f"shares {sc.src_db}.q", la2)
        self.assertIn('rerun job "a" ', r.err)
        self.assertIn('rerun job "a2" ', r.err)
        sc.reg("UPDATE jobs SET heartbeat_at = NOW(6) WHERE name = 'a'")
        self.assert_refused_did_nothing("archive", cfg, "b", 1)  # a live, a2 not
        sc.reg("UPDATE jobs SET heartbeat_at = NOW(6) WHERE name = 'a2'")
        self.assert_refused_did_nothing("archive", cfg, "b", 4)  # both live
        for job in ("a", "a2", "b"):
            r = sc.go("archive", cfg, job)
            self.assertEqual(r.rc, 0, f"{job}: {r}")
        sc.assert_invariant(self.original)  # b archives c rows under q: no p -> c orphan check here

    # -- same source data --------------------------------------------------------------------------------------------
    def test_same_source_data_replica_of_source_is_refused(self):
        """The same source data is that of a server whose transactions are in this server's GTID state (a server
        this source replicates from, a promoted replica): a stopped job on `source` blocks a run against `replica`
        (gtid_slave_pos holds the source's server_id) in the same registry."""
        sc = self.sc
        cfg = sc.config({"a": TREE_JOB}, processing={"batch_size": 10})
        rcfg = sc.config({"b": TAIL_JOB}, processing={"batch_size": 10},
                         source={"port": int(gatest.env("GA_REPLICA_PORT"))})
        crash(self, sc, cfg, "a")
        gatest.wait_replica_caught_up()
        src_id, src_domain = gatest.sql("source", "SELECT @@server_id, @@gtid_domain_id")[0]
        pos = gatest.sql("replica", "SELECT @@gtid_slave_pos")[0][0]
        self.assertIn((src_domain, src_id), [(d, s) for d, s, _ in gatest.parse_gtid_list(pos)])
        # The registry keeps the GTID history of a's source beside its identity (migration 6), for the guard's
        # MySQL rule (a history holding another's whole recorded history).
        recorded = gatest.sql("destination", f"SELECT g.gtid_state FROM {gatest.quote_ident(sc.job_schema)}."
                                             f"job_gtid_states g JOIN {gatest.quote_ident(sc.job_schema)}.jobs j "
                                             "ON j.id = g.job_id WHERE j.name = 'a'")[0][0]
        self.assertIn((src_domain, src_id),
                      [(d, s) for d, s, _ in gatest.parse_gtid_list(recorded.split(",")[0])], recorded)
        self.assertEqual(gatest.sql("replica", f"SELECT COUNT(*) FROM {gatest.quote_ident(sc.src_db)}.p")[0][0], 100)
        r = self.assert_refused_did_nothing("copy-only", rcfg, "b", 4)
        self.a_line(r.err)
        sc.age_heartbeat("a")
        r = self.assert_refused_did_nothing("copy-only", rcfg, "b", 1)
        self.assertIn('rerun job "a"', r.err)
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        gatest.wait_replica_caught_up()
        r = sc.go("copy-only", rcfg, "b")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "p"), 60)  # a archived 1..50, b copied 91..100 from the replica
        self.assertEqual(sc.count("source", "p"), 50)
        sc.assert_nothing_lost(self.original, TREE_RELATIONS)

    def test_server_without_the_sources_transactions_is_not_same_source_data(self):
        """A server that can tell (GTID on) and holds none of the stopped job's source's transactions is other data,
        even with the same database and table names: not blocked."""
        sc = self.sc
        cfg = sc.config({"a": TREE_JOB}, processing={"batch_size": 10})
        crash(self, sc, cfg, "a")
        sc.age_heartbeat("a")
        # The same database name on the destination server (its GTID state has no transaction of the source's).
        other = sc.extra_db("destination", sc.src_db)
        gatest.sql("destination", "CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB", db=other)
        gatest.sql("destination", "CREATE TABLE c (id INT PRIMARY KEY, pid INT NOT NULL, w VARCHAR(20), KEY (pid)) "
                                  "ENGINE=InnoDB", db=other)
        gatest.sql("destination", "INSERT INTO p SELECT seq + 1000, 'o' FROM seq_1_to_20", db=other)
        state = gatest.sql("destination", "SELECT @@gtid_binlog_state, @@gtid_slave_pos")[0]
        src_id = gatest.sql("source", "SELECT @@server_id")[0][0]
        self.assertNotIn(src_id, [s for d, s, _ in gatest.parse_gtid_list(",".join(x for x in state if x))])
        # Another source has an archive database of its own (one archive database takes one source's runs).
        dst2 = sc.extra_db("destination", sc.dst_db + "_b")
        q = gatest.quote_ident
        for t in ("p", "c"):
            gatest.sql("destination", f"CREATE TABLE {q(dst2)}.{q(t)} LIKE {q(sc.dst_db)}.{q(t)}")
        archived = sc.count("destination", "p")
        ocfg = sc.config({"b": dict(TREE_JOB, where="id > 1010")}, source={"port": int(gatest.env("GA_DEST_PORT"))},
                         destination={"database": dst2})
        r = sc.go("copy-only", ocfg, "b")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(gatest.sql("destination", "SELECT COUNT(*) FROM p", db=dst2)[0][0], 10)
        self.assertEqual(sc.count("destination", "p"), archived)
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)

    def test_one_registry_stopped_job_in_other_job_schema_does_not_block(self):
        """Limits of the guard - one registry: a stopped job tracked in another job_schema does not block."""
        sc = self.sc
        js2 = sc.extra_schema(sc.job_schema + "_2")
        dst2 = sc.extra_db("destination", sc.dst_db + "_2")
        for stmt in ("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE c (id INT PRIMARY KEY, pid INT NOT NULL, w VARCHAR(20), KEY (pid)) ENGINE=InnoDB"):
            gatest.sql("destination", stmt, db=dst2)
        cfg = sc.config({"a": TREE_JOB}, processing={"batch_size": 10})
        cfg2 = sc.config({"b": TREE_JOB}, processing={"batch_size": 10},
                         destination={"database": dst2, "job_schema": js2})
        crash(self, sc, cfg, "a")
        sc.age_heartbeat("a")
        r = sc.go("copy-only", cfg2, "b")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(gatest.sql("destination", "SELECT COUNT(*) FROM p", db=dst2)[0][0], 50)
        r = sc.go("archive", cfg, "a")
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(self.original, TREE_RELATIONS)

    def test_limit_stopped_job_on_replica_of_this_source_not_detected(self):
        """Limits of the guard - not detected: a stopped job recorded on a replica of this source."""
        sc = self.sc
        gatest.wait_replica_caught_up()
        rcfg = sc.config({"a": TREE_JOB}, processing={"batch_size": 10},
                         source={"port": int(gatest.env("GA_REPLICA_PORT"))})
        cfg = sc.config({"b": TAIL_JOB}, processing={"batch_size": 10})
        crash(self, sc, rcfg, "a", cmd="copy-only")
        sc.age_heartbeat("a")
        self.assertGreater(sc.unfinished(), 0)
        r = sc.go("copy-only", cfg, "b")
        self.assertEqual(r.rc, 0, r)
        r = sc.go("copy-only", rcfg, "a")
        self.assertEqual(r.rc, 0, r)
        sc.assert_nothing_lost(self.original, TREE_RELATIONS)


# -- A job marked running with nothing in its log, whose process is gone, is cleared by hand ----------------------
class JobsClearTest(unittest.TestCase):
    def setUp(self):
        self.sc = LockScenario(self, "clear")
        self.sc.tree()
        self.cfg = self.sc.paused_config({"a": TREE_JOB, "b": TAIL_JOB})

    def clear(self, job="a"):
        return self.sc.run("jobs", "clear", "-c", self.cfg, "-j", job)

    def test_jobs_clear_refuses_live_job_exit4(self):
        sc = self.sc
        bg = sc.hold("archive", self.cfg, "a")
        r = self.clear()
        self.assertEqual(r.rc, 4, r)
        self.assertIn("live", r.err)
        self.assertEqual(sc.job_row("a")["status"], "running")
        self.assertEqual(sc.release(bg).rc, 0)

    def test_jobs_clear_refuses_job_holding_its_locks_exit4_says_which(self):
        sc = self.sc
        bg = sc.hold("archive", self.cfg, "a")
        sc.age_heartbeat("a")  # a heartbeat that looks stale, while the process still holds its locks
        r = self.clear()
        self.assertEqual(r.rc, 4, r)
        self.assertIn("still holds its locks", r.err)
        self.assertIn(f"destination connection {sc.reg('SELECT destination_connection FROM runs')[0][0]}", r.err)
        self.assertIn(f"{sc.src_db}.p (source connection {table_lock_holder(sc.src_db, 'p')})", r.err)
        self.assertEqual(sc.job_row("a")["status"], "running")
        self.assertEqual(sc.release(bg).rc, 0)

    def test_jobs_clear_refuses_job_with_unfinished_roots_exit1_says_which(self):
        sc = self.sc
        crash(self, sc, self.cfg, "a")
        sc.age_heartbeat("a")
        r = self.clear()
        self.assertEqual(r.rc, 1, r)
        self.assertIn("unfinished roots", r.err)
        self.assertIn("10 copied, 0 deleting", r.err)
        self.assertIn("Rerun the job", r.err)
        self.assertEqual(sc.unfinished(), 10)
        self.assertEqual(sc.go("archive", self.cfg, "a").rc, 0)

    def test_jobs_clear_clears_job_marked_running_with_nothing_in_its_log_and_process_gone(self):
        """A job marked running with nothing in its log, whose process is gone, blocks a job on its tables
        (exit 1, way out: jobs clear) until it is cleared by hand; then `jobs` shows it no longer running."""
        sc = self.sc
        bg = sc.hold("archive", self.cfg, "a")
        bg.kill()
        os.unlink(sc.sentinel)
        sc.age_heartbeat("a")
        self.assertEqual(sc.job_row("a")["status"], "running")
        r = sc.go("archive", self.cfg, "b")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("jobs clear -j a", r.err)
        r = self.clear()
        self.assertEqual(r.rc, 0, r)
        row = sc.job_row("a")
        self.assertNotEqual(row["status"], "running", row)
        self.assertFalse(row["live"])
        r = self.clear()
        self.assertEqual(r.rc, 1, r)
        self.assertIn("not marked running", r.err)
        r = sc.go("archive", self.cfg, "b")
        self.assertEqual(r.rc, 0, r)
        r = sc.go("archive", self.cfg, "a")
        self.assertEqual(r.rc, 0, r)


if __name__ == "__main__":
    unittest.main()
