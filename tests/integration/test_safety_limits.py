#!/usr/bin/python3
"""Statement sizes and the end of a run (safety item 10): every statement fits the server's max_allowed_packet, a
single row too large for it is refused by name, and the end of a run is recorded whatever the error."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


class LimitsTest(unittest.TestCase):
    def setUp(self):
        # Both servers' value as it was, restored whatever a test set (never a hard-coded value).
        self.packet = {s: gatest.sql(s, "SELECT @@global.max_allowed_packet")[0][0] for s in ("source", "destination")}

    def tearDown(self):
        for server, packet in self.packet.items():
            gatest.sql(server, f"SET GLOBAL max_allowed_packet = {packet}")

    def test_row_larger_than_max_allowed_packet_is_refused_by_name_and_the_run_end_is_recorded(self):
        sc = Scenario(self, "bigrow")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, old TINYINT NOT NULL, b LONGBLOB) {INNODB}")
        sc.src("INSERT INTO p VALUES (1, 1, REPEAT('x', 1000)), (2, 1, REPEAT('y', 1500000)), (3, 1, 'z')")
        gatest.sql("destination", "SET GLOBAL max_allowed_packet = 1048576")
        cfg = sc.config({"j": {"root_table": "p", "where": "old = 1"}}, processing={"batch_size": 10})
        original = sc.snapshot(["p"])
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("the row p (id) = (2) is", r.err)
        self.assertIn("more than the destination's max_allowed_packet (1048576 bytes)", r.err)
        self.assertIn("Raise max_allowed_packet on the destination", r.err)
        self.assertEqual(sc.count("destination", "p"), 0, "nothing of the batch is copied")
        sc.assert_invariant(original)
        status = gatest.sql("destination", f"SELECT status, exit_code FROM `{sc.job_schema}`.runs ORDER BY id DESC "
                                           "LIMIT 1")
        self.assertEqual(tuple(status[0]), ("failed", 1), "the end of the run is recorded")

    def test_key_lists_are_cut_to_fit_a_small_max_allowed_packet(self):
        # 1000 roots with 200-byte keys and 300-byte payloads, 100 per batch: one INSERT of a batch would be about
        # 60 kB and a packet holds 64 kB: the statements are cut to half a packet.
        sc = Scenario(self, "smallpkt")
        sc.both(f"CREATE TABLE p (k VARCHAR(250) PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(300)) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_k VARCHAR(250) NOT NULL, KEY (p_k)) {INNODB}")
        sc.src("INSERT INTO p SELECT CONCAT(LPAD(seq, 6, '0'), REPEAT('k', 190)), 1, REPEAT('v', 300) "
               "FROM seq_1_to_1000")
        sc.src("INSERT INTO c SELECT seq, CONCAT(LPAD(seq, 6, '0'), REPEAT('k', 190)) FROM seq_1_to_1000")
        original = sc.snapshot(["p", "c"])
        gatest.sql("destination", "SET GLOBAL max_allowed_packet = 65536")
        gatest.sql("source", "SET GLOBAL max_allowed_packet = 65536")
        cfg = sc.config({"j": {"root_table": "p", "where": "old = 1",
                               "relations": [{"table": "c", "foreign_key": "p_k"}]}},
                        processing={"batch_size": 100})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "p"), 1000)
        self.assertEqual(sc.count("source", "p"), 0)
        self.tearDown()   # the checks' own sessions read with the servers' usual packet
        sc.assert_invariant(original, [("c", ["p_k"], "p", ["k"])])

    def test_batch_keys_larger_than_max_allowed_packet_are_refused_with_the_way_out(self):
        sc = Scenario(self, "bigkeys")
        sc.both(f"CREATE TABLE p (k VARCHAR(250) PRIMARY KEY, old TINYINT NOT NULL) {INNODB}")
        sc.src("INSERT INTO p SELECT CONCAT(LPAD(seq, 6, '0'), REPEAT('k', 240)), 1 FROM seq_1_to_400")
        gatest.sql("destination", "SET GLOBAL max_allowed_packet = 131072")
        cfg = sc.config({"j": {"root_table": "p", "where": "old = 1"}}, processing={"batch_size": 400})
        original = sc.snapshot(["p"])
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("the root keys of a batch of 400 roots of table p take", r.err)
        self.assertIn("Lower batch_size", r.err)
        sc.assert_invariant(original)


if __name__ == "__main__":
    unittest.main()
