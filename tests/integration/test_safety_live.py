#!/usr/bin/python3
"""Safety on live servers: the application writes between goarchive's copy and its delete (the test-only pause
hook GOARCHIVE_PAUSE=<point>:<n>:<file>), or after a crash at the delete's commit (GOARCHIVE_FAULT). Every test
asserts the observable outcome (rows on both servers, exit code, message) and ends with the data invariant: every
original row, or its latest committed version when the test wrote, is in exactly one of source or destination,
byte-equal, and no child is orphaned on either side."""

import os
import re
import sys
import threading
import time
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Result, Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"

TABLES = ["p", "c", "g"]
RELATIONS = [("c", ["p_id"], "p", ["id"]), ("g", ["c_id"], "c", ["id"])]
JOB = {"root_table": "p", "where": "old = 1", "relations": [
    {"table": "c", "foreign_key": "p_id"}, {"table": "g", "parent": "c", "foreign_key": "c_id"}]}


def tree(sc, roots=6, fk=True, nullable=False, on_update=""):
    """p -> c -> g, ROOTS roots with 3 children each and 2 grandchildren per child; `old` = odd ids. With FK, real
    foreign keys (ON UPDATE ON_UPDATE); without, plain indexes on the foreign key columns."""
    null = "NULL" if nullable else "NOT NULL"
    if fk:
        cfk = f", FOREIGN KEY (p_id) REFERENCES p (id) {on_update}"
        gfk = f", FOREIGN KEY (c_id) REFERENCES c (id) {on_update}"
    else:
        cfk, gfk = ", KEY (p_id)", ", KEY (c_id)"
    sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {INNODB}")
    sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT {null}, v VARCHAR(20){cfk}) {INNODB}")
    sc.both(f"CREATE TABLE g (id INT PRIMARY KEY, c_id INT {null}, v VARCHAR(20){gfk}) {INNODB}")
    sc.src(f"INSERT INTO p SELECT seq, seq % 2, CONCAT('p', seq) FROM seq_1_to_{roots}")
    sc.src(f"INSERT INTO c SELECT seq, 1 + (seq - 1) DIV 3, CONCAT('c', seq) FROM seq_1_to_{roots * 3}")
    sc.src(f"INSERT INTO g SELECT seq, 1 + (seq - 1) DIV 2, CONCAT('g', seq) FROM seq_1_to_{roots * 6}")


def tree_of(root):
    """{table: [keys]} of the tree of ROOT as tree() builds it."""
    cs = [3 * (root - 1) + i for i in (1, 2, 3)]
    return {"p": [(root,)], "c": [(c,) for c in cs], "g": [(2 * (c - 1) + i,) for c in cs for i in (1, 2)]}


def app(sc, stmt, args=None):
    """An application write: its own autocommit session on the source."""
    return gatest.sql("source", stmt, args, db=sc.src_db)


def dst_delete(sc, table, col, values):
    conn = gatest.connect("destination", sc.dst_db)
    try:
        with conn.cursor() as cur:
            cur.execute("SET foreign_key_checks = 0")
            for v in values:
                cur.execute(f"DELETE FROM {gatest.quote_ident(table)} WHERE {gatest.quote_ident(col)} = %s", (v,))
    finally:
        conn.close()


class Paused:
    """goarchive started in the background with GOARCHIVE_PAUSE=<point>:<file>; wait() returns once it has reached
    the point (it then waits while the pause file exists); release() lets it go on; finish() waits for its exit."""

    def __init__(self, test, sc, point, *args, env=None):
        self.test, self.sc = test, sc
        self.file = os.path.join(sc.tmp, f"pause-{time.time_ns()}")
        open(self.file, "w").close()
        e = {"GOARCHIVE_PAUSE": f"{point}:{self.file}"}
        e.update(env or {})
        self.proc = sc.start(*args, "--no-progress", env=e)
        self.released_at = None

    def wait(self, timeout=60):
        deadline = time.time() + timeout
        while not os.path.exists(self.file + ".reached"):
            if self.proc.poll() is not None or time.time() > deadline:
                self.release()
                out, err = self.proc.communicate(timeout=120)
                self.test.fail(f"goarchive never reached the pause point (rc={self.proc.returncode}):\n{out}\n{err}")
            time.sleep(0.02)

    def release(self):
        if os.path.exists(self.file):
            os.remove(self.file)
        self.released_at = time.time()

    def finish(self, timeout=180):
        self.release()
        out, err = self.proc.communicate(timeout=timeout)
        return Result(types.SimpleNamespace(returncode=self.proc.returncode, stdout=out, stderr=err))


