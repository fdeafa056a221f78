#!/usr/bin/python3
"""The shop tree archives end to end: counts move, the invariant holds, the rerun finds nothing to do."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenario import SHOP_JOB, SHOP_RELATIONS, SHOP_TABLES, Scenario, load_shop  # noqa: E402

class EngineSmokeTest(unittest.TestCase):
    def test_shop_archive_then_nothing_to_do(self):
        sc = Scenario(self, "smoke")
        load_shop(sc)
        before = sc.snapshot(SHOP_TABLES)
        cfg = sc.config({"old": SHOP_JOB}, processing={"batch_size": 40}, destination={"foreign_key_checks": False})
        r = sc.run("archive", "-c", cfg, "-j", "old", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("source", "orders"), 150)
        self.assertEqual(sc.count("destination", "orders"), 150)
        self.assertEqual(sc.count("destination", "order_items") + sc.count("source", "order_items"),
                         len(before["order_items"]))
        sc.assert_invariant(before, SHOP_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)
        r = sc.run("archive", "-c", cfg, "-j", "old", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("nothing to do", r.out)


if __name__ == "__main__":
    unittest.main()
