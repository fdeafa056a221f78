#!/usr/bin/python3
"""`lock_time`: batches sized by how long their source delete holds the application's rows. With a target below
what any delete takes, the batches shrink to the fewest roots (10), the keyset reads in the source's general log
say so, the log says why, and every row is still archived exactly once; with lock_time 0 every batch has
batch_size roots. The JSON summary counts the lock windows. Bad values exit 2 and touch nothing."""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402
from test_key_lists import GeneralLog  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
JOB = {"root_table": "p", "where": "old = 1"}
ROWS = 3000  # 1500 cold (odd ids): 15 batches of 100


def table(sc):
    sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {INNODB}")
    sc.src(f"INSERT INTO p SELECT seq, seq % 2, CONCAT('p', seq) FROM seq_1_to_{ROWS}")


def keyset_limits(sc, log):
    """The LIMIT of every keyset read of p's new roots, in the order the source ran them."""
    reads = [s for s in log.statements(f"`{sc.src_db}`.`p`") if "FORCE INDEX (PRIMARY)" in s and "ORDER BY" in s
             and "general_log" not in s and "FOR UPDATE" not in s]
    return [int(m.group(1)) for m in (re.search(r" LIMIT (\d+)\s*$", s) for s in reads) if m]


class LockTimeTest(unittest.TestCase):
    def archive(self, tag, lock_time, *args):
        sc = Scenario(self, tag)
        table(sc)
        before = sc.snapshot(["p"])
        log = GeneralLog(self, "source")
        processing = {"batch_size": 100}
        if lock_time is not None:
            processing["lock_time"] = lock_time
        cfg = sc.config({"j": JOB}, processing=processing)
        r = sc.job("archive", cfg, "j", "--format", "json", *args)
        self.assertEqual(r.rc, 0, r)
        summary = json.loads(r.out)
        self.assertEqual(sc.count("destination", "p"), ROWS // 2)
        self.assertEqual(sc.count("source", "p"), ROWS // 2)
        sc.assert_invariant(before)
        self.assertEqual(sc.unfinished(), 0)
        return sc, r, summary, keyset_limits(sc, log)

    def test_a_target_below_any_delete_shrinks_batches_to_the_fewest_roots(self):
        # 10 microseconds: no delete and commit fits, so the batches after the first ones take 10 roots.
        sc, r, summary, limits = self.archive("tiny", 0.00001)
        self.assertEqual(limits[0], 100, limits)
        self.assertIn(10, limits, limits)
        self.assertEqual(limits[-1], 10, limits)
        self.assertTrue(all(b <= a for a, b in zip(limits, limits[1:])), f"a batch grew back: {limits}")
        self.assertRegex(r.err, r"lock_time 0.01 ms: batch \d+'s delete held its rows [0-9.]+ ms for \d+ root\(s\); "
                                r"the next batches take 10 root\(s\) \(the fewest it takes\)")
        self.assertGreater(summary["batches"], 100)
        locks = summary["row_locks"]
        self.assertEqual(locks["transactions"], summary["batches"])
        self.assertGreater(locks["max_ms"], 0)
        self.assertGreaterEqual(locks["max_ms"], locks["mean_ms"])

    def test_the_flag_overrides_the_config(self):
        _, _, summary, limits = self.archive("flag", 0, "--lock-time", "0.00001")
        self.assertEqual(limits[-1], 10, limits)
        self.assertGreater(summary["batches"], 100)

    def test_lock_time_0_keeps_batch_size(self):
        _, r, summary, limits = self.archive("off", None)
        self.assertEqual(set(limits), {100}, limits)
        self.assertEqual(summary["batches"], 15)
        self.assertNotIn("lock_time", r.err)
        self.assertEqual(summary["row_locks"]["transactions"], 15)

    def test_bad_values_exit_2_and_touch_nothing(self):
        sc = Scenario(self, "bad")
        table(sc)
        before = sc.snapshot(["p"])
        cfg = sc.config({"j": JOB}, processing={"lock_time": 61})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("lock_time", r.err)
        self.assertIn("60", r.err)
        r = sc.job("archive", sc.config({"j": JOB}), "j", "--lock-time", "-1")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--lock-time", r.err)
        r = sc.job("archive", sc.config({"j": JOB}), env={"GOARCHIVE_LOCK_TIME": "soon"})
        self.assertEqual(r.rc, 2, r)
        self.assertIn("GOARCHIVE_LOCK_TIME", r.err)
        self.assertEqual(sc.count("destination", "p"), 0)
        self.assertEqual(sc.count("source", "p"), ROWS)
        self.assertEqual(sc.rows("source", "p"), before["p"])
        self.assertFalse(sc.job_schema_exists())


if __name__ == "__main__":
    gatest.require_env()
    unittest.main()
