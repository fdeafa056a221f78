#!/usr/bin/python3
"""Every mode (archive, copy-only, purge, dry-run, validate), destination foreign_key_checks, reruns that pick up
newly eligible rows, and rows that change in the source after their copy."""

import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import SHOP_JOB, SHOP_RELATIONS, SHOP_TABLES, Scenario, load_shop  # noqa: E402
from test_safety_live import Paused  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
NO_FK = {"foreign_key_checks": False}


def tree3(sc, roots=30):
    """p -> c -> g on both sides, ROOTS roots with 3 children each and 2 grandchildren per child; `old` = odd ids."""
    sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {INNODB}")
    sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v VARCHAR(20), "
            f"FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
    sc.both(f"CREATE TABLE g (id INT PRIMARY KEY, c_id INT NOT NULL, v VARCHAR(20), "
            f"FOREIGN KEY (c_id) REFERENCES c (id)) {INNODB}")
    sc.src(f"INSERT INTO p SELECT seq, seq % 2, CONCAT('p', seq) FROM seq_1_to_{roots}")
    sc.src(f"INSERT INTO c SELECT seq, 1 + (seq - 1) DIV 3, CONCAT('c', seq) FROM seq_1_to_{roots * 3}")
    sc.src(f"INSERT INTO g SELECT seq, 1 + (seq - 1) DIV 2, CONCAT('g', seq) FROM seq_1_to_{roots * 6}")


TREE3_TABLES = ["p", "c", "g"]
TREE3_RELATIONS = [("c", ["p_id"], "p", ["id"]), ("g", ["c_id"], "c", ["id"])]
TREE3_JOB = {"root_table": "p", "where": "old = 1", "relations": [
    {"table": "c", "foreign_key": "p_id"}, {"table": "g", "parent": "c", "foreign_key": "c_id"}]}


