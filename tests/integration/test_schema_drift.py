#!/usr/bin/python3
"""Schema drift during a run (real-schema item 4): a source or destination table whose definition changes while a
run goes stops the run cleanly at the next batch boundary, with a message that names the table; no column is ever
silently lost, and every row is in exactly one server."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import BIN, Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
JOB = {"root_table": "p", "where": "old = 1", "relations": [{"table": "c", "foreign_key": "p_id"}]}


def tables(sc):
    sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {INNODB}")
    sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v VARCHAR(20), KEY (p_id)) {INNODB}")
    sc.src("INSERT INTO p SELECT seq, 1, CONCAT('p', seq) FROM seq_1_to_20")
    sc.src("INSERT INTO c SELECT seq, 1 + (seq - 1) DIV 2, CONCAT('c', seq) FROM seq_1_to_40")


class DriftTest(unittest.TestCase):
    def run_with_alter(self, server, alter, then=None, processing=None, after=None):
        sc = Scenario(self, "drift")
        tables(sc)
        cfg = sc.config({"j": JOB}, processing=processing or {"batch_size": 4})
        original = sc.snapshot(["p", "c"])
        pause = os.path.join(sc.tmp, "pause")
        open(pause, "w").close()
        env = dict(os.environ, GOARCHIVE_PAUSE=f"after_copy_commit:2:{pause}")
        proc = subprocess.Popen([BIN, "archive", "-c", cfg, "-j", "j", "--no-progress"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 60
            while not os.path.exists(pause + ".reached") and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(pause + ".reached"), "goarchive never reached the pause point")
            db = sc.src_db if server == "source" else sc.dst_db
            gatest.sql(server, f"ALTER TABLE {gatest.quote_ident(db)}.c {alter}")
            if then:
                then(sc)
        finally:
            os.unlink(pause)
        if after:
            after(sc)
        out, err = proc.communicate(timeout=60)
        return sc, original, proc.returncode, out, err, db

    def test_column_added_on_the_source_mid_run_stops_the_run(self):
        # The pause comes after the second batch's copy, before its delete: that batch was read and copied without
        # the new column. The application then writes the new column on every row still in the source; a delete
        # of those rows would lose those values, which the archive (without that column) does not hold.
        written = []

        def write_extra(sc):
            sc.src("UPDATE c SET extra = 42")
            written.extend(k[0] for k in sc.rows("source", "c"))

        sc, original, rc, out, err, db = self.run_with_alter("source", "ADD COLUMN extra INT NOT NULL DEFAULT 7",
                                                             write_extra)
        self.assertEqual(rc, 1, out + err)
        self.assertTrue(written)
        src_now = sc.rows("source", "c")
        for k in written:
            self.assertIn((k,), src_now, f"c {k} was deleted after the column was added: its extra = 42 is lost")
            self.assertEqual(src_now[(k,)][3], 42)
        self.assertIn(f"the definition of source table {db}.c changed during the run", out + err)
        self.assertIn("the run stopped cleanly at a batch boundary", out + err)
        moved = set(sc.rows("destination", "p"))
        self.assertTrue(moved and len(moved) < 20, "the first batches moved, the rest stayed")
        # Every original row is in exactly one server; the source's rows carry the new column now.
        src_c, dst_c = sc.rows("source", "c"), sc.rows("destination", "c")
        for k, row in original["c"].items():
            self.assertTrue((k in src_c) != (k in dst_c), f"c {k} in both or neither")
            if k in src_c:
                self.assertEqual(src_c[k][:3], row)
            else:
                self.assertEqual(dst_c[k], row)
        self.assertEqual(sc.unfinished(), 0, "the run ended at a boundary with nothing half-done")

    def test_column_dropped_on_the_destination_mid_run_stops_the_run(self):
        sc, original, rc, out, err, db = self.run_with_alter("destination", "DROP COLUMN v")
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"the definition of destination table {db}.c changed during the run", out + err)
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(original.only("p"))
        # c lost its column v on the destination: each row in exactly one server, the archived ones with their
        # other columns as they were, the others unchanged.
        src_c, dst_c = sc.rows("source", "c"), sc.rows("destination", "c")
        self.assertTrue(dst_c, "no batch was archived before the change")
        for k, row in original["c"].items():
            self.assertTrue((k in src_c) != (k in dst_c), f"c {k} in both or neither")
            self.assertEqual(src_c[k] if k in src_c else dst_c[k], row if k in src_c else row[:2], f"c {k}")

    def test_table_dropped_on_the_destination_mid_run_stops_the_run(self):
        def drop(sc):
            q = gatest.quote_ident(sc.dst_db)
            gatest.sql("destination", f"RENAME TABLE {q}.c TO {q}.c_gone")

        sc, original, rc, out, err, db = self.run_with_alter("destination", "COMMENT = 'going'", drop)
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"the definition of destination table {db}.c changed during the run", out + err)
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(original.only("p"))
        # c is c_gone on the destination now: each row in exactly one of the source's c and that table, unchanged.
        src_c = sc.rows("source", "c")
        gone = {tuple(r[:1]): tuple(r) for r in gatest.sql("destination", "SELECT * FROM c_gone", db=sc.dst_db)}
        self.assertTrue(gone, "no batch was archived before the change")
        for k, row in original["c"].items():
            self.assertTrue((k in src_c) != (k in gone), f"c {k} in both or neither")
            self.assertEqual(src_c.get(k, gone.get(k)), row, f"c {k}")

    # A check probes SHOW CREATE TABLE and reads information_schema only when a text is new (definitions.h): a
    # change that leaves every column as it was (an index, a default, a comment) must not stop the run, and a
    # column changed after such a change, once its texts are learnt, must still be found.
    SLOW = {"batch_size": 2, "sleep": 0.3}

    def other_changes(self, sc):
        gatest.sql("source", f"ALTER TABLE {gatest.quote_ident(sc.src_db)}.c ADD KEY k_v (v), "
                             "ALTER COLUMN v SET DEFAULT 'x'")
        gatest.sql("destination", f"ALTER TABLE {gatest.quote_ident(sc.dst_db)}.c ADD KEY k_v (v), "
                                  "COMMENT = 'archive'")

    def test_an_index_default_or_comment_changed_mid_run_does_not_stop_the_run(self):
        sc, original, rc, out, err, db = self.run_with_alter("source", "COMMENT = 'live'", self.other_changes,
                                                             processing=self.SLOW)
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("changed during the run", out + err)
        self.assertEqual(sc.rows("source", "p"), {})
        self.assertEqual(sc.rows("source", "c"), {})
        self.assertEqual(sc.rows("destination", "p"), original["p"])
        self.assertEqual(sc.rows("destination", "c"), original["c"])

    def test_a_column_added_after_other_changes_still_stops_the_run(self):
        written = []

        def add_column_later(sc):
            # Once a batch more has gone, both servers' checks have met the new texts and learnt them.
            at_pause = len(sc.rows("destination", "p"))
            deadline = time.time() + 30
            while len(sc.rows("destination", "p")) < at_pause + 4 and time.time() < deadline:
                time.sleep(0.05)
            self.assertLess(time.time(), deadline, "the run did not go on after the pause")
            gatest.sql("source", f"ALTER TABLE {gatest.quote_ident(sc.src_db)}.c ADD COLUMN extra INT NOT NULL "
                                 "DEFAULT 7")
            sc.src("UPDATE c SET extra = 42")
            written.extend(k[0] for k in sc.rows("source", "c"))

        sc, original, rc, out, err, db = self.run_with_alter("source", "COMMENT = 'live'", self.other_changes,
                                                             processing=self.SLOW, after=add_column_later)
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"the definition of source table {db}.c changed during the run", out + err)
        self.assertTrue(written, "rows were left in the source to write the new column on")
        src_c, dst_c = sc.rows("source", "c"), sc.rows("destination", "c")
        for k in written:
            self.assertIn((k,), src_c, f"c {k} was deleted after the column was added: its extra = 42 is lost")
            self.assertEqual(src_c[(k,)][3], 42)
        for k, row in original["c"].items():
            self.assertTrue((k in src_c) != (k in dst_c), f"c {k} in both or neither")
        self.assertEqual(sc.unfinished(), 0)


if __name__ == "__main__":
    unittest.main()
