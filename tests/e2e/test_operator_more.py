#!/usr/bin/python3
"""Operator experience, third round, against the real servers:

- the progress total is the roots that match `where` (a COUNT(*) bounded to 2 s; else EXPLAIN's rows when they
  come from an index range on the condition; else "?"), never the table's size; a finished run ends at 100%;
- [throttle] end to end: max_threads_running holds the run and it finishes once the load is gone,
  critical_threads_running stops it cleanly (exit 4), max_hold gives up (exit 4), the throttle query holds;
  --statistics prints the per-phase table; analyze = true analyzes every source table after a deleting run;
- `jobs` shows each job's open conflicts (count, up to 5 root keys by name; JSON `open_conflicts`, `conflicts`);
- the summary's first line says in one line why the run ended, for each way a run ends.
"""

import hashlib
import json
import os
import re
import signal
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opkit import (SHOP_RELATIONS, SHOP_TABLES, Background, Scenario, gatest, hold_order_lock,  # noqa: E402
                   registry_runs, replace_in_section, shop, summary_head, wait_until)


def args(cmd, cfg, *extra):
    return [cmd, "-c", cfg, "-j", "j", *extra]


def progress_lines(err):
    return [l for l in err.splitlines() if "progress: " in l]


PROGRESS = re.compile(r"progress: (.+?) \| roots (\d+)(/\?|/~(\d+) \((\d+)%\)) \| rows \d+ \| \d+ rows/s \| "
                      r"batch \d+ \| ETA (\S+)$")


def parse_progress(test, err):
    """[(state, roots, total or None, percent or None, eta)] of the progress lines on stderr."""
    out = []
    for line in progress_lines(err):
        m = PROGRESS.search(line)
        test.assertIsNotNone(m, f"progress line in an unknown format: {line!r}")
        total = int(m.group(4)) if m.group(4) else None
        pct = int(m.group(5)) if m.group(5) else None
        out.append((m.group(1), int(m.group(2)), total, pct, m.group(6)))
    return out


def key_hash(*values):
    """The registry's encoding of a root key (per value: 4-byte big-endian length + bytes) and its 16-byte hash."""
    enc = b"".join(struct.pack(">I", len(v)) + v for v in (str(x).encode() for x in values))
    return enc, hashlib.sha256(enc).digest()[:16]


def job_id(sc, name="j"):
    return gatest.sql("destination", f"SELECT id FROM {gatest.quote_ident(sc.job_schema)}.jobs WHERE name = %s",
                      (name,))[0][0]


def add_conflict(sc, *key):
    enc, h = key_hash(*key)
    gatest.sql("destination", f"INSERT INTO {gatest.quote_ident(sc.job_schema)}.conflicts "
                              "(job_id, root_key_hash, root_key, batch_id) VALUES (%s, %s, %s, 0)", (job_id(sc), h, enc))


def threads_running():
    return int(gatest.sql("source", "SHOW GLOBAL STATUS LIKE 'Threads_running'")[0][1])


class Load:
    """N source sessions inside SELECT SLEEP(seconds): each counts in Threads_running while it sleeps."""

    def __init__(self, test, n=6, seconds=6):
        idle = threads_running()
        self.conns = [gatest.connect("source") for _ in range(n)]
        test.addCleanup(self.close)
        self.threads = [threading.Thread(target=self._sleep, args=(c, seconds), daemon=True) for c in self.conns]
        for t in self.threads:
            t.start()
        wait_until(lambda: threads_running() >= idle + n, 3, 0.05, "Threads_running to count the sleeping sessions")
        self.started = time.time()

    @staticmethod
    def _sleep(conn, seconds):
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT SLEEP({seconds})")
                cur.fetchall()
        except Exception:
            pass

    def join(self):
        for t in self.threads:
            t.join(30)

    def close(self):
        self.join()
        for c in self.conns:
            try:
                c.close()
            except Exception:
                pass


