#!/usr/bin/python3
"""The source delete of a job of one table on MariaDB: one pass of DELETE ... WHERE <keys> AND (<where>) RETURNING,
no locked re-read, and the batch goes only if what the deletes returned is exactly what was copied. Anything else
rolls back to a savepoint and the batch is decided root by root under locks, whose decision replaces the first one.
Each test asserts the rows on both servers, the exit code, the statements in the source's general log, and ends
with the data invariant."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402
from test_key_lists import GeneralLog  # noqa: E402
from test_safety_live import paused_write  # noqa: E402

# The one pass takes the tables' metadata locks (for writing) with a read of no rows before any row lock:
# not a locked re-read.
METADATA_LOCK = " LIMIT 0 FOR UPDATE"

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
JOB = {"root_table": "p", "where": "old = 1"}


def table(sc, key="int", rows=8):
    """p: ROWS rows, `old` = 1 on odd numbers; KEY int (ids 1..ROWS) or varchar ('k01'..)."""
    col = "id INT" if key == "int" else "id VARCHAR(12)"
    sc.both(f"CREATE TABLE p ({col} PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {INNODB}")
    val = "seq" if key == "int" else "CONCAT('k', LPAD(seq, 2, '0'))"
    sc.src(f"INSERT INTO p SELECT {val}, seq % 2, CONCAT('p', seq) FROM seq_1_to_{rows}")


def deletes_and_locked_reads(sc, log, table):
    """The source's DELETEs of TABLE and its locked re-reads (not the metadata locks), from the general log."""
    stmts = [s for s in log.statements(f"`{sc.src_db}`.`{table}`") if "general_log" not in s]
    return ([s for s in stmts if s.split("*/")[-1].lstrip().startswith("DELETE")],
            [s for s in stmts if s.rstrip().endswith("FOR UPDATE") and not s.rstrip().endswith(METADATA_LOCK)])


def app(sc, stmt):
    return gatest.sql("source", stmt, db=sc.src_db)


class SingleTableDeleteTest(unittest.TestCase):
    def paused_write(self, sc, cfg, write, env=None):
        return paused_write(self, sc, cfg, "after_copy_commit:1", write, env=env)

    def deletes_and_locked_reads(self, sc, log):
        return deletes_and_locked_reads(sc, log, "p")

    def one_pass(self, key, want, prepare=None):
        """Archives the 4 cold rows of p (KEY int or varchar, PREPARE(sc) run before) in one batch; asserts one
        DELETE holding WANT with RETURNING, no locked re-read, and the invariant. Returns the Scenario."""
        sc = Scenario(self, f"onepass_{key}")
        table(sc, key)
        if prepare:
            prepare(sc)
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
        return sc

    def test_unchanged_batch_of_integer_keys_goes_in_one_pass(self):
        # 1, 3, 5, 7 are no run: exact keys.
        self.one_pass("int", "WHERE (`id` IN (1,3,5,7)) AND (old = 1)")

    def test_unchanged_batch_of_string_keys_goes_in_one_pass(self):
        self.one_pass("varchar", "WHERE (`id` IN ('k01','k03','k05','k07')) AND (old = 1)")

    def test_unbroken_integer_run_goes_by_range_in_one_pass(self):
        sc = self.one_pass("int", "WHERE (`id` BETWEEN 1 AND 4) AND (old = 1) ORDER BY `id` LIMIT 4 RETURNING",
                           prepare=lambda sc: sc.src("UPDATE p SET old = IF(id <= 4, 1, 0)"))
        self.assertEqual(sorted(k[0] for k in sc.rows("destination", "p")), [1, 2, 3, 4])

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


