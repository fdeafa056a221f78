#!/usr/bin/python3
"""Replication gating (issue 6) with the real GTID replica of scripts/servers.sh: stop its SQL thread -> an archive
holds (and says why) -> start it -> the same run finishes; max_hold -> exit 4, nothing lost, the rerun finishes;
copy-only is not gated; an unreachable replica holds too.

Every test that stops the replica's SQL thread starts it again in a cleanup, also when it fails.
"""

import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opkit import (SHOP_RELATIONS, Background, counts, free_port, gatest, registry_runs,  # noqa: E402
                   replication_block, shop, start_sql_thread, stop_sql_thread, summary_head, wait_until)
from test_safety_live import Paused  # noqa: E402


def args(cmd, cfg, *extra):
    return [cmd, "-c", cfg, "-j", "j", *extra]


class ReplicationGateTest(unittest.TestCase):
    def setUp(self):
        # A replica left stopped by an earlier, killed run would make every test here meaningless.
        if gatest.replica_status().get("Slave_SQL_Running") != "Yes":
            start_sql_thread()

    def test_stopped_sql_thread_holds_then_same_run_finishes(self):
        sc, cfg, before, expected = shop(self, "gate", processing={"batch_size": 40},
                                         extra=replication_block(check_interval=0.5))
        src0 = counts(sc, "source")
        stop_sql_thread(self)
        # On a terminal, so that the progress display's state can be checked too.
        p = Background(args("archive", cfg), pty=True).kill_on_cleanup(self)
        wait_until(lambda: "held" in p.err or not p.running(), 20, what="the run to hold")
        time.sleep(2)
        self.assertTrue(p.running(), f"the run ended while the replica's SQL thread was stopped:\n{p}")
        self.assertEqual(counts(sc, "source"), src0, "rows were deleted from the source while held")
        held = [l for l in p.err.splitlines() if "held" in l]
        self.assertTrue(any(re.search(r"SQL thread", l) for l in held), "\n".join(held[:5]))
        self.assertGreaterEqual(len([l for l in held if "warn" in l]), 2, "re-checked every check_interval")
        self.assertRegex(p.err, r"\r(?!\n)(\x1b\[K)?held: ", "the progress display shows the held state")
        start_sql_thread()
        rc = p.wait(60)
        self.assertEqual(rc, 0, p)
        _, _, run_id, reason, _ = summary_head(p.out)
        self.assertEqual(reason, "finished")
        self.assertEqual(len(registry_runs(sc)), 1, "the same run finished")
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        sc.assert_invariant(before, SHOP_RELATIONS)
        # The summary accounts for the time held (> 2 s) in its text and in the registry.
        m = re.search(r"held (\d+(?:\.\d+)?)s", p.out)
        self.assertTrue(m and float(m.group(1)) >= 2, f"held time in the summary: {p.out}")
        self.assertGreaterEqual(registry_runs(sc)[0][4]["phase_seconds"]["held"], 2)

    def test_max_hold_exit_4_then_rerun_finishes(self):
        sc, cfg, before, expected = shop(self, "gatemax", processing={"batch_size": 40},
                                         extra=replication_block(check_interval=0.5, max_hold=2))
        src0, dst0 = counts(sc, "source"), counts(sc, "destination")
        stop_sql_thread(self)
        t0 = time.time()
        r = sc.run(*args("archive", cfg, "--no-progress"), timeout=60)
        took = time.time() - t0
        self.assertEqual(r.rc, 4, r)
        self.assertLess(took, 15, r)
        self.assertIn("SQL thread", r.err)
        self.assertRegex(r.err, r"(?i)hold")
        self.assertEqual(counts(sc, "source"), src0)
        self.assertEqual(counts(sc, "destination"), dst0)
        self.assertEqual(sc.unfinished(), 0)
        runs = registry_runs(sc)
        self.assertEqual(runs[-1][2], 4, runs)
        sc.assert_invariant(before, SHOP_RELATIONS)
        start_sql_thread()
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_a_hold_mid_run_records_the_batches_deleted_before_it(self):
        """The SQL thread stops once batch 3 is copied: the gate before its delete holds past max_hold and the run
        exits 4. The batches deleted before it are recorded done on the way out, so that only batch 3, copied and
        not deleted, is left to the rerun's recovery; the rerun finishes with every row in one place."""
        sc, cfg, before, expected = shop(self, "gatemid", processing={"batch_size": 40},
                                         extra=replication_block(check_interval=0.5, max_hold=2))
        self.assertGreater(expected["orders"], 3 * 40)
        run = Paused(self, sc, "after_copy_commit:3", *args("archive", cfg))
        try:
            run.wait()
            stop_sql_thread(self)
        finally:
            run.release()
        r = run.finish()
        self.assertEqual(r.rc, 4, r)
        self.assertEqual(sc.count("destination", "orders"), 3 * 40)
        self.assertEqual(sc.unfinished(), 40, "batches 1 and 2 were deleted before the hold: they are done")
        start_sql_thread()
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        sc.assert_invariant(before, SHOP_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_copy_only_is_not_gated(self):
        sc, cfg, before, expected = shop(self, "gatecopy", processing={"batch_size": 40},
                                         extra=replication_block(check_interval=0.5, max_hold=2))
        src0 = counts(sc, "source")
        stop_sql_thread(self)
        r = sc.run(*args("copy-only", cfg, "--no-progress"), timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("held", r.err)
        self.assertEqual(counts(sc, "source"), src0)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])

    def test_unreachable_replica_holds_until_max_hold(self):
        sc, cfg, before, expected = shop(self, "gatedown", processing={"batch_size": 40},
                                         extra=replication_block(port=free_port(), check_interval=0.5, max_hold=2))
        src0, dst0 = counts(sc, "source"), counts(sc, "destination")
        r = sc.run(*args("archive", cfg, "--no-progress"), timeout=60)
        self.assertEqual(r.rc, 4, r)
        self.assertIn("unreachable", r.err)
        self.assertEqual(counts(sc, "source"), src0)
        self.assertEqual(counts(sc, "destination"), dst0)
        # The monitor password is not in the error either.
        self.assertNotIn("monitor-pw", r.err + r.out)

    def test_healthy_replica_passes_the_gate(self):
        # A running, caught-up replica (lag 0) lets the run through even with max_lag_seconds = 0.
        sc, cfg, before, expected = shop(self, "gatelag", processing={"batch_size": 40},
                                         extra=replication_block(check_interval=0.5, max_lag=0))
        gatest.wait_replica_caught_up()
        r = sc.run(*args("archive", cfg, "--no-progress"), timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])


if __name__ == "__main__":
    unittest.main()
