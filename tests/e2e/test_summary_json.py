#!/usr/bin/python3
"""`--format json` on archive, copy-only and purge: stdout is one JSON object, the run's summary (the same the
registry stores), whatever happened: a finished run, and a refusal before the run started (exit code and message)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


class SummaryJsonTest(unittest.TestCase):
    def test_a_run_prints_one_json_object(self):
        # Text on stdout (the table) or a second object would not parse as one JSON document.
        sc = Scenario(self, "sumjson")
        sc.both(f"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)) {INNODB}")
        sc.src("INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_1_to_20")
        before = sc.snapshot(["t"])
        cfg = sc.config({"j": {"root_table": "t", "where": "id <= 7"}}, processing={"batch_size": 3})
        r = sc.job("archive", cfg, "j", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        summary = json.loads(r.out)
        self.assertEqual((summary["job"], summary["mode"], summary["exit_code"]), ("j", "archive", 0))
        self.assertEqual([(t["table"], t["copied"], t["deleted"]) for t in summary["tables"]], [("t", 7, 7)])
        self.assertEqual((summary["batches"], summary["roots_done"]), (3, 7))
        self.assertGreater(summary["run_id"], 0)
        sc.assert_invariant(before)

    def test_a_refusal_prints_one_json_object_with_its_exit_code(self):
        sc = Scenario(self, "sumjsonbad")
        cfg = sc.config({"j": {"root_table": "missing_table", "where": "1=1"}})
        r = sc.job("copy-only", cfg, "j", "--format", "json")
        self.assertIn(r.rc, (1, 2), r)
        summary = json.loads(r.out)
        self.assertEqual((summary["job"], summary["mode"], summary["exit_code"]), ("j", "copy-only", r.rc))
        self.assertIn("missing_table", summary["reason"])
        self.assertIn("missing_table", r.err, "the refusal is still on stderr")


if __name__ == "__main__":
    unittest.main()