# -- 1. the progress total --------------------------------------------------------------------------------------
class ProgressTotalTest(unittest.TestCase):
    ROWS = 3000

    def scenario(self, tag, where):
        """3000 rows, a third of them with grp = 0; grp has no index. Slowed: batches of 50, 0.2 s apart."""
        sc = Scenario(self, tag)
        sc.both("CREATE TABLE t (id INT PRIMARY KEY, grp INT NOT NULL, pad VARCHAR(40) NOT NULL) ENGINE=InnoDB")
        values = ",".join(f"({i},{i % 3},'row {i}')" for i in range(1, self.ROWS + 1))
        sc.src(f"INSERT INTO t VALUES {values}")
        sc.src("ANALYZE TABLE t")
        before = sc.snapshot(["t"])
        cfg = sc.config({"j": {"root_table": "t", "where": where}}, processing={"batch_size": 50, "sleep": 0.2})
        return sc, cfg, before

    def run_archive(self, sc, cfg):
        r = sc.run(*args("archive", cfg, "--progress-interval", "1"))  # its smallest value
        self.assertEqual(r.rc, 0, r)
        lines = parse_progress(self, r.err)
        self.assertGreaterEqual(len(lines), 3, f"a slowed run shows several progress lines:\n{r.err}")
        return r, lines

    def check_finished_at_100(self, lines, roots):
        state, done, total, pct, eta = lines[-1]
        self.assertEqual((state, done, total, pct), ("finished", roots, roots, 100), lines[-1])
        for _, done, total, pct, _ in lines:
            if total is not None:
                self.assertLessEqual(done, total)
                self.assertLessEqual(pct, 100)

    def test_unindexed_where_counts_the_matching_roots(self):
        sc, cfg, before = self.scenario("ptcount", "grp = 0")
        r, lines = self.run_archive(sc, cfg)
        matching = self.ROWS // 3
        for state, done, total, pct, eta in lines:
            self.assertEqual(total, matching, f"the total is the roots matching where, not the table: {lines}")
        during = [l for l in lines[:-1] if 0 < l[1] < matching]
        self.assertTrue(during, lines)
        self.assertTrue(all(l[3] < 100 and l[4] != "?" for l in during), during)
        self.check_finished_at_100(lines, matching)
        self.assertNotRegex(r.err, r"/~3\d\d\d\b")
        sc.assert_invariant(before)

    def test_count_that_times_out_shows_no_total(self):
        # SLEEP(0.003) per matching row: COUNT(*) needs 3 s, the 2 s bound stops it; EXPLAIN's rows are a full
        # scan's (type ALL), the table's size: the progress shows "?" and no percentage or ETA.
        sc, cfg, before = self.scenario("ptslow", "grp = 0 AND SLEEP(0.003) = 0")
        r, lines = self.run_archive(sc, cfg)
        for state, done, total, pct, eta in lines[:-1]:
            self.assertEqual((total, pct, eta), (None, None, "?"), lines)
        self.assertRegex(r.err, r"progress: \S+ \| roots \d+/\? \| rows")
        self.check_finished_at_100(lines, self.ROWS // 3)
        self.assertNotRegex(r.err, r"/~3\d\d\d\b")
        sc.assert_invariant(before)

    def test_count_that_times_out_uses_an_index_range_estimate(self):
        # The same slow condition on a primary key range: EXPLAIN reads its rows from the range (type range).
        sc, cfg, before = self.scenario("ptrange", "id <= 600 AND SLEEP(0.005) = 0")
        r, lines = self.run_archive(sc, cfg)
        totals = {l[2] for l in lines[:-1]}
        self.assertEqual(len(totals), 1, lines)
        total = totals.pop()
        self.assertIsNotNone(total, lines)
        self.assertTrue(450 <= total <= 750, f"an estimate near the 600 matching roots, got {total}")
        self.check_finished_at_100(lines, 600)
        sc.assert_invariant(before)


# -- 2. [throttle] end to end --------------------------------------------------------------------------------------
class ThrottleTest(unittest.TestCase):
    def scenario(self, tag, extra="", processing=None):
        p = {"batch_size": 10}
        p.update(processing or {})
        return shop(self, tag, orders=200, processing=p, extra=extra)

    def test_max_threads_running_holds_then_finishes(self):
        sc, cfg, before, expected = self.scenario("thold", processing={"analyze": True})
        load = Load(self)
        r = sc.run(*args("archive", cfg, "--no-progress", "--max-threads-running", "5", "--statistics"))
        waited = time.time() - load.started
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.err, r"held before \S+ by the throttle gate: Threads_running \d+ >= max_threads_running 5")
        self.assertGreater(waited, 5, "the run ended only after the sleeping sessions did")
        mode, job, run_id, reason, code = summary_head(r.out)
        self.assertEqual((reason, code), ("finished", 0), r.out)
        m = re.search(r", throttled (\d+\.\d)s;", r.out)
        self.assertIsNotNone(m, r.out)
        self.assertGreater(float(m.group(1)), 1.0, r.out)
        # --statistics: the per-phase table after the summary, with the throttle time in its row.
        self.assertLess(r.out.index("goarchive archive job=j"), r.out.index(f"statistics of run {run_id} ("))
        self.assertRegex(r.out, r"\n  phase +seconds +% wall +per batch\n")
        for phase in ("select", "copy", "verify", "delete", "held \\(replication\\)", "waiting for source", "wall"):
            self.assertRegex(r.out, rf"\n  {phase} +\d+\.\d{{3}} ", phase)
        t = re.search(r"\n  throttled \(source load\) +(\d+\.\d{3}) +(\d+\.\d)% ", r.out)
        self.assertIsNotNone(t, r.out)
        self.assertGreater(float(t.group(1)), 1.0)
        summary = registry_runs(sc)[-1][4]
        self.assertGreater(summary["phase_seconds"]["throttled"], 1.0, summary)
        # analyze = true after a run that deleted rows: every source table, by name.
        for table in SHOP_TABLES:
            self.assertRegex(r.err, rf"analyzed `?{re.escape(sc.src_db)}`?\.`?{table}`?\n", table)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_no_analyze_after_a_run_that_deleted_nothing(self):
        sc, cfg, before, _ = self.scenario("tnoan", processing={"analyze": True})
        self.assertEqual(sc.run(*args("archive", cfg, "--no-progress")).rc, 0)
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(summary_head(r.out)[3:], ("nothing to do", 0), r)
        self.assertNotIn("analyzed", r.err)

    def test_critical_threads_running_stops_with_exit_4(self):
        sc, cfg, before, expected = self.scenario("tcrit")
        load = Load(self)
        r = sc.run(*args("archive", cfg, "--no-progress", "--critical-threads-running", "5"))
        self.assertEqual(r.rc, 4, r)
        mode, job, run_id, reason, code = summary_head(r.out)
        self.assertRegex(reason, r"^stopped by the throttle: Threads_running \d+ >= critical_threads_running 5$")
        self.assertEqual(code, 4)
        errors = [l for l in r.err.splitlines() if l.startswith("goarchive: ")]
        self.assertEqual(len(errors), 1, r.err)
        self.assertRegex(errors[0], r"^goarchive: stopped by the throttle: Threads_running \d+ >= "
                                    r"critical_threads_running 5; the run stopped cleanly at a batch boundary")
        self.assertEqual(sc.unfinished(), 0, "stopped at a batch boundary: nothing half-done")
        self.assertEqual(registry_runs(sc)[-1][1:3], ("stopped", 4))
        sc.assert_invariant(before, SHOP_RELATIONS)
        load.join()
        r = sc.run(*args("archive", cfg, "--no-progress", "--critical-threads-running", "5"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_max_hold_gives_up_with_exit_4(self):
        sc, cfg, before, _ = self.scenario("tmaxh", extra="[throttle]\nmax_threads_running = 5\nmax_hold = 1\n")
        Load(self)
        t0 = time.time()
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 4, r)
        self.assertLess(time.time() - t0, 5.5, "gave up after about max_hold, before the load ended")
        reason = summary_head(r.out)[3]
        self.assertRegex(reason, r"^stopped after holding \d+\.\ds for throttle \(Threads_running \d+ >= "
                                 r"max_threads_running 5\)")
        errors = [l for l in r.err.splitlines() if l.startswith("goarchive: ")]
        self.assertEqual(errors, [f"goarchive: {reason}"], r.err)
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_throttle_query_holds(self):
        sc, cfg, before, _ = self.scenario("tquery", extra="[throttle]\nmax_hold = 1\n")
        r = sc.run(*args("archive", cfg, "--no-progress", "--throttle-query", "SELECT 1"))
        self.assertEqual(r.rc, 4, r)
        self.assertIn("held before batch by the throttle gate: throttle query returned 1", r.err)
        reason = summary_head(r.out)[3]
        self.assertRegex(reason, r"^stopped after holding \d+\.\ds for throttle \(throttle query returned 1\)")
        self.assertEqual(sc.count("destination", "orders"), 0, "held before the first batch")
        sc.assert_invariant(before, SHOP_RELATIONS)
        r = sc.run(*args("archive", cfg, "--no-progress", "--throttle-query", "SELECT 0"))
        self.assertEqual((r.rc, summary_head(r.out)[3]), (0, "finished"), r)
        sc.assert_invariant(before, SHOP_RELATIONS)


# -- 3. jobs shows conflicts ----------------------------------------------------------------------------------------
class JobsConflictsTest(unittest.TestCase):
    def test_text_and_json_show_open_conflicts(self):
        sc, cfg, before, expected = shop(self, "jconf", orders=40)
        self.assertEqual(sc.run(*args("archive", cfg, "--no-progress")).rc, 0)
        doc = sc.jobs_json(cfg)["j"]
        self.assertEqual((doc["open_conflicts"], doc["conflicts"]), (0, []), doc)
        r = sc.run("jobs", "-c", cfg)
        self.assertRegex(r.out, r"^JOB +COMMAND +SOURCE +STATUS +HEARTBEAT +UNFINISHED +CONFLICTS +LAST RUN\n")
        self.assertRegex(r.out, r"\nj +archive +\S+ +finished +.* 0 +0  #1 finished exit 0: finished\n")
        self.assertNotIn("  conflicts", r.out)
        ids = [row[0] for row in gatest.sql("destination", f"SELECT id FROM {gatest.quote_ident(sc.dst_db)}.orders "
                                                           "ORDER BY id LIMIT 7")]
        for i in ids:
            add_conflict(sc, i)
            time.sleep(0.01)  # created_at orders them
        r = sc.run("jobs", "-c", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out, r"\nj +archive +\S+ +finished +.* 0 +7  #1 finished")
        shown = "; ".join(f"orders (id) = ({i})" for i in ids[:5])
        self.assertIn(f"\n  conflicts (7 open, each waits for a person to delete one version): {shown}; and 2 more\n",
                      r.out)
        doc = sc.jobs_json(cfg)["j"]
        self.assertEqual(doc["open_conflicts"], 7)
        self.assertEqual(doc["conflicts"], [f"orders (id) = ({i})" for i in ids[:5]])
        # Without the key's column names (no such table in the destination database): "root key (...)".
        other = f"e_{sc.id}"
        gatest.sql("destination", f"CREATE DATABASE {gatest.quote_ident(other)}")
        self.addCleanup(gatest.sql, "destination", f"DROP DATABASE IF EXISTS {gatest.quote_ident(other)}")
        replace_in_section(cfg, "destination", f'database = "{sc.dst_db}"', [f'database = "{other}"'])
        doc = sc.jobs_json(cfg)["j"]
        self.assertEqual(doc["conflicts"][0], f"orders root key ({ids[0]})", doc)
        replace_in_section(cfg, "destination", f'database = "{other}"', [f'database = "{sc.dst_db}"'])
        # These roots have one version only (archived): the next run clears them and `jobs` shows none.
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual((r.rc, summary_head(r.out)[3]), (0, "nothing to do"), r)
        self.assertEqual(sc.jobs_json(cfg)["j"]["open_conflicts"], 0)
        sc.assert_invariant(before, SHOP_RELATIONS)


# -- 4. the reason line -----------------------------------------------------------------------------------------
class ReasonLineTest(unittest.TestCase):
    def head(self, r, code):
        """The summary's first line is stdout's first line, one line, followed by the table."""
        out = r.out if hasattr(r, "out") else r
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^goarchive \S+ job=j run=\d+: .+ in \S+ \(exit \d+\)$", out)
        self.assertRegex(lines[1], r"^  table +copied +verified +deleted$", out)
        h = summary_head(out)
        self.assertEqual(h[4], code, out)
        return h[3]

    def test_finished_and_nothing_to_do(self):
        sc, cfg, before, _ = shop(self, "rfin", orders=40)
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual((r.rc, self.head(r, 0)), (0, "finished"), r)
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual((r.rc, self.head(r, 0)), (0, "nothing to do"), r)
        self.assertEqual(registry_runs(sc)[-1][3], "nothing to do")

    def test_max_runtime(self):
        sc, cfg, before, _ = shop(self, "rmax", processing={"batch_size": 10, "sleep": 0.3})
        release = hold_order_lock(self, sc)
        p = Background(args("archive", cfg, "--no-progress", "--max-runtime", "1s")).kill_on_cleanup(self)
        time.sleep(1.5)
        release()
        self.assertEqual(p.wait(60), 0, p)
        reason = self.head(p.out, 0)
        self.assertEqual(reason, "max-runtime 1.0s reached; stopped cleanly at a batch boundary, the next run continues")
        self.assertEqual(registry_runs(sc)[-1][3], reason)
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_sigterm(self):
        sc, cfg, before, _ = shop(self, "rterm", processing={"batch_size": 10, "sleep": 0.3})
        p = Background(args("archive", cfg, "--no-progress")).kill_on_cleanup(self)
        wait_until(lambda: sc.count("destination", "orders") > 0, 30, what="a first batch")
        p.signal(signal.SIGTERM)
        self.assertEqual(p.wait(30), 143, p)
        self.assertEqual(self.head(p.out, 143), "interrupted by SIGTERM")
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_throttle_critical_stop(self):
        sc, cfg, before, _ = shop(self, "rcrit", orders=40)
        Load(self, seconds=3)
        r = sc.run(*args("archive", cfg, "--no-progress", "--critical-threads-running", "5"))
        self.assertEqual(r.rc, 4, r)
        self.assertRegex(self.head(r, 4), r"^stopped by the throttle: Threads_running \d+ >= critical_threads_running 5$")

    def test_conflict_exit_1(self):
        sc, cfg, before, expected = shop(self, "rconf", orders=40)
        self.assertEqual(sc.run(*args("archive", cfg, "--no-progress")).rc, 0)
        # An archived order back in the source with other content, recorded as a conflict: two versions, no proof.
        row = gatest.sql("destination", f"SELECT id, customer_id, created_at, status, total, note FROM "
                                        f"{gatest.quote_ident(sc.dst_db)}.orders ORDER BY id LIMIT 1")[0]
        sc.src("INSERT INTO orders (id, customer_id, created_at, status, total, note) VALUES (%s,%s,%s,%s,%s,%s)",
               (row[0], row[1], row[2], "changed", row[4], row[5]))
        add_conflict(sc, row[0])
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 1, r)
        reason = self.head(r, 1)
        self.assertRegex(reason, rf"^1 root\(s\) are in conflict: .* orders \(id\) = \({row[0]}\)\. Compare the two "
                                 r"versions, delete the wrong one")
        self.assertEqual(registry_runs(sc)[-1][2:4], (1, reason))
        # The way out: delete one version; the next run sees one and clears the conflict.
        sc.src("DELETE FROM orders WHERE id = %s", (row[0],))
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual((r.rc, self.head(r, 0)), (0, "nothing to do"), r)
        sc.assert_invariant(before, SHOP_RELATIONS)


if __name__ == "__main__":
    unittest.main()