class ModesTest(unittest.TestCase):
    # -- archive / copy-only / purge ------------------------------------------------------------------------------
    def test_archive_shop_and_jobs_listing(self):
        sc = Scenario(self, "archive")
        load_shop(sc, orders=80)
        before = sc.snapshot(SHOP_TABLES)
        cfg = sc.config({"old": SHOP_JOB}, processing={"batch_size": 9, "delete_batch_size": 4}, destination=NO_FK)
        r = sc.job("archive", cfg, "old")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual((sc.count("source", "orders"), sc.count("destination", "orders")), (40, 40))
        sc.assert_invariant(before, SHOP_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)
        job = sc.jobs_json(cfg)["old"]
        self.assertEqual(job["unfinished_roots"], 0)
        self.assertEqual(job["command"], "archive")
        self.assertEqual(job["last_run"]["exit_code"], 0)
        self.assertEqual(sorted(job["tables"]), sorted(SHOP_TABLES))

    def test_copy_only_keeps_source_and_never_copies_twice(self):
        sc = Scenario(self, "copyonly")
        tree3(sc)
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 4})
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.snapshot(TREE3_TABLES), before, "copy-only changed the source")
        counts = {t: sc.count("destination", t) for t in TREE3_TABLES}
        self.assertEqual(counts, {"p": 15, "c": 45, "g": 90})
        for t in TREE3_TABLES:
            dst = sc.rows("destination", t)
            for k, row in dst.items():
                self.assertEqual(row, before[t][k], f"{t} {k}")
        dst_state = {t: gatest.checksum_table("destination", sc.dst_db, t) for t in TREE3_TABLES}
        # Rerun: succeeds, copies nothing twice.
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual({t: gatest.checksum_table("destination", sc.dst_db, t) for t in TREE3_TABLES}, dst_state)
        self.assertEqual(sc.snapshot(TREE3_TABLES), before)
        self.assertEqual(sc.unfinished(), 0)
        # New eligible roots: the next copy-only copies exactly them.
        sc.src("UPDATE p SET old = 1 WHERE id IN (2, 30)")
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual({t: sc.count("destination", t) for t in TREE3_TABLES}, {"p": 17, "c": 51, "g": 102})
        self.assertEqual(sc.jobs_json(cfg)["j"]["unfinished_roots"], 0)

    def test_purge_deletes_child_first_and_copies_nothing(self):
        sc = Scenario(self, "purge")
        tree3(sc)  # the source's real foreign keys (no cascade) fail any delete that is not child-first
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 4, "delete_batch_size": 5})
        r = sc.job("purge", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual({t: sc.count("destination", t) for t in TREE3_TABLES}, {"p": 0, "c": 0, "g": 0})
        self.assertEqual({t: sc.count("source", t) for t in TREE3_TABLES}, {"p": 15, "c": 45, "g": 90})
        self.assertEqual(set(sc.rows("source", "p")), {(i,) for i in range(2, 31, 2)})
        after = sc.snapshot(TREE3_TABLES)
        for t in TREE3_TABLES:  # what is left is unchanged
            for k, row in after[t].items():
                self.assertEqual(row, before[t][k])
        self.assertEqual(sc.unfinished(), 0)
        r = sc.job("purge", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("nothing to do", r.out)

    # -- dry-run ---------------------------------------------------------------------------------------------------
    def test_dry_run_writes_nothing_anywhere(self):
        sc = Scenario(self, "dryrun")
        tree3(sc)
        state = sc.state()
        self.assertFalse(state["job_schema exists"])
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 4})
        runs = [("dry-run", cfg, "j"), ("dry-run", cfg, "j", "--mode", "purge"),
                ("dry-run", cfg, "j", "--mode", "copy-only"), ("archive", cfg, "j", "--dry-run"),
                ("copy-only", cfg, "j", "--dry-run"), ("purge", cfg, "j", "--dry-run")]
        for args in runs:
            with self.subTest(args=args[0] + " " + " ".join(args[3:])):
                r = sc.job(*args)
                self.assertEqual(r.rc, 0, r)
                self.assertIn("nothing was written", r.out)
                counts = dict(re.findall(r"^\s+([pcg])\s+(\d+)\s*$", r.out, re.M))
                self.assertEqual(counts, {"p": "15", "c": "45", "g": "90"}, r.out)
                if args[0] != "purge" and "purge" not in args:
                    self.assertIn("INSERT INTO", r.out)
                if args[0] != "copy-only" and "copy-only" not in args:
                    self.assertIn("DELETE FROM", r.out)
                self.assertEqual(sc.state(), state, "a dry run changed a server")
        self.assertFalse(sc.job_schema_exists(), "a dry run created the job_schema database")

    def test_dry_run_json(self):
        sc = Scenario(self, "dryjson")
        tree3(sc)
        cfg = sc.config({"j": TREE3_JOB})
        r = sc.job("dry-run", cfg, "j", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        out = json.loads(r.out)
        self.assertEqual({t["table"]: t["rows"] for t in out["tables"]}, {"p": 15, "c": 45, "g": 90})
        self.assertFalse(sc.job_schema_exists())

    # -- validate --------------------------------------------------------------------------------------------------
    def test_a_failed_delete_records_the_batches_deleted_before_it(self):
        """A source trigger created mid-run refuses the delete of root 13, in the last of 4 batches of 2. The run
        exits 1 with that batch whole in the source and its copy left for the rerun's recovery; the batches whose
        deletes committed before it, queued on the same source worker, are recorded done, not left to the
        recovery. Once the trigger is gone, the rerun finishes the batch."""
        sc = Scenario(self, "delete_fails")
        tree3(sc, roots=16)  # old roots 1, 3, ..., 15: batches {1,3} {5,7} {9,11} {13,15}
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 2})
        run = Paused(self, sc, "after_copy_commit:2", "archive", "-c", cfg, "-j", "j")
        try:
            run.wait()
            sc.src("CREATE TRIGGER p_keep BEFORE DELETE ON p FOR EACH ROW BEGIN "
                   "IF OLD.id = 13 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'p 13 is kept'; END IF; END")
        finally:
            run.release()
        r = run.finish()
        self.assertEqual(r.rc, 1, r)
        self.assertIn("p 13 is kept", r.err)
        self.assertEqual(sorted(k[0] for k in sc.rows("source", "p") if k[0] % 2), [13, 15])
        self.assertEqual(sc.count("source", "c"), 8 * 3 + 2 * 3, "batch 4's children were deleted without it")
        self.assertEqual(sc.unfinished(), 2, "batches 1-3 were deleted before the failure: they are done")
        sc.src("DROP TRIGGER p_keep")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual({t: sc.count("destination", t) for t in TREE3_TABLES}, {"p": 8, "c": 24, "g": 48})
        self.assertEqual(sc.unfinished(), 0)

    def test_validate_good_config(self):
        sc = Scenario(self, "validok")
        tree3(sc)
        state = sc.state()
        # Two good jobs; k's root c has an upstream parent p outside its tree, which is fine on the source (and on
        # the destination once its copy skips foreign key checks).
        cfg = sc.config({"j": TREE3_JOB, "k": {"root_table": "c", "where": "id < 3",
                                               "relations": [{"table": "g", "foreign_key": "c_id"}]}},
                        destination={"foreign_key_checks": False})
        r = sc.run("validate", "-c", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("job j: ok", r.out)
        self.assertIn("job k: ok", r.out)
        r = sc.run("validate", "-c", cfg, "-j", "k")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out.strip().splitlines()[-1], "job k: ok (config and every preflight check)")
        self.assertEqual(sc.state(), state)
        self.assertFalse(sc.job_schema_exists())

    def test_validate_reports_every_failure_of_every_job(self):
        sc = Scenario(self, "validbad")
        sc.both(f"CREATE TABLE nopk (a INT, b INT) {INNODB}")
        sc.both("CREATE TABLE mi (id INT PRIMARY KEY, nopk_a INT) ENGINE=MyISAM")
        sc.both(f"CREATE TABLE trg (id INT PRIMARY KEY) {INNODB}")
        sc.src("CREATE TRIGGER trg_del BEFORE DELETE ON trg FOR EACH ROW SET @x = 1")
        sc.src(f"CREATE TABLE only_src (id INT PRIMARY KEY, trg_id INT) {INNODB}")
        sc.both(f"CREATE TABLE typed (id INT PRIMARY KEY, v VARCHAR(10)) {INNODB}")
        sc.dst("ALTER TABLE typed MODIFY v VARCHAR(11)")
        state = sc.state()
        cfg = sc.config({
            "a": {"root_table": "nopk", "where": "1=1", "relations": [{"table": "mi", "foreign_key": "nopk_a",
                                                                       "references": "a"}]},
            "b": {"root_table": "trg", "where": "1=1", "relations": [{"table": "only_src", "foreign_key": "trg_id"}]},
            "c": {"root_table": "typed", "where": "no_such_column = 1"},
        })
        r = sc.run("validate", "-c", cfg)
        self.assertEqual(r.rc, 1, r)
        err = r.err
        self.assertRegex(err, r"validate found \d+ problems")
        expect = [
            ("[a]", "nopk has no primary key"),
            ("[a]", "mi uses the MyISAM engine"),
            ("[b]", "trg has a DELETE trigger"),
            ("[b]", "only_src does not exist on the destination"),
            ("[c]", "column typed.v is varchar(11)"),
            ("[c]", "no_such_column"),
        ]
        for tag, text in expect:
            self.assertTrue(any(tag in ln and text in ln for ln in err.splitlines()), f"missing {tag} {text!r}:\n{err}")
        self.assertEqual(sc.state(), state)
        self.assertFalse(sc.job_schema_exists())

    # -- destination foreign_key_checks ----------------------------------------------------------------------------
    def test_destination_foreign_key_checks(self):
        sc = Scenario(self, "fkchecks")
        load_shop(sc, orders=40)  # destination: customers table (empty) + orders with a real FK to it
        self.assertEqual(sc.count("destination", "customers"), 0)
        before = sc.snapshot(SHOP_TABLES)
        state = sc.state()
        cfg_on = sc.config({"old": SHOP_JOB}, processing={"batch_size": 8}, destination={"foreign_key_checks": True})
        r = sc.job("archive", cfg_on, "old")
        self.assertEqual(r.rc, 1, r)
        self.assertRegex(r.err, r"(?i)foreign key")
        self.assertEqual(sc.snapshot(SHOP_TABLES), before, "the source lost rows")
        self.assertEqual({t: sc.count("destination", t) for t in SHOP_TABLES}, {t: 0 for t in SHOP_TABLES})
        self.assertEqual({k: v for k, v in sc.state().items() if k != "job_schema exists"},
                         {k: v for k, v in state.items() if k != "job_schema exists"})
        self.assertEqual(sc.unfinished(), 0)
        cfg_off = sc.config({"old": SHOP_JOB}, processing={"batch_size": 8}, destination={"foreign_key_checks": False})
        r = sc.job("archive", cfg_off, "old")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), 20)
        self.assertEqual(sc.count("destination", "customers"), 0)
        sc.assert_invariant(before, SHOP_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    # -- reruns ----------------------------------------------------------------------------------------------------
    def test_rerun_picks_up_lower_keys(self):
        sc = Scenario(self, "rerun")
        tree3(sc)
        sc.src("DELETE g FROM g JOIN c ON g.c_id = c.id WHERE c.p_id <= 10")
        sc.src("DELETE FROM c WHERE p_id <= 10")
        sc.src("DELETE FROM p WHERE id <= 10")
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 4})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "p"), 10)  # 11, 13, .. 29
        # Old rows with keys below every archived one become eligible.
        sc.src("INSERT INTO p VALUES (1, 1, 'late1'), (2, 0, 'late2'), (3, 1, 'late3')")
        sc.src("INSERT INTO c VALUES (1, 1, 'c1'), (2, 3, 'c2'), (3, 2, 'c3')")
        sc.src("INSERT INTO g VALUES (1, 1, 'g1'), (2, 2, 'g2'), (3, 3, 'g3')")
        before = sc.snapshot(TREE3_TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(set(sc.rows("source", "p")), {(i,) for i in range(12, 31, 2)} | {(2,)})
        self.assertTrue({(1,), (3,)} <= set(sc.rows("destination", "p")))
        self.assertEqual(set(sc.rows("source", "c")) & {(1,), (2,), (3,)}, {(3,)})
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    # -- rows already in the destination ----------------------------------------------------------------------------
    def test_identical_row_already_in_destination_is_not_adopted(self):
        """A row the archive holds already, identical, was written by another run (another job, mode, registry or
        source): that run owns it and may remove it, so no source delete rests on it. Its root stays in the source,
        reported (exit 0), the archived row untouched; every other root is archived."""
        sc = Scenario(self, "dupsame")
        tree3(sc, roots=8)
        sc.dst("INSERT INTO p VALUES (3, 1, 'p3')")
        sc.dst("INSERT INTO c VALUES (7, 3, 'c7')")   # under root 3 as well
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 2})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("root p (id) = (3): the row p (id) = (3) is already in the destination, written by another run",
                      r.out)
        self.assertIn("1 root(s) blocked and left in the source", r.out)
        src = sc.snapshot(TREE3_TABLES)
        dst = {t: sc.rows("destination", t) for t in TREE3_TABLES}
        root = {"p": lambda i: i, "c": lambda i: 1 + (i - 1) // 3, "g": lambda i: 1 + ((i - 1) // 2) // 3}
        for t in TREE3_TABLES:
            for (k,), row in before[t].items():
                stays = root[t](k) == 3 or root[t](k) % 2 == 0
                self.assertEqual(src[t].get((k,)), row if stays else None, f"source {t} {k}")
                if not stays:
                    self.assertEqual(dst[t].get((k,)), row, f"destination {t} {k}")
        # The rows found there are as they were, and nothing else of root 3 was copied.
        self.assertEqual(dst["p"][(3,)], (3, 1, "p3"))
        self.assertEqual(dst["c"][(7,)], (7, 3, "c7"))
        self.assertEqual({t: sc.count("destination", t) for t in TREE3_TABLES}, {"p": 4, "c": 10, "g": 18})
        self.assertEqual(sc.unfinished(), 0)

    def test_different_row_already_in_destination_is_never_overwritten(self):
        sc = Scenario(self, "dupdiff")
        tree3(sc, roots=8)
        # The source's c 8 is (8, 3, 'c8'); archived alone, without its parent (an identical parent there would be
        # another run's row, which makes the root stay before its children are looked at).
        sc.dst("SET STATEMENT foreign_key_checks = 0 FOR INSERT INTO c VALUES (8, 3, 'OTHER')")
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 2})
        r = sc.job("archive", cfg)
        # Root 3 owns the row: it stays in the source as a conflict (both versions kept, exit 1); the other roots of
        # its batch and of the job are archived.
        self.assertEqual(r.rc, 1, r)
        self.assertIn("the row c (id) = (8) is already in the destination with different content", r.err)
        self.assertIn("1 root(s) are in conflict", r.out)
        self.assertIn("p (id) = (3)", r.out)
        self.assertEqual(sc.rows("destination", "c")[(8,)], (8, 3, "OTHER"), "the archived row was overwritten")
        src = sc.snapshot(TREE3_TABLES)
        root = {"p": lambda i: i, "c": lambda i: 1 + (i - 1) // 3, "g": lambda i: 1 + ((i - 1) // 2) // 3}
        for t in TREE3_TABLES:
            for (k,), row in before[t].items():
                stays = root[t](k) == 3 or root[t](k) % 2 == 0
                self.assertEqual(src[t].get((k,)), row if stays else None, f"source {t} {k}")
        self.assertEqual(sc.unfinished(), 0)

    def test_failure_in_a_later_batch_records_the_finished_ones(self):
        """Batch 2 is refused (a different row is already in the destination); batch 1 was archived before it:
        the summary and the registry must say so, not leave batch 1 as unfinished work."""
        sc = Scenario(self, "laterfail")
        tree3(sc, roots=8)
        sc.dst("INSERT INTO p VALUES (7, 1, 'OTHER')")   # root 7 is in batch 2 (roots 1, 3 | 5, 7)
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 2})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("the row p (id) = (7) is already in the destination with different content",
                      r.err)
        self.assertEqual(set(sc.rows("source", "p")) & {(1,), (3,)}, set(), "batch 1 was not archived")
        self.assertEqual(sc.rows("destination", "p")[(7,)], (7, 1, "OTHER"))
        sc.assert_invariant({t: {k: v for k, v in rows.items() if not (t == "p" and k == (7,))}
                             for t, rows in before.items()}, TREE3_RELATIONS)
        self.assertRegex(r.out, r"\n  p\s+\d+\s+\d+\s+3\n", "the summary does not count the deleted roots")
        self.assertEqual(sc.unfinished(), 0, "batch 1 finished but is left unfinished in the registry")
        self.assertEqual(sc.jobs_json(cfg)["j"]["unfinished_roots"], 0)

    # -- a row changed in the source after its copy ----------------------------------------------------------------
    def test_row_changed_after_copy_only_then_archive(self):
        """copy-only, then rows change in the source, then archive: the archive never deletes a row whose archived
        copy differs and never overwrites the copy silently; following its message's way out, it finishes."""
        sc = Scenario(self, "changed")
        tree3(sc, roots=10)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 3})
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.src("UPDATE c SET v = 'CHANGED' WHERE id = 8")   # child of root 3
        sc.src("UPDATE p SET v = 'CHANGED' WHERE id = 7")   # root 7
        before = sc.snapshot(TREE3_TABLES)
        outcomes = []
        for attempt in range(4):
            r = sc.job("archive", cfg)
            outcomes.append(r)
            # After every run: no changed version is lost, every row is somewhere, nothing is half-done.
            for table, key in (("c", (8,)), ("p", (7,))):
                src, dst = sc.rows("source", table), sc.rows("destination", table)
                self.assertTrue(src.get(key, (0, 0, ""))[2] == "CHANGED" or
                                (key not in src and dst.get(key, (0, 0, ""))[2] == "CHANGED"),
                                f"{table} {key}: the changed version is lost: source={src.get(key)} "
                                f"destination={dst.get(key)}\n{r}")
            for table, rows in before.items():
                src, dst = sc.rows("source", table), sc.rows("destination", table)
                for k, row in rows.items():
                    self.assertTrue(k in src or k in dst, f"{table} {k} lost")
                    if k not in src:
                        self.assertEqual(dst[k], row, f"{table} {k} archived in a version that is not the last")
            if r.rc == 0:
                break
            # The refusal names the table, the key and the way out: remove the stale copy from the destination.
            self.assertEqual(r.rc, 1, r)
            m = re.search(r"the row (\w+) \(id\) = \((\d+)\) is already in the destination with "
                          r"different content", r.err)
            self.assertTrue(m, r)
            self.assertIn("remove the stale copy from the destination", r.err)
            self.remove_from_destination(sc, m.group(1), int(m.group(2)))
        self.assertEqual(r.rc, 0, "\n\n".join(map(repr, outcomes)))
        self.assertEqual(sc.rows("destination", "c")[(8,)][2], "CHANGED")
        self.assertEqual(sc.rows("destination", "p")[(7,)][2], "CHANGED")
        self.assertEqual(set(sc.rows("source", "p")), {(i,) for i in range(2, 11, 2)})
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    @staticmethod
    def remove_from_destination(sc, table, key):
        conn = gatest.connect("destination", sc.dst_db)
        try:
            with conn.cursor() as cur:
                cur.execute("SET foreign_key_checks = 0")
                cur.execute(f"DELETE FROM {gatest.quote_ident(table)} WHERE id = %s", (key,))
        finally:
            conn.close()

    def test_row_changed_between_copy_and_delete(self):
        """The delete phase re-checks locked rows against the copy: a row updated after its copy is not deleted."""
        sc = Scenario(self, "window")
        tree3(sc, roots=6)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 10})
        before = sc.snapshot(TREE3_TABLES)
        # Hold a row lock on g 13 (under root 3) so the delete phase's locking read waits for us; change the row
        # once the copy is committed, then let the run go on.
        conn = gatest.connect("source", sc.src_db, autocommit=False)
        try:
            with conn.cursor() as cur:
                cur.execute("UPDATE g SET v = 'CHANGED' WHERE id = 13")
            proc = sc.start("archive", "-c", cfg, "-j", "j", "--no-progress")
            deadline = time.time() + 30
            while time.time() < deadline and (3,) not in sc.rows("destination", "p") and proc.poll() is None:
                time.sleep(0.05)
            self.assertIn((3,), sc.rows("destination", "p"), "root 3 was never copied")
            self.assertEqual(sc.rows("destination", "g")[(13,)][2], "g13", "the copy must be the committed version")
            time.sleep(0.3)
            conn.commit()
        finally:
            conn.close()
        out, err = proc.communicate(timeout=60)
        # A normal outcome on a busy table (exit 0 with a warning): the next run archives the current version.
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertIn("changed in the source after they were copied and were left in the source", err + out)
        self.assertIn("were left there for the next run", out)
        src_g = sc.rows("source", "g")
        self.assertEqual(src_g[(13,)][2], "CHANGED")
        self.assertIn((3,), sc.rows("source", "p"), "the changed root was deleted")
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (3,), (4,), (6,)})
        self.assertEqual(sc.unfinished(), 0)
        # The rerun archives the current version and replaces the stale copy.
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        self.assertEqual(sc.rows("destination", "g")[(13,)][2], "CHANGED")
        before["g"][(13,)] = (13, 7, "CHANGED")
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_recovery_does_not_archive_a_root_that_no_longer_matches_where(self):
        """Killed after the copy; the application makes root 1 live again (old = 0). The rerun's recovery must not
        move it: the run itself leaves a root that changed after its copy in the source, and so must its rerun."""
        sc = Scenario(self, "rewhere")
        tree3(sc, roots=6)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 10})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_verify"})
        self.assertEqual(r.rc, -9, r)
        sc.src("UPDATE p SET old = 0 WHERE id = 1")
        before = sc.snapshot(TREE3_TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertIn((1,), sc.rows("source", "p"), f"a root that no longer matches `where` was archived:\n{r}")
        self.assertEqual(set(sc.rows("source", "p")), {(1,), (2,), (4,), (6,)})
        self.assertEqual(sc.unfinished(), 0)

    def test_child_added_between_copy_and_delete(self):
        """A child row inserted under an archived root after the copy is never orphaned or lost."""
        sc = Scenario(self, "added")
        tree3(sc, roots=6)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 10})
        conn = gatest.connect("source", sc.src_db, autocommit=False)
        try:
            with conn.cursor() as cur:
                cur.execute("INSERT INTO c VALUES (1000, 3, 'late child')")
                cur.execute("INSERT INTO g VALUES (1000, 1000, 'late grandchild')")
            proc = sc.start("archive", "-c", cfg, "-j", "j", "--no-progress")
            deadline = time.time() + 30
            while time.time() < deadline and (3,) not in sc.rows("destination", "p") and proc.poll() is None:
                time.sleep(0.05)
            self.assertIn((3,), sc.rows("destination", "p"), "root 3 was never copied")
            time.sleep(0.3)
            conn.commit()
        finally:
            conn.close()
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertIn("changed in the source after they were copied and were left in the source", err)
        self.assertIn("was added", err)
        self.assertIn((3,), sc.rows("source", "p"))
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (3,), (4,), (6,)})
        before = sc.snapshot(TREE3_TABLES)
        sc.assert_invariant({}, TREE3_RELATIONS)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn((1000,), sc.rows("destination", "c"))
        self.assertIn((1000,), sc.rows("destination", "g"))
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        self.assertEqual(sc.unfinished(), 0)

    def test_copy_only_then_archive(self):
        """The two-step workflow: copy-only, then archive recognises the copies (no duplicates) and deletes."""
        sc = Scenario(self, "twostep")
        tree3(sc)
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 4})
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual({t: sc.count("destination", t) for t in TREE3_TABLES}, {"p": 15, "c": 45, "g": 90})
        self.assertEqual({t: sc.count("source", t) for t in TREE3_TABLES}, {"p": 15, "c": 45, "g": 90})
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_done_batches_are_kept_for_the_retention_then_pruned(self):
        """Done batches (and their keys) stay in the registry for log_retention_days, and are pruned at the end of
        a run once older; unfinished work is never pruned."""
        sc = Scenario(self, "prune")
        tree3(sc, roots=12)
        reg = lambda q: int(gatest.sql("destination", q, db=sc.job_schema)[0][0])  # noqa: E731
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 2})
        self.assertEqual(sc.job("archive", cfg).rc, 0)
        kept = reg("SELECT COUNT(*) FROM batches WHERE state = 'done'")
        self.assertGreater(kept, 1)
        self.assertEqual(reg("SELECT COUNT(*) FROM batch_keys"), kept)
        sc.src("UPDATE p SET old = 1")
        cfg0 = sc.config({"j": TREE3_JOB}, processing={"batch_size": 2, "log_retention_days": 0})
        self.assertEqual(sc.job("archive", cfg0).rc, 0)
        self.assertEqual(reg("SELECT COUNT(*) FROM batches"), 0)
        self.assertEqual(reg("SELECT COUNT(*) FROM batch_keys"), 0)
        self.assertEqual(sc.count("source", "p"), 0)

    def test_verification_count_and_none(self):
        for method in ("count", "none"):
            with self.subTest(method):
                sc = Scenario(self, f"verify_{method}")
                tree3(sc)
                before = sc.snapshot(TREE3_TABLES)
                cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 4}, verification=method)
                r = sc.job("archive", cfg)
                self.assertEqual(r.rc, 0, r)
                if method == "count":
                    self.assertIn("verification start: method count", r.err)
                sc.assert_invariant(before, TREE3_RELATIONS)
                self.assertEqual(sc.count("destination", "g"), 90)
                self.assertEqual(sc.unfinished(), 0)

    def test_sha256_verification_refuses_a_copy_the_destination_stored_differently(self):
        """A trigger created on the destination mid-run (after preflight, which refuses INSERT triggers) rewrites a
        column of every row it inserts, without a warning: the read-back differs from the source row, so the batch
        rolls back whole and the run exits 1 with nothing of that batch deleted. Once the trigger is gone, the
        rerun archives every row unchanged."""
        sc = Scenario(self, "verify_sha256")
        tree3(sc, roots=16)  # 8 old roots: 4 batches of 2
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 2})
        # Paused once batch 2's copy committed: batch 3 is the first copied under the trigger, however far the
        # deletes of batches 1 and 2 have got on the source worker.
        run = Paused(self, sc, "after_copy_commit:2", "archive", "-c", cfg, "-j", "j")
        try:
            run.wait()
            sc.dst("CREATE TRIGGER g_rewrite BEFORE INSERT ON g FOR EACH ROW SET NEW.v = CONCAT(NEW.v, '!')")
        finally:
            run.release()
        r = run.finish()
        self.assertEqual(r.rc, 1, r)
        self.assertRegex(r.err, r"verification \(sha256\) failed: the destination row g \(id\) = \(\d+\) differs "
                                r"from the source; nothing was deleted")
        sc.assert_invariant(before, TREE3_RELATIONS)  # no rewritten row committed: every row is unchanged
        self.assertLess(sc.count("destination", "p"), 8, "every batch was archived in spite of the trigger")
        sc.dst("DROP TRIGGER g_rewrite")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual({t: sc.count("destination", t) for t in TREE3_TABLES}, {"p": 8, "c": 24, "g": 48})
        self.assertEqual(sc.unfinished(), 0)

    def test_row_changed_after_crash_before_delete(self):
        """Killed after verify; the row changes; the rerun's recovery archives the current version."""
        sc = Scenario(self, "crashchg")
        tree3(sc, roots=6)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 10})
        before = sc.snapshot(TREE3_TABLES)
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_verify"})
        self.assertEqual(r.rc, -9, r)
        sc.src("UPDATE c SET v = 'CHANGED' WHERE id = 1")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.rows("destination", "c")[(1,)][2], "CHANGED")
        before["c"][(1,)] = (1, 1, "CHANGED")
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)


if __name__ == "__main__":
    unittest.main()
