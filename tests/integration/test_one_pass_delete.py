#!/usr/bin/python3
"""The source delete in one pass on MariaDB (goarchive(1), THE PIPELINE): DELETE ... RETURNING, child-first, the
children through their parent rows' keys and the roots WHERE <keys> AND (<where>), no locked re-read; the batch goes
only if what the deletes returned is exactly what was copied. Anything else rolls back to a savepoint and the batch
is decided root by root under locks, whose decision replaces the first one. Trees only when every relation is a
foreign key in the database that restricts deletes.
Each test asserts the rows on both servers, the exit code, the statements in the source's general log, and ends
with the data invariant."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402
from test_key_lists import GeneralLog  # noqa: E402
from test_safety_live import JOB as TREE_JOB, RELATIONS, TABLES, Paused, tree  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
JOB = {"root_table": "p", "where": "old = 1"}


def table(sc, key="int", rows=8):
    """p: ROWS rows, `old` = 1 on odd numbers; KEY int (ids 1..ROWS) or varchar ('k01'..)."""
    col = "id INT" if key == "int" else "id VARCHAR(12)"
    sc.both(f"CREATE TABLE p ({col} PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {INNODB}")
    val = "seq" if key == "int" else "CONCAT('k', LPAD(seq, 2, '0'))"
    sc.src(f"INSERT INTO p SELECT {val}, seq % 2, CONCAT('p', seq) FROM seq_1_to_{rows}")


def app(sc, stmt):
    return gatest.sql("source", stmt, db=sc.src_db)


class OnePassDeleteTest(unittest.TestCase):
    def paused_write(self, sc, cfg, write, env=None, point="after_copy_commit:1"):
        run = Paused(self, sc, point, "archive", "-c", cfg, "-j", "j", env=env)
        try:
            run.wait()
            write()
        finally:
            run.release()
        return run.finish()

    def deletes_and_locked_reads(self, sc, log, t="p"):
        on_t = f"`{sc.src_db}`.`{t}`"
        stmts = [s for s in log.statements(on_t) if "general_log" not in s]
        return ([s for s in stmts if s.split("*/")[-1].lstrip().startswith("DELETE")],
                [s for s in stmts if s.rstrip().endswith("FOR UPDATE")])

    def one_pass(self, key, want):
        sc = Scenario(self, f"onepass_{key}")
        table(sc, key)
        before = sc.snapshot(["p"])
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        deletes, locked = self.deletes_and_locked_reads(sc, log)
        self.assertEqual(len(deletes), 1, deletes)
        self.assertIn(want, deletes[0])
        self.assertTrue(deletes[0].endswith(" RETURNING `id`, `old`, `v`"), deletes)
        self.assertEqual(locked, [], "a locked re-read of the roots")
        self.assertEqual(sc.count("destination", "p"), 4)
        self.assertEqual(sc.count("source", "p"), 4)
        sc.assert_invariant(before)
        self.assertEqual(sc.unfinished(), 0)

    def test_unchanged_batch_of_integer_keys_goes_in_one_pass(self):
        # 1, 3, 5, 7 are no run: exact keys.
        self.one_pass("int", "WHERE (`id` IN (1,3,5,7)) AND (old = 1)")

    def test_unchanged_batch_of_string_keys_goes_in_one_pass(self):
        self.one_pass("varchar", "WHERE (`id` IN ('k01','k03','k05','k07')) AND (old = 1)")

    def test_unbroken_integer_run_goes_by_range_in_one_pass(self):
        sc = Scenario(self, "onepass_run")
        table(sc)
        sc.src("UPDATE p SET old = IF(id <= 4, 1, 0)")
        before = sc.snapshot(["p"])
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        deletes, locked = self.deletes_and_locked_reads(sc, log)
        self.assertEqual(len(deletes), 1, deletes)
        self.assertIn("WHERE (`id` BETWEEN 1 AND 4) AND (old = 1) ORDER BY `id` LIMIT 4 RETURNING", deletes[0])
        self.assertEqual(locked, [])
        self.assertEqual(sorted(k[0] for k in sc.rows("destination", "p")), [1, 2, 3, 4])
        sc.assert_invariant(before)

    def changed_after_copy(self, key, write, stays, message):
        """WRITE after the copy of the only batch: the one pass finds the difference, rolls back to its savepoint,
        and the locked re-read keeps STAYS (its archived copy removed); the others are archived."""
        sc = Scenario(self, f"changed_{key}")
        table(sc, key)
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = self.paused_write(sc, cfg, lambda: app(sc, write))
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out + r.err, message)
        latest = sc.snapshot(["p"])
        deletes, locked = self.deletes_and_locked_reads(sc, log)
        self.assertTrue(any(" RETURNING " in s for s in deletes), deletes)
        self.assertEqual(len(locked), 1, "the batch was not decided again under locks")
        src, dst = sc.rows("source", "p"), sc.rows("destination", "p")
        for k in stays:
            self.assertNotIn(k, dst, f"the archived copy of root {k} stayed")
        self.assertEqual(set(src) & set(dst), set(), "rows in both servers")
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(latest)
        return sc, cfg

    def test_root_changed_after_copy_stays_and_a_rerun_archives_its_current_version(self):
        sc, cfg = self.changed_after_copy("int", "UPDATE p SET v = 'NEW' WHERE id = 3", [(3,)],
                                          r"p \(id\) = \(3\) changed")
        self.assertEqual(sc.rows("source", "p")[(3,)], (3, 1, "NEW"))
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (5,), (7,)})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.rows("destination", "p")[(3,)], (3, 1, "NEW"))
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,), (8,)})

    def test_root_that_no_longer_matches_stays(self):
        sc, _ = self.changed_after_copy("varchar", "UPDATE p SET old = 0 WHERE id = 'k05'", [("k05",)],
                                        r"p \(id\) = \('k05'\) (changed|no longer matches `where`)")
        self.assertEqual(sc.rows("source", "p")[("k05",)], ("k05", 0, "p5"))
        self.assertEqual(set(sc.rows("destination", "p")), {("k01",), ("k03",), ("k07",)})

    def test_root_deleted_after_copy_is_in_neither_server(self):
        sc, _ = self.changed_after_copy("int", "DELETE FROM p WHERE id = 7", [(7,)], r"p \(id\) = \(7\) is gone")
        self.assertNotIn((7,), sc.rows("source", "p"))
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (3,), (5,)})

    def test_collation_equal_key_change_is_not_taken_for_the_copied_row(self):
        """'abc' becomes 'ABC' after the copy: under a _ci collation the delete's key 'abc' still matches it, and
        returns 'ABC', which is not the row copied; the batch is decided again under locks and 'ABC' stays."""
        sc = Scenario(self, "collation_one")
        ci = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
        sc.both(f"CREATE TABLE p (id VARCHAR(10) PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {ci}")
        sc.src("INSERT INTO p VALUES ('abb', 1, 'p1'), ('abc', 1, 'p2'), ('abd', 1, 'p3'), ('zzz', 0, 'live')")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        log = GeneralLog(self, "source")
        r = self.paused_write(sc, cfg, lambda: app(sc, "UPDATE p SET id = 'ABC' WHERE id = 'abc'"))
        self.assertEqual(r.rc, 0, r)
        deletes, locked = self.deletes_and_locked_reads(sc, log)
        self.assertIn(" RETURNING ", deletes[0])
        self.assertEqual(len(locked), 1, "the batch was not decided again under locks")
        self.assertIn("changed in the source after their copy and were left there for the next run", r.out + r.err)
        self.assertEqual(sorted(sc.raw_rows("source", "p")), [(b"ABC",), (b"zzz",)])
        self.assertEqual(sorted(sc.raw_rows("destination", "p")), [(b"abb",), (b"abd",)])
        self.assertEqual(sc.unfinished(), 0)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.raw_rows("destination", "p")[(b"ABC",)], (b"ABC", b"1", b"p2"))
        self.assertEqual(sorted(sc.raw_rows("source", "p")), [(b"zzz",)])

    def test_kill_after_the_decision_that_replaced_the_first_one(self):
        """Root 3 changes after the copy: the one pass records "every root goes", rolls back, and the locked re-read
        records "root 3 stays"; killed right after that second decision, before the source commit. The rerun finds
        the commit proof absent (the delete rolled back), archives every cold root, root 3 in its new version."""
        sc = Scenario(self, "second_decision")
        table(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = self.paused_write(sc, cfg, lambda: app(sc, "UPDATE p SET v = 'NEW' WHERE id = 3"),
                              env={"GOARCHIVE_FAULT": "after_mark_deleting:2"})
        self.assertEqual(r.rc, -9, r)
        latest = sc.snapshot(["p"])
        self.assertEqual(sc.count("source", "p"), 8, "the killed delete transaction was not rolled back")
        stayed = gatest.sql("destination", f"SELECT COUNT(*) FROM {gatest.quote_ident(sc.job_schema)}.batch_stayed")
        self.assertEqual(stayed[0][0], 1, "the second decision (root 3 stays) was not recorded")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("the interrupted delete rolled back (its commit proof is not in the source)", r.err)
        self.assertEqual(sc.rows("destination", "p")[(3,)], (3, 1, "NEW"))
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,), (8,)})
        sc.assert_invariant(latest)
        self.assertEqual(sc.unfinished(), 0)

    def test_kill_after_the_one_pass_decision_and_at_its_commit(self):
        for point, says in (("after_mark_deleting:1", "the interrupted delete rolled back"),
                            ("after_delete_commit:1", "the interrupted delete committed")):
            with self.subTest(point=point):
                sc = Scenario(self, "onepass_kill")
                table(sc)
                before = sc.snapshot(["p"])
                cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
                r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": point})
                self.assertEqual(r.rc, -9, r)
                r = sc.job("archive", cfg)
                self.assertEqual(r.rc, 0, r)
                self.assertIn(says, r.err)
                self.assertEqual(set(sc.rows("destination", "p")), {(1,), (3,), (5,), (7,)})
                self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,), (8,)})
                sc.assert_invariant(before)
                self.assertEqual(sc.unfinished(), 0)


    # -- trees ----------------------------------------------------------------------------------------------------
    def test_unchanged_tree_goes_in_one_pass_through_the_parents_keys(self):
        sc = Scenario(self, "tree_onepass")
        tree(sc)
        before = sc.snapshot(TABLES)
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": TREE_JOB}, processing={"batch_size": 10})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        g, g_locked = self.deletes_and_locked_reads(sc, log, "g")
        c, c_locked = self.deletes_and_locked_reads(sc, log, "c")
        p, p_locked = self.deletes_and_locked_reads(sc, log, "p")
        self.assertEqual(g, [f"/* goarchive job=j run=1 */ DELETE FROM `{sc.src_db}`.`g` WHERE `c_id` IN "
                             "(1,2,3,7,8,9,13,14,15) RETURNING `id`, `c_id`, `v`"])
        self.assertEqual(c, [f"/* goarchive job=j run=1 */ DELETE FROM `{sc.src_db}`.`c` WHERE `p_id` IN (1,3,5) "
                             "RETURNING `id`, `p_id`, `v`"])
        self.assertEqual(len(p), 1, p)
        self.assertIn("WHERE (`id` IN (1,3,5)) AND (old = 1) RETURNING", p[0])
        self.assertEqual(g_locked + c_locked + p_locked, [], "a locked re-read")
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (3,), (5,)})
        self.assertEqual(sc.count("destination", "g"), 18)
        sc.assert_invariant(before, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def tree_write(self, name, write, point="after_copy_commit:1"):
        sc = Scenario(self, name)
        tree(sc)
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": TREE_JOB}, processing={"batch_size": 10})
        r = self.paused_write(sc, cfg, lambda: app(sc, write), point=point)
        self.assertEqual(r.rc, 0, r)
        latest = sc.snapshot(TABLES)
        _, locked = self.deletes_and_locked_reads(sc, log)
        self.assertEqual(len(locked), 1, "the batch was not decided again under locks")
        self.assertIn("changed in the source after their copy and were left there for the next run", r.out + r.err)
        self.assertIn((3,), sc.rows("source", "p"))
        self.assertNotIn((3,), sc.rows("destination", "p"))
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (5,)})
        for t in TABLES:
            self.assertEqual(set(sc.rows("source", t)) & set(sc.rows("destination", t)), set(), f"{t}: in both")
        sc.assert_invariant(latest, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)
        return sc, r

    def test_child_added_after_the_copy_is_seen_by_the_delete_through_the_parents_keys(self):
        self.tree_write("tree_added", "INSERT INTO c VALUES (100, 3, 'late')")
        # (the one pass deleted and returned child 100, which was not copied, and rolled back)

    def test_grandchild_changed_after_the_copy_keeps_its_root(self):
        self.tree_write("tree_changed", "UPDATE g SET v = 'NEW' WHERE id = 15")

    def test_child_added_under_a_root_after_its_children_were_deleted_fails_the_roots_delete(self):
        """Paused after the one pass deleted g and c: a child inserted under root 3 now finds its parent unlocked.
        The roots' delete then fails on the foreign key (the row is referenced), the pass rolls back to its
        savepoint and root 3 stays with its tree, the new child under it."""
        sc, r = self.tree_write("tree_refd", "INSERT INTO c VALUES (100, 3, 'late')", point="after_one_pass_table:2")
        self.assertEqual(sc.rows("source", "c")[(100,)], (100, 3, "late"))

    def test_relation_only_in_the_config_or_cascading_is_decided_under_locks(self):
        for name, fk, on_delete in (("tree_cfg", False, ""), ("tree_cascade", True, "ON DELETE CASCADE")):
            with self.subTest(name=name):
                sc = Scenario(self, name)
                tree(sc, fk=fk, on_update=on_delete)
                before = sc.snapshot(TABLES)
                log = GeneralLog(self, "source")
                cfg = sc.config({"j": TREE_JOB}, processing={"batch_size": 10})
                r = sc.job("archive", cfg)
                self.assertEqual(r.rc, 0, r)
                deletes, locked = self.deletes_and_locked_reads(sc, log)
                self.assertEqual(len(locked), 1, locked)
                self.assertFalse([s for s in deletes if " RETURNING " in s], deletes)
                self.assertEqual(set(sc.rows("destination", "p")), {(1,), (3,), (5,)})
                sc.assert_invariant(before, RELATIONS)


if __name__ == "__main__":
    unittest.main()