class PurgeOnePassTest(unittest.TestCase):
    """purge takes the same one pass: the batch's rows go in one DELETE .. RETURNING of their keys alone when those
    are exactly the keys its plain read found (issue 34: a log table's purge without the locked re-read; a purge
    deletes every root that still matches `where`, changed or not); anything else rolls back to the savepoint and
    the locked re-read deletes the roots that still match `where`."""

    def assert_purged(self, sc, before, gone, written):
        """The keys GONE are in neither server; every other row of BEFORE is in the source alone, with the stored
        bytes it had (each server's own checksums) unless the test WRITTEN it."""
        src = gatest.stored_checksums("source", sc.src_db, "p")
        self.assertEqual(sc.count("destination", "p"), 0, "purge wrote the archive")
        for key, sha in before.stored["p"].items():
            if int(bytes.fromhex(key).decode()) in gone:  # the hex of the id as text
                self.assertNotIn(key, src, f"p row {key} was not purged")
            else:
                self.assertIn(key, src, f"p row {key} was purged")
                if int(bytes.fromhex(key).decode()) not in written:
                    self.assertEqual(src[key], sha, f"p row {key}: its stored bytes changed")
        self.assertEqual(sc.unfinished(), 0)

    def purge_with(self, write, gone, locked_reads, written=()):
        """purge of p (ids 1..8, the odd ones matching `where`) with WRITE run after the batch's claim; asserts the
        rows GONE, one DELETE .. RETURNING, LOCKED_READS locked re-reads; returns the run's Result."""
        sc = Scenario(self, "purge_onepass")
        table(sc)
        before = sc.snapshot(["p"])
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        if write:
            r = paused_write(self, sc, cfg, "after_copy_commit:1", lambda: app(sc, write), command="purge")
        else:
            r = sc.job("purge", cfg)
        self.assertEqual(r.rc, 0, r)
        deletes, locked = deletes_and_locked_reads(sc, log, "p")
        returning = [s for s in deletes if " RETURNING " in s]
        self.assertEqual(len(returning), 1, deletes)
        self.assertTrue(returning[0].rstrip().endswith("WHERE (`id` IN (1,3,5,7)) AND (old = 1) RETURNING `id`"),
                        returning[0])
        self.assertEqual(len(locked), locked_reads, locked)
        self.assert_purged(sc, before, gone, written)
        return r

    def test_unchanged_batch_is_purged_in_one_pass(self):
        self.purge_with(None, {1, 3, 5, 7}, 0)

    def test_root_changed_after_the_read_still_goes_when_it_still_matches(self):
        """A purge compares keys, not rows: the changed root still matches `where`, so it goes in the one pass."""
        self.purge_with("UPDATE p SET v = 'NEW' WHERE id = 3", {1, 3, 5, 7}, 0)

    def test_composite_text_key_compares_as_read(self):
        """A key of a text column (non-ASCII values) and an integer column comes back in the key's column order
        and compares equal to the plain read's keys, so the batch goes in the one pass; the rows that do not
        match stay with their stored bytes."""
        sc = Scenario(self, "purge_textkey")
        sc.both(f"CREATE TABLE c (t VARCHAR(10) NOT NULL, n INT NOT NULL, old TINYINT NOT NULL, v VARCHAR(20), "
                f"PRIMARY KEY (t, n)) {INNODB}")
        sc.src("INSERT INTO c VALUES ('é', 1, 1, 'a'), ('é', 2, 0, 'b'), ('ü', 1, 1, NULL), ('x', 7, 0, 'd'), "
               "('ñandú', 3, 1, 'e'), ('ñandú', 4, 0, 'g')")
        before = gatest.stored_checksums("source", sc.src_db, "c")
        log = GeneralLog(self, "source")
        r = sc.job("purge", sc.config({"j": {"root_table": "c", "where": "old = 1"}}, processing={"batch_size": 10}))
        self.assertEqual(r.rc, 0, r)
        deletes, locked = deletes_and_locked_reads(sc, log, "c")
        self.assertEqual(len(deletes), 1, deletes)
        self.assertTrue(deletes[0].rstrip().endswith("RETURNING `t`, `n`"), deletes[0])
        self.assertEqual(locked, [], "the keys did not compare equal: the batch took the locked re-read")
        self.assertEqual(sc.src("SELECT COUNT(*) FROM c WHERE old = 1")[0][0], 0)
        left = gatest.stored_checksums("source", sc.src_db, "c")
        self.assertEqual(len(left), 3)
        for key, sha in left.items():
            self.assertEqual(before[key], sha, f"c row {key}: its stored bytes changed")
        self.assertEqual(sc.unfinished(), 0)

    def test_root_that_no_longer_matches_stays(self):
        r = self.purge_with("UPDATE p SET old = 0 WHERE id = 5", {1, 3, 7}, 1, written={5})
        self.assertIn("p (id) = (5) no longer matches `where`", r.out + r.err)


