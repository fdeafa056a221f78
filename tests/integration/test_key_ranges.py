#!/usr/bin/python3
"""Key ranges on the real server: a batch whose integer keys are an unbroken run is deleted with one
`BETWEEN lo AND hi ORDER BY key LIMIT n`, its roots are re-read under lock the same way, and its children are
read and verified by range. The range matches exactly the locked keys and never reads the row after the run, so an
application transaction holding that row does not make the delete wait; a batch with a gap goes by exact keys.
Each test checks the statements the engine sent (general log), the rows on both servers and the data invariant."""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402
from test_key_lists import GeneralLog  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
JOB = {"root_table": "p", "where": "old = 1", "relations": [{"table": "c", "foreign_key": "p_id"}]}
RELATIONS = [("c", ["p_id"], "p", ["id"])]


def schema(sc, rows, archived, missing=(), on_delete=""):
    """p (ids 1..ROWS except MISSING, `old` for ids <= ARCHIVED) with two children each in c (a real foreign key).
    Many more rows than a batch, as in production: on a tiny table the server scans instead of reading by key.
    The foreign key refuses a parent's delete (the one pass, returning_delete.h) unless ON_DELETE says otherwise
    (" ON DELETE CASCADE": every batch takes the locked re-read)."""
    sc.both(f"CREATE TABLE p (id BIGINT UNSIGNED PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {INNODB}")
    sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id BIGINT UNSIGNED NOT NULL, v VARCHAR(20), "
            f"FOREIGN KEY (p_id) REFERENCES p (id){on_delete}) {INNODB}")
    sc.src(f"INSERT INTO p SELECT seq, seq <= {archived}, CONCAT('p', seq) FROM seq_1_to_{rows}")
    sc.src(f"INSERT INTO c SELECT 2 * p.id + s.seq, p.id, CONCAT('c', s.seq) FROM p JOIN seq_0_to_1 s")
    for i in missing:
        sc.src("DELETE FROM c WHERE p_id = %s", (i,))
        sc.src("DELETE FROM p WHERE id = %s", (i,))
    sc.src("ANALYZE TABLE p, c")


