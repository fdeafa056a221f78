#!/usr/bin/python3
"""`archive|copy-only|purge --all` (DESIGN.md §2): every job of that mode in the file (its `mode` key, default
archive), one after another; a busy job is skipped and named; the exit code is the worst of the jobs' (1 over 4
over 0)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


class RunAllTest(unittest.TestCase):
    def setUp(self):
        sc = self.sc = Scenario(self, "runall")
        for t in ("a", "b", "c", "d"):
            sc.both(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(20)) {INNODB}")
            sc.src(f"INSERT INTO {t} SELECT seq, CONCAT('{t}', seq) FROM seq_1_to_10")
        self.before = sc.snapshot(["a", "b", "c", "d"])
        jobs = {"ja": {"root_table": "a", "where": "id <= 5"},                  # mode archive by default
                "jb": {"root_table": "b", "where": "id <= 5", "mode": "archive"},
                "jc": {"root_table": "c", "where": "id <= 5", "mode": "copy-only"},
                "jd": {"root_table": "d", "where": "id <= 5", "mode": "purge"}}
        self.cfg = sc.config(jobs)

    def hold_job_lock(self, job):
        conn = gatest.connect("destination")
        self.addCleanup(conn.close)
        with conn.cursor() as cur:
            cur.execute("SELECT GET_LOCK(CONCAT('goarchive:j:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER(%s)), "
                        "256), 32)), 0)", (self.sc.job_schema, job))
            self.assertEqual(cur.fetchone()[0], 1)
        return conn

    def test_a_busy_job_is_skipped_and_named_and_the_others_run(self):
        # A --all that stopped at the busy job would leave b in the source; one that ran every mode would copy c
        # or purge d; one that ignored the busy job's code would exit 0.
        sc = self.sc
        conn = self.hold_job_lock("ja")
        r = sc.run("archive", "-c", self.cfg, "--all", "--no-progress")
        self.assertEqual(r.rc, 4, r)
        self.assertIn("job ja is busy and was skipped", r.err)
        self.assertEqual(sc.count("source", "a"), 10, "the busy job ran")
        self.assertEqual((sc.count("source", "b"), sc.count("destination", "b")), (5, 5))
        self.assertEqual((sc.count("destination", "c"), sc.count("source", "d")), (0, 10), "another mode's job ran")
        with conn.cursor() as cur:
            cur.execute("DO RELEASE_ALL_LOCKS()")
        r = sc.run("archive", "-c", self.cfg, "--all", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(self.before.only("a", "b"))
        r = sc.run("copy-only", "-c", self.cfg, "--all", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "c"), 5)
        r = sc.run("purge", "-c", self.cfg, "--all", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("source", "d"), 5)

    def test_a_failure_wins_over_busy(self):
        # Job jb's archive table is gone from the destination: its preflight fails (exit 1); ja is busy (4):
        # the worst is 1, not the last job's code.
        sc = self.sc
        sc.dst("DROP TABLE b")
        self.hold_job_lock("ja")
        r = sc.run("archive", "-c", self.cfg, "--all", "--no-progress")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("job jb:", r.err)
        self.assertIn("job ja is busy and was skipped", r.err)
        self.assertEqual(sc.count("source", "b"), 10)

    def test_all_and_a_job_together_or_neither_are_usage_errors(self):
        sc = self.sc
        r = sc.run("archive", "-c", self.cfg, "--all", "-j", "ja")
        self.assertEqual(r.rc, 2, r)
        r = sc.run("archive", "-c", self.cfg)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("archive needs -j/--job NAME, or --all", r.err)
        self.assertEqual(sc.count("source", "a"), 10)


if __name__ == "__main__":
    unittest.main()