def dated(sc):
    """d: the events shape of issue 34, key (id, DATE) with an index on the DATE; ids 1..8, one day apart, the
    first four before 2020-01-05 (the job's `where`)."""
    sc.both(f"CREATE TABLE d (id INT NOT NULL, created DATE NOT NULL, v VARCHAR(20) NOT NULL, "
            f"PRIMARY KEY (id, created), KEY by_created (created)) {INNODB}")
    sc.src("INSERT INTO d SELECT seq, '2020-01-01' + INTERVAL (seq - 1) DAY, CONCAT('d', seq) FROM seq_1_to_8")


DATED = {"root_table": "d", "where": "created < '2020-01-05'"}


class LeadingRangeTest(unittest.TestCase):
    """A key (id, DATE) with an index on the DATE: a list of its keys is planned slowly for a DELETE, so a batch
    whose ids are an unbroken run goes by that range in one DELETE .. RETURNING (the rows of the run that match
    `where`, the first n in key order), compared row for row with the copy like any other."""

    def statements(self, sc, log):
        return deletes_and_locked_reads(sc, log, "d")

    def test_unbroken_run_of_ids_goes_by_range_in_one_pass(self):
        sc = Scenario(self, "leading_run")
        dated(sc)
        before = sc.snapshot(["d"])
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": DATED}, processing={"batch_size": 10})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        deletes, locked = self.statements(sc, log)
        self.assertEqual(len(deletes), 1, deletes)
        self.assertIn("WHERE (`id` BETWEEN 1 AND 4) AND (created < '2020-01-05') ORDER BY `id`, `created` LIMIT 4 "
                      "RETURNING `id`, `created`, `v`", deletes[0])
        self.assertEqual(locked, [], "a locked re-read of the roots")
        self.assertEqual(sorted(k[0] for k in sc.rows("destination", "d")), [1, 2, 3, 4])
        sc.assert_invariant(before)
        self.assertEqual(sc.unfinished(), 0)

    def test_row_added_under_an_id_of_the_run_stays_then_goes(self):
        """After the copy the application adds (2, 2020-01-04), which matches `where` and lies inside the range:
        the one pass deletes it with the others, the comparison finds a row that was not copied and rolls back, and
        the locked re-read moves the four copied rows; the new row stays for the rerun, never lost."""
        sc = Scenario(self, "leading_late")
        dated(sc)
        log = GeneralLog(self, "source")
        cfg = sc.config({"j": DATED}, processing={"batch_size": 10})
        r = paused_write(self, sc, cfg, "after_copy_commit:1",
                         lambda: app(sc, "INSERT INTO d VALUES (2, '2020-01-04', 'late')"))
        self.assertEqual(r.rc, 0, r)
        latest = sc.snapshot(["d"])
        deletes, locked = self.statements(sc, log)
        self.assertTrue(any(" RETURNING " in s for s in deletes), deletes)
        self.assertEqual(len(locked), 1, "the batch was not decided again under locks")
        src, dst = sc.rows("source", "d"), sc.rows("destination", "d")
        self.assertIn((2, "2020-01-04"), {(k[0], str(k[1])) for k in src}, "the late row left the source uncopied")
        self.assertEqual(sorted((k[0], str(k[1])) for k in dst),
                         [(1, "2020-01-01"), (2, "2020-01-02"), (3, "2020-01-03"), (4, "2020-01-04")])
        self.assertEqual(set(src) & set(dst), set(), "rows in both servers")
        sc.assert_invariant(latest)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn((2, "2020-01-04"), {(k[0], str(k[1])) for k in sc.rows("destination", "d")})
        self.assertEqual(sorted(k[0] for k in sc.rows("source", "d")), [5, 6, 7, 8])
        self.assertEqual(sc.unfinished(), 0)


if __name__ == "__main__":
    unittest.main()