class KeyRangeTest(unittest.TestCase):
    def hold_rows(self, sc, statements, seconds):
        """An application transaction that locks rows with STATEMENTS (SELECT .. FOR UPDATE) for SECONDS; returns
        its thread."""
        ready = threading.Event()

        def hold():
            conn = gatest.connect("source", sc.src_db)
            try:
                with conn.cursor() as cur:
                    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                    cur.execute("BEGIN")
                    for stmt in statements:
                        cur.execute(stmt)
                    ready.set()
                    time.sleep(seconds)
                    cur.execute("ROLLBACK")
            finally:
                conn.close()

        t = threading.Thread(target=hold)
        t.start()
        self.assertTrue(ready.wait(10), "the application transaction did not start")
        return t

    def run_holding_row_21(self, on_delete):
        """20 roots archived in batches of 10 while an application holds root 21 (the first kept one, right after
        the last batch) and its children locked for 15 s, longer than the run may take: a statement that read past
        its range would wait for them. Returns the scenario and the source's general log."""
        sc = Scenario(self, "keyrange")
        schema(sc, 3000, archived=20, on_delete=on_delete)
        before = sc.snapshot(["p", "c"])
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        holder = self.hold_rows(sc, ["SELECT * FROM p WHERE id = 21 FOR UPDATE",
                                       "SELECT * FROM c WHERE p_id = 21 FOR UPDATE"], 15)
        t0 = time.monotonic()
        r = sc.job("archive", cfg)
        took = time.monotonic() - t0
        holder.join()
        self.assertEqual(r.rc, 0, r)
        self.assertLess(took, 10, f"the run took {took:.1f}s: it waited for the application's lock on row 21")
        self.assertEqual(sorted(k[0] for k in sc.rows("destination", "p")), list(range(1, 21)))
        self.assertEqual(sc.count("source", "p"), 3000 - 20)
        self.assertEqual(sc.count("destination", "c"), 40)
        sc.assert_invariant(before, RELATIONS)
        return sc, log

    def test_a_guarded_tree_is_deleted_in_one_pass_by_range_without_waiting_for_the_row_after_it(self):
        # The foreign key refuses a parent's delete while a child references it: the roots are locked by range,
        # then each table is deleted child-first by range, returning what it deleted; no locked re-read.
        sc, log = self.run_holding_row_21("")
        deletes = log.statements("DELETE FROM `" + sc.src_db + "`.")
        for want in ("`c` WHERE (`id` BETWEEN 2 AND 21) ORDER BY `id` LIMIT 20 RETURNING `id`, `p_id`, `v`",
                     "`c` WHERE (`id` BETWEEN 22 AND 41) ORDER BY `id` LIMIT 20 RETURNING `id`, `p_id`, `v`",
                     "`p` WHERE (`id` BETWEEN 1 AND 10) AND (old = 1) ORDER BY `id` LIMIT 10 RETURNING `id`, `old`, `v`",
                     "`p` WHERE (`id` BETWEEN 11 AND 20) AND (old = 1) ORDER BY `id` LIMIT 10 RETURNING `id`, `old`, "
                     "`v`"):
            self.assertTrue(any(s.endswith(want) for s in deletes), f"{want} not in {deletes}")
        # (The one pass's metadata locks, a read of no rows, are no locked re-read.)
        locked = [s for s in log.statements("FOR UPDATE") if f"`{sc.src_db}`." in s and "general_log" not in s
                  and not s.rstrip().endswith(" LIMIT 0 FOR UPDATE")]
        # A column outside the key: a key-only locked read may scan the whole index (issue 34).
        want = (f"SELECT `old` FROM `{sc.src_db}`.`p` FORCE INDEX (PRIMARY) WHERE (`id` BETWEEN 11 AND 20) ORDER BY "
                "`id` LIMIT 10 FOR UPDATE")
        self.assertTrue(any(s.endswith(want) for s in locked), f"{want} not in {locked}")
        self.assertFalse([s for s in locked if f"`{sc.src_db}`.`c`" in s], "a locked re-read of the children")

    def test_unbroken_run_is_deleted_by_range_without_waiting_for_the_row_after_it(self):
        # ON DELETE CASCADE: the database would not refuse a parent's delete, so every batch is locked and re-read.
        sc, log = self.run_holding_row_21(" ON DELETE CASCADE")
        deletes = [s for s in log.statements("DELETE FROM") if "`p`" in s.split(" WHERE ")[0]]
        self.assertTrue(any("`id` BETWEEN 1 AND 10 ORDER BY `id` LIMIT 10" in s for s in deletes), deletes)
        self.assertTrue(any("`id` BETWEEN 11 AND 20 ORDER BY `id` LIMIT 10" in s for s in deletes), deletes)
        reads = log.statements("FROM `" + sc.src_db + "`.`c` FORCE INDEX (`p_id`) WHERE `p_id` BETWEEN")
        self.assertTrue(any("BETWEEN 1 AND 10" in s and "FOR UPDATE" not in s for s in reads), reads)
        # The locked re-read of the roots goes by range too, and stops at its n-th row (LIMIT n); the children's
        # locked read stays by exact keys: a locked range of unknown size would lock the index entry after it.
        locked = [s for s in log.statements("BETWEEN") if s.rstrip().endswith("FOR UPDATE")]
        self.assertTrue(any("`id` BETWEEN 11 AND 20 ORDER BY `id` LIMIT 10 FOR UPDATE" in s for s in locked), locked)
        self.assertFalse([s for s in locked if " LIMIT " not in s or "`c`" in s.split(" WHERE ")[0]], locked)

    def test_keys_with_a_gap_go_by_exact_key(self):
        for on_delete, last in (("", "(`id` BETWEEN 12 AND 13) AND (old = 1) ORDER BY `id` LIMIT 2"),
                                (" ON DELETE CASCADE", "`id` BETWEEN 12 AND 13 ORDER BY `id` LIMIT 2")):
            with self.subTest(on_delete=on_delete):
                self.gap_goes_by_exact_key(on_delete, last)

    def gap_goes_by_exact_key(self, on_delete, last):
        sc = Scenario(self, "keygap")
        ids = [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13]  # 4 is missing: the first batch of 10 is not a run
        schema(sc, 3000, archived=13, missing=[4], on_delete=on_delete)
        before = sc.snapshot(["p", "c"])
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        deletes = [s for s in log.statements("DELETE ") if f"`{sc.src_db}`.`p`" in s.split(" WHERE ")[0]]
        # The first batch, with the gap: by exact key (DELETE .. RETURNING's list, or the join on the primary key
        # after the locked re-read, issue 34).
        self.assertTrue(any("`id` IN (" in s or ("STRAIGHT_JOIN" in s and "`id` = k.k0" in s) for s in deletes), deletes)
        self.assertTrue(any(last in s for s in deletes), deletes)
        self.assertEqual(sc.count("source", "p"), 3000 - 13)
        self.assertEqual(sorted(k[0] for k in sc.rows("destination", "p")), ids)
        sc.assert_invariant(before, RELATIONS)
    def test_composite_integer_keys_go_by_range_per_leading_value(self):
        sc = Scenario(self, "keytenant")
        sc.both(f"CREATE TABLE t (tenant_id INT NOT NULL, id INT NOT NULL, v VARCHAR(20), "
                f"PRIMARY KEY (tenant_id, id)) {INNODB}")
        sc.src("INSERT INTO t SELECT 1 + s.seq DIV 1000, 1 + s.seq MOD 1000, 'x' FROM seq_0_to_2999 s")
        sc.src("ANALYZE TABLE t")
        before = sc.snapshot(["t"])
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": {"root_table": "t", "where": "id <= 10"}}, processing={"batch_size": 15})
        # Row (1, 11) comes right after tenant 1's run: a delete that read past its range would wait for it.
        holder = self.hold_rows(sc, ["SELECT * FROM t WHERE tenant_id = 1 AND id = 11 FOR UPDATE"], 15)
        t0 = time.monotonic()
        r = sc.job("archive", cfg)
        took = time.monotonic() - t0
        holder.join()
        self.assertEqual(r.rc, 0, r)
        self.assertLess(took, 10, f"the run took {took:.1f}s: it waited for the application's lock on (1, 11)")
        deletes = log.statements("DELETE FROM `" + sc.src_db + "`.`t`")
        # A job of one table deletes in one pass, returning what it deleted (no locked re-read), where `where`
        # still holds; the range still stops at its n-th row.
        for want in ("(`tenant_id` = 1 AND `id` BETWEEN 1 AND 10) AND (id <= 10) ORDER BY `tenant_id`, `id` LIMIT 10",
                     "(`tenant_id` = 2 AND `id` BETWEEN 1 AND 5) AND (id <= 10) ORDER BY `tenant_id`, `id` LIMIT 5",
                     "(`tenant_id` = 2 AND `id` BETWEEN 6 AND 10) AND (id <= 10) ORDER BY `tenant_id`, `id` LIMIT 5",
                     "(`tenant_id` = 3 AND `id` BETWEEN 1 AND 10) AND (id <= 10) ORDER BY `tenant_id`, `id` LIMIT 10"):
            self.assertTrue(any(want in s and s.endswith("RETURNING `tenant_id`, `id`, `v`") for s in deletes),
                            f"{want} not in {deletes}")
        locked = [s for s in log.statements("FOR UPDATE") if f"`{sc.src_db}`.`t`" in s and "general_log" not in s
                  and not s.rstrip().endswith(" LIMIT 0 FOR UPDATE")]
        self.assertFalse(locked, "a locked re-read of the roots")
        self.assertEqual(sc.count("destination", "t"), 30)
        self.assertEqual(sc.count("source", "t"), 2970)
        sc.assert_invariant(before)

    def string_keys(self, sc, rows):
        """u: ROWS rows with an MD5 text key, so that key order is unrelated to `grp` (1, 2 or 3, by seq % 10)."""
        sc.both(f"CREATE TABLE u (id CHAR(32) CHARACTER SET ascii PRIMARY KEY, grp TINYINT NOT NULL, v VARCHAR(20)) "
                f"{INNODB}")
        sc.src(f"INSERT INTO u SELECT MD5(seq), IF(seq % 10 < 8, 1, IF(seq % 10 = 8, 2, 3)), CONCAT('u', seq) "
               f"FROM seq_1_to_{rows}")
        sc.src("ANALYZE TABLE u")

    def test_string_keys_are_verified_by_range_and_rows_of_other_runs_are_skipped(self):
        # A first run archives grp 1 (80% of the rows, spread over the whole key space); the second run's
        # batches (grp 2) then find many rows of the first in their key range on the destination: the capped
        # range read skips them, and the batch rows beyond its cap are read by exact key. The third (grp 3)
        # archives the rest. Every row must arrive once, verified.
        sc = Scenario(self, "strverify")
        self.string_keys(sc, 2000)
        before = sc.snapshot(["u"])
        log = GeneralLog(self, "destination")
        for grp in (1, 2, 3):
            cfg = sc.config({"j": {"root_table": "u", "where": f"grp = {grp}"}}, processing={"batch_size": 50})
            r = sc.job("archive", cfg)
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(sc.count("source", "u"), sum(1 for v in before["u"].values() if v[1] > grp))
        reads = [s for s in log.statements("SELECT `id`, `grp`, `v` FROM") if "`u`" in s]
        ranged = [s for s in reads if "`id` >= '" in s and "ORDER BY `id` LIMIT 116" in s]
        by_key = [s for s in reads if "`id` IN (" in s]
        self.assertTrue(ranged, reads[:3])
        self.assertTrue(by_key, "no batch row was read by key after a range reached its cap")
        self.assertEqual(sc.count("source", "u"), 0)
        self.assertEqual(sc.rows("destination", "u"), before["u"])
        sc.assert_invariant(before, [])


if __name__ == "__main__":
    unittest.main()