def paused_write(test, sc, cfg, point, write, command="archive", env=None):
    """Runs COMMAND on job j paused at POINT, calls WRITE() there, lets the run finish; returns its Result."""
    run = Paused(test, sc, point, command, "-c", cfg, "-j", "j", env=env)
    try:
        run.wait()
        write()
    finally:
        run.release()
    return run.finish()


class SafetyLiveTest(unittest.TestCase):
    # -- helpers ---------------------------------------------------------------------------------------------------
    def paused_write(self, sc, cfg, point, write, command="archive", env=None):
        return paused_write(self, sc, cfg, point, write, command, env)

    def assert_nowhere_both(self, sc, tables=TABLES):
        for t in tables:
            both = set(sc.raw_rows("source", t)) & set(sc.raw_rows("destination", t))
            self.assertEqual(both, set(), f"{t}: rows in both servers")

    def assert_tree_stays(self, sc, root, copied, r):
        """ROOT's tree (COPIED: {table: [keys]} as it was copied) is in the source and none of it in the
        destination."""
        self.assertIn((root,), sc.rows("source", "p"), f"root {root} left the source:\n{r}")
        for t, keys in copied.items():
            dst = sc.rows("destination", t)
            left = [k for k in keys if k in dst]
            self.assertEqual(left, [], f"{t}: archived copies of root {root}'s tree left in the destination:\n{r}")

    def assert_left_warning(self, r):
        self.assertIn("changed in the source after their copy and were left there for the next run", r.out + r.err)

    # -- `where` re-checked under the delete's lock ----------------------------------------------------------------
    def where_rechecked_archive(self, method):
        """`where` reads another table, so the root's own row does not change: only the re-check of `where` under
        the delete's lock (not the row comparison) can keep root 3."""
        sc = Scenario(self, f"where_{method}")
        tree(sc)
        sc.src(f"CREATE TABLE hold (p_id INT PRIMARY KEY) {INNODB}")
        # Qualified: the engine checks `where` in a session without a default database.
        job = dict(JOB, where=f"old = 1 AND id NOT IN (SELECT p_id FROM {gatest.quote_ident(sc.src_db)}.hold)")
        cfg = sc.config({"j": job}, processing={"batch_size": 10}, verification=method)
        before = sc.snapshot(TABLES)
        r = self.paused_write(sc, cfg, "after_copy_commit:1", lambda: app(sc, "INSERT INTO hold VALUES (3)"))
        self.assertEqual(r.rc, 0, r)
        self.assertIn("p (id) = (3) no longer matches `where`", r.out + r.err)
        self.assert_left_warning(r)
        self.assert_tree_stays(sc, 3, tree_of(3), r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (3,), (4,), (6,)})
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (5,)})
        self.assert_nowhere_both(sc)
        sc.assert_invariant(before, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)
        # A rerun does not archive root 3 (it still does not match); once the application lets it go, it does.
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (3,), (4,), (6,)})
        app(sc, "DELETE FROM hold")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        sc.assert_invariant(before, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_where_column_updated_after_copy_in_archive(self):
        """The application updates the `where` column itself: the row changed and no longer matches; root 3 stays
        with its tree, its archived copy is removed, and a rerun leaves it (it no longer matches)."""
        sc = Scenario(self, "where_col")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = self.paused_write(sc, cfg, "after_copy_commit:1", lambda: app(sc, "UPDATE p SET old = 0 WHERE id = 3"))
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out + r.err, r"p \(id\) = \(3\) (changed|no longer matches `where`)")
        self.assert_left_warning(r)
        self.assert_tree_stays(sc, 3, tree_of(3), r)
        self.assertEqual(sc.rows("source", "p")[(3,)], (3, 0, "p3"))
        self.assert_nowhere_both(sc)
        now = sc.snapshot(TABLES)
        archived = {t: sc.rows("destination", t) for t in TABLES}
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (3,), (4,), (6,)})
        sc.assert_invariant({t: {**now[t], **archived[t]} for t in TABLES}, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_where_rechecked_under_lock_in_archive_sha256(self):
        self.where_rechecked_archive("sha256")

    def test_where_rechecked_under_lock_in_archive_count(self):
        self.where_rechecked_archive("count")

    def test_where_rechecked_under_lock_in_archive_none(self):
        self.where_rechecked_archive("none")

    def test_where_rechecked_under_lock_in_purge(self):
        """purge has no copy, but it passes after_copy_commit too (the claim's commit) between its snapshot read of
        the roots and its delete transaction."""
        sc = Scenario(self, "where_purge")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = self.paused_write(sc, cfg, "after_copy_commit:1", lambda: app(sc, "UPDATE p SET old = 0 WHERE id = 3"),
                              command="purge")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("no longer matches `where`", r.out + r.err)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (3,), (4,), (6,)}, r)
        expected = {t: set() for t in TABLES}
        for root in (2, 3, 4, 6):
            for t, keys in tree_of(root).items():
                expected[t] |= set(keys)
        for t in TABLES:
            self.assertEqual(set(sc.rows("source", t)), expected[t], f"{t} in the source")
            self.assertEqual(sc.count("destination", t), 0)
        self.assertEqual(sc.rows("source", "p")[(3,)], (3, 0, "p3"))
        for k in tree_of(3)["g"]:
            self.assertEqual(sc.rows("source", "g")[k], (k[0], 1 + (k[0] - 1) // 2, f"g{k[0]}"))
        sc.assert_invariant({}, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    # -- a child moved between two roots of one batch (count mode) ---------------------------------------------------
    def test_child_moved_between_two_roots_of_one_batch_count_mode(self):
        sc = Scenario(self, "moved")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10}, verification="count")
        # c 1 (root 1, with g 1 and g 2) moves to root 3: the counts per table stay the same.
        r = self.paused_write(sc, cfg, "after_copy_commit:1", lambda: app(sc, "UPDATE c SET p_id = 3 WHERE id = 1"))
        self.assertEqual(r.rc, 0, r)
        self.assert_left_warning(r)
        self.assertIn("moved to another root", r.out + r.err)
        self.assert_tree_stays(sc, 1, tree_of(1), r)
        self.assert_tree_stays(sc, 3, tree_of(3), r)
        self.assertEqual(set(sc.rows("source", "p")), {(1,), (2,), (3,), (4,), (6,)})
        self.assertEqual(sc.rows("source", "c")[(1,)], (1, 3, "c1"))
        self.assertEqual(set(sc.rows("destination", "p")), {(5,)})
        self.assert_nowhere_both(sc)
        sc.assert_invariant({}, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)
        # The rerun (no application writes) archives both with everything.
        now = sc.snapshot(TABLES)
        archived = {t: sc.rows("destination", t) for t in TABLES}
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        self.assertEqual(sc.rows("destination", "c")[(1,)], (1, 3, "c1"))
        for root in (1, 3):
            for t, keys in tree_of(root).items():
                for k in keys:
                    self.assertIn(k, sc.rows("destination", t), f"{t} {k} not archived")
        sc.assert_invariant({t: {**now[t], **archived[t]} for t in TABLES}, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_copy_only_children_moved_to_a_later_root_of_the_same_run(self):
        """copy-only copies root 1; two of its children then move to root 3, which a later batch of the same run
        copies. The first moved child shows root 1's copy is stale, and the whole of it goes; the second is then
        no longer in the destination and goes in as it is now (it used to be judged against the copy just removed
        and reported as a conflict, exit 1)."""
        sc = Scenario(self, "comoved")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 1})
        r = self.paused_write(sc, cfg, "after_copy_commit:1", lambda: app(sc, "UPDATE c SET p_id = 3 WHERE id IN (1, 2)"),
                              command="copy-only")
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("are in conflict", r.out + r.err)
        self.assertIn("the copy-only copy of root p (id) = (1) went stale", r.out + r.err)
        dst_c = sc.rows("destination", "c")
        self.assertEqual((dst_c[(1,)], dst_c[(2,)]), ((1, 3, "c1"), (2, 3, "c2")))
        self.assertNotIn((1,), sc.rows("destination", "p"))
        # The rerun copies root 1's current tree again; the destination then equals the source's eligible trees.
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        src = sc.snapshot(TABLES)
        eligible = {1, 3, 5}
        for t in TABLES:
            dst = sc.rows("destination", t)
            self.assertEqual({k: v for k, v in src[t].items() if k in dst}, dst, f"{t}: a copy differs")
        self.assertEqual(set(sc.rows("destination", "p")), {(k,) for k in eligible})
        self.assertEqual(set(sc.rows("destination", "c")), {k for k, v in src["c"].items() if v[1] in eligible})
        self.assertEqual(sc.unfinished(), 0)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assert_nowhere_both(sc)
        sc.assert_invariant(src, RELATIONS)

    # -- the application changes a tree after its copy ---------------------------------------------------------------
    def rerun_keeps_every_row(self, sc, cfg):
        """After a run: no row in both servers, nothing unfinished, and every row now in either server is still in
        exactly one, unchanged, after the rerun, which must exit 0; returns the rerun's Result."""
        self.assert_nowhere_both(sc)
        self.assertEqual(sc.unfinished(), 0)
        now = sc.snapshot(TABLES)
        archived = {t: sc.rows("destination", t) for t in TABLES}
        expected = {t: {**now[t], **archived[t]} for t in TABLES}
        sc.assert_invariant(expected, RELATIONS)
        r2 = sc.job("archive", cfg)
        self.assertEqual(r2.rc, 0, r2)
        sc.assert_invariant(expected, RELATIONS)
        return r2

    def changed_after_copy(self, sc, cfg, write, stays, gone_from_tree=()):
        """The run: WRITE() after the copy; the roots STAYS stay in the source with no archived copy left; the rerun
        archives the current versions. GONE_FROM_TREE: (table, key) rows that left every tree (they stay)."""
        copied = {root: tree_of(root) for root in stays}
        r = self.paused_write(sc, cfg, "after_copy_commit:1", write)
        self.assertEqual(r.rc, 0, r)
        self.assert_left_warning(r)
        for root in stays:
            present = {t: [k for k in keys] for t, keys in copied[root].items()}
            dst_rows = {t: sc.rows("destination", t) for t in TABLES}
            for t, keys in present.items():
                self.assertEqual([k for k in keys if k in dst_rows[t]], [],
                                 f"{t}: an archived copy of root {root}'s tree is left in the destination:\n{r}")
        r2 = self.rerun_keeps_every_row(sc, cfg)
        for t, k in gone_from_tree:
            self.assertIn(k, sc.rows("source", t))
        self.assertEqual(sc.unfinished(), 0)
        return r, r2

    def test_child_moved_to_the_next_batch_between_their_reads_is_no_conflict(self):
        """A child moves from batch 1's root to batch 2's between the two reads: batch 1 copied the old version,
        and batch 2's copy, beside batch 1's delete, finds that copy in the destination. It waits for batch 1's
        delete and end (root 1 stays, its copy goes) and copies again: no conflict, exit 0."""
        sc = Scenario(self, "movenext")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 1})
        r = self.paused_write(sc, cfg, "after_read:1", lambda: app(sc, "UPDATE c SET p_id = 3 WHERE id = 1"))
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("(a conflict)", r.out + r.err)
        self.assertIn("waiting for the delete of the batch before", r.out + r.err)
        self.assertEqual(sc.count("destination", "p"), 2)
        self.assertEqual(set(sc.rows("source", "p")), {(1,), (2,), (4,), (6,)})
        self.assertEqual(sc.rows("destination", "c")[(1,)], (1, 3, "c1"))
        self.assertNotIn((1,), sc.rows("source", "c"))
        self.rerun_keeps_every_row(sc, cfg)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})

    def test_child_deleted_after_copy(self):
        sc = Scenario(self, "childdel")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r, _ = self.changed_after_copy(sc, cfg, lambda: app(sc, "DELETE FROM g WHERE id = 13"), stays=[3])
        self.assertIn("is gone from its tree", r.out + r.err)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        self.assertNotIn((13,), sc.rows("destination", "g"))
        self.assertNotIn((13,), sc.rows("source", "g"))

    def test_child_fk_set_null_after_copy(self):
        sc = Scenario(self, "setnull")
        tree(sc, nullable=True)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        # c 7 (root 3) leaves every tree, and its g 13 and g 14 with it.
        r, _ = self.changed_after_copy(sc, cfg, lambda: app(sc, "UPDATE c SET p_id = NULL WHERE id = 7"), stays=[3],
                                       gone_from_tree=[("c", (7,)), ("g", (13,)), ("g", (14,))])
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        self.assertEqual(sc.rows("source", "c")[(7,)], (7, None, "c7"))
        self.assertEqual({(8,), (9,)} & set(sc.rows("destination", "c")), {(8,), (9,)})

    def test_root_key_updated_after_copy(self):
        sc = Scenario(self, "rootkey")
        tree(sc, on_update="ON UPDATE CASCADE")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r, _ = self.changed_after_copy(sc, cfg, lambda: app(sc, "UPDATE p SET id = 103 WHERE id = 3"), stays=[3])
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        self.assertIn((103,), sc.rows("destination", "p"))
        self.assertNotIn((3,), sc.rows("destination", "p"))
        self.assertEqual({k: v[1] for k, v in sc.rows("destination", "c").items() if k[0] in (7, 8, 9)},
                         {(7,): 103, (8,): 103, (9,): 103})

    def test_collation_equal_key_change(self):
        sc = Scenario(self, "collation")
        ci = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
        sc.both(f"CREATE TABLE p (k VARCHAR(10) PRIMARY KEY, old TINYINT NOT NULL, v VARCHAR(20)) {ci}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_k VARCHAR(10) NOT NULL, v VARCHAR(20), "
                f"FOREIGN KEY (p_k) REFERENCES p (k) ON UPDATE CASCADE) {ci}")
        sc.src("INSERT INTO p VALUES ('abb', 1, 'p1'), ('abc', 1, 'p2'), ('abd', 1, 'p3'), ('zzz', 0, 'live')")
        sc.src("INSERT INTO c VALUES (1, 'abb', 'c1'), (2, 'abc', 'c2'), (3, 'abc', 'c3'), (4, 'abd', 'c4'), "
               "(5, 'zzz', 'c5')")
        job = {"root_table": "p", "where": "old = 1", "relations": [{"table": "c", "foreign_key": "p_k"}]}
        rel = [("c", ["p_k"], "p", ["k"])]
        cfg = sc.config({"j": job}, processing={"batch_size": 10})
        r = self.paused_write(sc, cfg, "after_copy_commit:1", lambda: app(sc, "UPDATE p SET k = 'ABC' WHERE k = 'abc'"))
        self.assertEqual(r.rc, 0, r)
        self.assert_left_warning(r)
        src_p, dst_p = sc.raw_rows("source", "p"), sc.raw_rows("destination", "p")
        self.assertEqual(sorted(src_p), [(b"ABC",), (b"zzz",)], r)
        self.assertEqual(sorted(dst_p), [(b"abb",), (b"abd",)], r)
        self.assertEqual(sorted(sc.raw_rows("destination", "c")), [(b"1",), (b"4",)])
        self.assertEqual(sc.raw_rows("source", "c")[(b"2",)][1], b"ABC")
        self.assert_nowhere_both(sc, ["p", "c"])
        self.assertEqual(sc.unfinished(), 0)
        before = {t: {**sc.raw_rows("source", t), **sc.raw_rows("destination", t)} for t in ("p", "c")}
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sorted(sc.raw_rows("source", "p")), [(b"zzz",)])
        self.assertEqual(sc.raw_rows("destination", "p")[(b"ABC",)], (b"ABC", b"1", b"p2"))
        self.assertEqual({k: v[1] for k, v in sc.raw_rows("destination", "c").items()},
                         {(b"1",): b"abb", (b"2",): b"ABC", (b"3",): b"ABC", (b"4",): b"abd"})
        for t in ("p", "c"):
            src, dst = sc.raw_rows("source", t), sc.raw_rows("destination", t)
            for k, row in before[t].items():
                self.assertTrue((k in src) != (k in dst), f"{t} {k}: in both or neither")
                self.assertEqual(src.get(k) or dst.get(k), row, f"{t} {k} changed")
        sc.assert_invariant({}, rel)
        self.assertEqual(sc.unfinished(), 0)

    # -- a child inserted under a root being deleted (relation only in the config) -----------------------------------
    def test_child_added_during_delete_with_config_only_relation(self):
        """No foreign key in the database: the delete's locked read of the children (REPEATABLE READ for that one
        transaction) locks the gap of their foreign key index, so an application insert of a child under the root
        being deleted waits for the delete's commit. After the commit it goes in: that child is then orphaned by
        the application itself (it inserted a child without locking its parent: the documented assumption), but
        goarchive never reported as archived a tree it did not see."""
        sc = Scenario(self, "gaplock")
        tree(sc, fk=False)
        before = sc.snapshot(TABLES)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        run = Paused(self, sc, "after_locked_read:1", "archive", "-c", cfg, "-j", "j")
        done = {}

        def insert():
            conn = gatest.connect("source", sc.src_db)
            try:
                with conn.cursor() as cur:
                    cur.execute("SET SESSION innodb_lock_wait_timeout = 100")
                    cur.execute("INSERT INTO c VALUES (1000, 3, 'late child')")
                done["at"] = time.time()
            except Exception as e:  # noqa: BLE001
                done["error"] = e
                done["at"] = time.time()
            finally:
                conn.close()

        th = threading.Thread(target=insert)
        try:
            run.wait()
            th.start()
            time.sleep(1.0)
            self.assertNotIn("at", done, f"the child insert did not wait for the delete's locks: {done}")
        finally:
            run.release()
            released = run.released_at
            r = run.finish()
            th.join(120)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("error", done, done)
        self.assertGreater(done["at"], released, "the insert finished before the delete was released")
        # Root 3 was archived with the tree goarchive saw; the late child went in after the commit.
        self.assertIn((3,), sc.rows("destination", "p"))
        self.assertNotIn((1000,), sc.rows("destination", "c"))
        self.assertEqual(sc.rows("source", "c")[(1000,)], (1000, 3, "late child"))
        sc.src("DELETE FROM c WHERE id = 1000")  # the application's own orphan, see above
        sc.assert_invariant(before, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    # -- crashes at the delete's commit --------------------------------------------------------------------------------
    def test_crash_at_delete_commit_then_root_changed_archives_the_current_version(self):
        """Killed between the recorded decision and the source commit (which rolls back), then the application
        changes root 3: the commit proof is not in the source, so the delete is known not to have committed; the
        archived copy is replaced by the current version and archived, exit 0, no conflict."""
        sc = Scenario(self, "proofchg")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        original = sc.snapshot(TABLES)
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_mark_deleting:1"})
        self.assertEqual(r.rc, -9, r)
        self.assertEqual(sc.snapshot(TABLES), original, "the killed delete transaction was not rolled back")
        app(sc, "UPDATE p SET v = 'NEW' WHERE id = 3")
        latest = sc.snapshot(TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("the interrupted delete rolled back (its commit proof is not in the source)", r.err)
        self.assertNotIn("are in conflict", r.out + r.err)
        self.assertEqual(sc.rows("destination", "p")[(3,)], (3, 1, "NEW"))
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        sc.assert_invariant(latest, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)
        self.assertEqual(sc.src("SELECT COUNT(*) FROM goarchive_commits")[0][0], 0, "proofs of done batches stay")

    def test_a_later_decision_that_keeps_nothing_replaces_an_earlier_one_that_kept_a_root(self):
        """Run 1: root 3 changes after its copy, so the delete keeps it, records that, and is killed before its
        commit (rolled back). Run 2 recovers the batch: nothing changed since, so its delete keeps nothing and
        commits, and it is killed before the batch's end. Run 3 finds that delete committed: every root of it is
        archived. The decision of run 1 must not outlive run 2's (it once did, and run 3 then removed root 3's
        archived copy as 'left in the source', while the source had deleted it: a lost root)."""
        sc = Scenario(self, "stale_kept")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        # The tree's foreign keys refuse a parent's delete, so the batch first tries the one pass, whose decision
        # (every root goes) is the run's first mark; its difference (root 3) sends it back to the locked re-read,
        # whose decision (root 3 kept) is the second.
        run = Paused(self, sc, "after_copy_commit:1", "archive", "-c", cfg, "-j", "j",
                     env={"GOARCHIVE_FAULT": "after_mark_deleting:2"})
        try:
            run.wait()
            app(sc, "UPDATE p SET v = 'NEW' WHERE id = 3")
        finally:
            run.release()
        r = run.finish()
        self.assertEqual(r.rc, -9, r)
        stayed = gatest.sql("destination", f"SELECT COUNT(*) FROM {gatest.quote_ident(sc.job_schema)}.batch_stayed")
        self.assertEqual(stayed[0][0], 1, "run 1 recorded root 3 as kept")
        latest = sc.snapshot(TABLES)
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_delete_commit:1"})
        self.assertEqual(r.rc, -9, r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)}, "run 2's delete committed")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("the interrupted delete committed", r.err)
        self.assertEqual(sc.rows("destination", "p")[(3,)], (3, 1, "NEW"))
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (3,), (5,)})
        sc.assert_invariant(latest, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_crash_before_delete_commit_then_root_deleted_leaves_no_copy(self):
        """Killed before the source commit, then the application deletes root 3's whole tree: it is in neither
        server afterwards (without the proof, its archived copy used to be kept: the delete might have committed)."""
        sc = Scenario(self, "proofdel")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "before_delete_commit:1"})
        self.assertEqual(r.rc, -9, r)
        app(sc, "DELETE FROM g WHERE c_id IN (7, 8, 9)")
        app(sc, "DELETE FROM c WHERE p_id = 3")
        app(sc, "DELETE FROM p WHERE id = 3")
        latest = sc.snapshot(TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("are in conflict", r.out + r.err)
        for t, keys in tree_of(3).items():
            for k in keys:
                self.assertNotIn(k, sc.rows("destination", t), f"{t} {k}: a deleted row's copy stayed archived")
                self.assertNotIn(k, sc.rows("source", t))
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (5,)})
        sc.assert_invariant(latest, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_crash_at_delete_commit_without_a_commit_proof_is_a_conflict(self):
        """No commit proof (the source's goarchive_commits table cannot be used: here it has another shape), a
        crash at the delete's commit, then the application changes a root: nothing proves which version is
        current, so both are kept as a conflict, named, exit 1, until a person removes one."""
        sc = Scenario(self, "conflict")
        tree(sc)
        sc.src("CREATE TABLE goarchive_commits (something_else INT)")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        original = sc.snapshot(TABLES)
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_mark_deleting:1"})
        self.assertEqual(r.rc, -9, r)
        self.assertIn("no commit proof: the source table", r.err)
        self.assertEqual(sc.snapshot(TABLES), original, "the killed delete transaction was not rolled back")
        app(sc, "UPDATE p SET v = 'NEW' WHERE id = 3")
        latest = sc.snapshot(TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertRegex(r.out + r.err, r"p \(id\) = \(3\)")
        self.assertIn("conflict", r.out + r.err)
        # The run ends on the conflict (the way out: compare, delete the wrong version), not on a refusal to copy
        # the conflicted root again in the same run, whose way out ("remove the stale copy from the destination")
        # is not the one for a conflict.
        # (Checked at the end, so that the rest of the scenario runs either way.)
        first_line = r.out.splitlines()[0] if r.out else ""
        ends_on_conflict = (not re.search("already in the destination with different content", r.out + r.err)
                            and re.search(r"in conflict.*p \(id\) = \(3\)", first_line))
        conflict_run = r
        self.assertEqual(sc.rows("source", "p")[(3,)], (3, 1, "NEW"))
        self.assertEqual(sc.rows("destination", "p")[(3,)], (3, 1, "p3"))
        for t, keys in tree_of(3).items():
            for k in keys:
                self.assertEqual(sc.rows("destination", t).get(k), original[t][k], f"{t} {k}: archived copy lost")
                self.assertEqual(sc.rows("source", t).get(k), latest[t][k], f"{t} {k}: source version lost")
        for root in (1, 5):  # the rest of the batch finished
            for t, keys in tree_of(root).items():
                for k in keys:
                    self.assertNotIn(k, sc.rows("source", t))
                    self.assertEqual(sc.rows("destination", t).get(k), original[t][k])
        # The person removes the archived (older) version; the next run archives the current one.
        for t, keys in tree_of(3).items():
            dst_delete(sc, t, "id", [k[0] for k in keys])
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("are in conflict", r.out + r.err)
        self.assertEqual(sc.rows("destination", "p")[(3,)], (3, 1, "NEW"))
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        sc.assert_invariant(latest, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)
        self.assertTrue(ends_on_conflict, f"the run after the crash did not end on the conflict:\n{conflict_run}")

    def test_crash_after_delete_commit_then_key_reused_keeps_the_archived_original(self):
        sc = Scenario(self, "reuse")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        original = sc.snapshot(TABLES)
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_delete_commit:1"})
        self.assertEqual(r.rc, -9, r)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        # The application reuses key 3 for a new root (matching `where`) with a new child.
        app(sc, "INSERT INTO p VALUES (3, 1, 'REUSED')")
        app(sc, "INSERT INTO c VALUES (1000, 3, 'new child')")
        outcomes = []
        for _ in range(2):
            r = sc.job("archive", cfg)
            outcomes.append(r)
            self.assertIn(r.rc, (0, 1), r)
            if r.rc == 1:
                self.assertRegex(r.out + r.err, r"conflict|already in the destination with different content")
                self.assertRegex(r.out + r.err, r"p \(id\) = \(3\)")
            # The archived original is never removed or overwritten.
            for t, keys in tree_of(3).items():
                for k in keys:
                    self.assertEqual(sc.rows("destination", t).get(k), original[t][k],
                                     f"{t} {k}: the archived original was removed or overwritten:\n{r}")
            self.assertEqual(sc.rows("source", "p").get((3,)), (3, 1, "REUSED"), r)
            self.assertEqual(sc.rows("source", "c").get((1000,)), (1000, 3, "new child"), r)
        # Every original row but the reused key is in exactly one server, unchanged; no orphans.
        rest = {t: dict(rows) for t, rows in original.items()}
        del rest["p"][(3,)]
        sc.assert_invariant(rest, RELATIONS)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (3,), (4,), (6,)})
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (3,), (5,)})

    def test_recovery_after_kill_at_delete_commit_without_changes(self):
        sc = Scenario(self, "recover")
        tree(sc)
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        original = sc.snapshot(TABLES)
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "before_delete_commit:1"})
        self.assertEqual(r.rc, -9, r)
        self.assertGreater(sc.unfinished(), 0)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("are in conflict", r.out + r.err)
        self.assertIn("in conflict 0", r.out)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (3,), (5,)})
        sc.assert_invariant(original, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_root_rekeyed_after_a_crash_at_the_delete_commit_is_archived_under_its_new_key(self):
        """Killed after the delete's decision was recorded (the source rolled back), then the application changes a
        root's key (ON UPDATE CASCADE): the proof shows the delete never committed, so the copy under the old key
        goes and the root is archived under its new key, children with it; exit 0, no row lost or doubled."""
        sc = Scenario(self, "rekeycrash")
        tree(sc, on_update="ON UPDATE CASCADE")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_mark_deleting:1"})
        self.assertEqual(r.rc, -9, r)
        app(sc, "UPDATE p SET id = 103 WHERE id = 3")
        latest = sc.snapshot(TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("are in conflict", r.out + r.err)
        self.assertNotIn((3,), sc.rows("destination", "p"))
        self.assertEqual(set(sc.rows("destination", "p")), {(1,), (5,), (103,)})
        self.assertEqual({v[1] for k, v in sc.rows("destination", "c").items() if k[0] in (7, 8, 9)}, {103})
        self.assertEqual({k for k in sc.rows("source", "p") if k[0] % 2}, set())
        sc.assert_invariant(latest, RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

if __name__ == "__main__":
    unittest.main()
