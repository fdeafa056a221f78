#!/usr/bin/python3
"""A job that forgot a child relation (issue 36, part 5): every root is blocked by a RESTRICT reference from
outside the job. The run says so in its one-line reason, warns for the first ten roots only (not once per root of a
million-root job), and the JSON summary names every one of them (up to 1000)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


class BlockedSummaryTest(unittest.TestCase):
    def test_every_root_blocked_is_said_once_and_listed_in_json(self):
        # A build that logs a warning per root shows 30 such lines; one whose reason says "finished" alone hides
        # that nothing moved; a JSON summary cut at 20 lists 20.
        sc = Scenario(self, "blockedall")
        sc.both(f"CREATE TABLE inv (id INT PRIMARY KEY, v VARCHAR(20)) {INNODB}")
        sc.src(f"CREATE TABLE line (id INT PRIMARY KEY, inv_id INT NOT NULL, FOREIGN KEY (inv_id) REFERENCES inv (id)) "
               f"{INNODB}")
        sc.src("INSERT INTO inv SELECT seq, CONCAT('i', seq) FROM seq_1_to_30")
        sc.src("INSERT INTO line SELECT seq, seq FROM seq_1_to_30")
        before = sc.snapshot(["inv"])
        cfg = sc.config({"j": {"root_table": "inv", "where": "1=1"}}, processing={"batch_size": 7})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err.count("root left in the source (blocked)"), 10, r.err)
        self.assertIn("finished; nothing moved: all 30 root(s) blocked and left in the source", r.out)
        self.assertIn("... and 10 more (the JSON summary lists up to 1000)", r.out)
        self.assertEqual(sc.snapshot(["inv"]), before)
        self.assertEqual(sc.count("destination", "inv"), 0)
        r = sc.job("archive", cfg, "j", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        summary = json.loads(r.out)
        self.assertEqual(summary["roots_blocked"], 30)
        self.assertEqual(len(summary["blocked"]), 30)
        self.assertIn("nothing moved", summary["reason"])


if __name__ == "__main__":
    unittest.main()
