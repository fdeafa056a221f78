"""One owner per archived row (issue 31, items 5-10): an archived row is removed only by the run that wrote it.

Each test is one way a run of another mode, job, registry or source could remove archived rows it did not write,
or stop on rows it found, and ends with the data invariant: every original row in source or destination, the
archived ones unchanged, nothing orphaned.
"""

import os
import unittest

import gatest
from scenario import Scenario
from test_engine_modes import INNODB, TREE3_JOB, TREE3_RELATIONS, TREE3_TABLES, tree3


def config_with(sc, jobs, section, key, value):
    """A config of SC for JOBS whose [SECTION] KEY is VALUE instead of the scenario's own."""
    path = sc.config(jobs)
    lines, current = [], ""
    for line in open(path).read().splitlines():
        if line.startswith("["):
            current = line
        if current == f"[{section}]" and line.startswith(f"{key} = "):
            line = f'{key} = "{value}"'
        lines.append(line)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class OwnershipTest(unittest.TestCase):
    def assert_nothing_lost(self, sc, before, copied_too=()):
        """Every original row is in the source or the destination (both for roots copy-only copied: COPIED_TOO
        names those tables' keys), each version there unchanged; no child orphaned."""
        src = {t: sc.rows("source", t) for t in before}
        dst = {t: sc.rows("destination", t) for t in before}
        for t, rows in before.items():
            for k, row in rows.items():
                self.assertTrue(k in src[t] or k in dst[t], f"{t} {k} is in neither server")
                for side in (src[t], dst[t]):
                    if k in side:
                        self.assertEqual(side[k], row, f"{t} {k} changed")
        for child, fk, parent, refs in TREE3_RELATIONS:
            for server, rows in (("source", src), ("destination", dst)):
                parents = set(rows[parent])
                for k, row in rows[child].items():
                    self.assertIn((row[1],), parents, f"{child} {k} orphaned on the {server}")

    # -- item 5 -----------------------------------------------------------------------------------------------------
    def test_copy_only_refuses_a_crashed_archive_batch(self):
        """archive killed right after a source delete committed, then copy-only of the same job: copy-only would
        undo that batch by removing its archived tree, the only copy of rows no longer in the source. It is
        refused (exit 1) and names the command that finishes the batch; that command then does."""
        sc = Scenario(self, "own5")
        tree3(sc, roots=20)
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 5})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_delete_commit:1"})
        self.assertEqual(r.rc, -9, r)
        mid_src = sc.snapshot(TREE3_TABLES)
        mid_dst = {t: sc.rows("destination", t) for t in TREE3_TABLES}
        self.assertLess(len(mid_src["p"]), 20, "the first batch's delete did not commit")
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("job j has unfinished archive work", r.err)
        self.assertIn("run `goarchive archive -j j` first", r.err)
        self.assertEqual(sc.snapshot(TREE3_TABLES), mid_src)
        self.assertEqual({t: sc.rows("destination", t) for t in TREE3_TABLES}, mid_dst)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(before, TREE3_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    # -- item 6 -----------------------------------------------------------------------------------------------------
    def test_copy_only_sweep_keeps_the_copies_of_purged_roots(self):
        """copy-only J, purge J, copy-only J: the purge leaves copy-only's copies as the only version of those
        rows; the second copy-only's sweep finds their roots gone from the source and keeps them."""
        sc = Scenario(self, "own6a")
        tree3(sc, roots=20)
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 4})
        for command in ("copy-only", "purge", "copy-only"):
            r = sc.job(command, cfg)
            self.assertEqual(r.rc, 0, f"{command}: {r}")
        self.assertIn("kept in the archive as their only version", r.err)
        old = {k for k in before["p"] if k[0] % 2 == 1}
        self.assertEqual(set(sc.rows("destination", "p")), old)
        self.assertEqual(set(sc.rows("source", "p")), set(before["p"]) - old)
        self.assert_nothing_lost(sc, before)
        self.assertEqual(sc.unfinished(), 0)

    def test_copy_only_sweep_after_a_root_was_re_keyed(self):
        """copy-only copied root 1 with its tree; the application re-keys it to 100 and moves its children along.
        The sweep keeps the copy of root 1 (no row of the source has that key: it is the only version) but removes
        the copies of the children, which the source still holds under root 100, so that they are copied again
        there: no conflict, and the next runs have nothing to do."""
        sc = Scenario(self, "own6c")
        tree3(sc, roots=6)
        cfg = sc.config({"j": dict(TREE3_JOB, where="1=1")}, processing={"batch_size": 4})
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        old_root = sc.rows("destination", "p")[(1,)]
        sc.src("SET STATEMENT foreign_key_checks = 0 FOR UPDATE p SET id = 100 WHERE id = 1")
        sc.src("UPDATE c SET p_id = 100 WHERE p_id = 1")
        now = sc.snapshot(TREE3_TABLES)
        for _ in range(2):
            r = sc.job("copy-only", cfg)
            self.assertEqual(r.rc, 0, r)
            self.assertIn("in conflict 0,", r.out)
        dst = {t: sc.rows("destination", t) for t in TREE3_TABLES}
        for t in TREE3_TABLES:
            self.assertEqual({k: v for k, v in dst[t].items() if not (t == "p" and k == (1,))}, now[t], t)
        self.assertEqual(dst["p"][(1,)], old_root, "the only version of root 1 was removed")
        self.assertEqual(sc.unfinished(), 0)

    def test_another_job_never_rests_a_delete_on_copy_only_copies(self):
        """copy-only J, archive K (another job over the same tables and archive), copy-only J: K finds J's copies
        and leaves those roots in the source (exit 0, reported) instead of deleting them on the strength of a copy J
        may remove; J's sweep then has nothing to remove. K archives the roots J never copied."""
        sc = Scenario(self, "own6b")
        tree3(sc, roots=20)
        before = sc.snapshot(TREE3_TABLES)
        k_job = dict(TREE3_JOB, where="1=1")
        cfg = sc.config({"j": TREE3_JOB, "k": k_job}, processing={"batch_size": 4})
        r = sc.job("copy-only", cfg, "j")
        self.assertEqual(r.rc, 0, r)
        r = sc.job("archive", cfg, "k")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("is already in the destination, written by another run", r.out)
        self.assertIn("10 root(s) blocked and left in the source", r.out)
        r = sc.job("copy-only", cfg, "j")
        self.assertEqual(r.rc, 0, r)
        old = {k for k in before["p"] if k[0] % 2 == 1}
        self.assertEqual(set(sc.rows("source", "p")), old)
        self.assertEqual(set(sc.rows("destination", "p")), set(before["p"]))
        self.assert_nothing_lost(sc, before)

    # -- items 7 and 8 ----------------------------------------------------------------------------------------------
    def test_a_second_registry_on_one_archive_database_is_refused(self):
        """Two job_schemas over one archive database: the second registry's runs could remove rows the first one's
        deletes rest on. The archive database's owner record names the first; the second is refused (exit 2),
        nothing moved."""
        sc = Scenario(self, "own7")
        tree3(sc, roots=10)
        before = sc.snapshot(TREE3_TABLES)
        cfg = sc.config({"j": dict(TREE3_JOB, where="id <= 4")})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        mid_src, mid_dst = sc.snapshot(TREE3_TABLES), {t: sc.rows("destination", t) for t in TREE3_TABLES}
        other = sc.job_schema + "_b"
        self.addCleanup(gatest.sql, "destination", f"DROP DATABASE IF EXISTS {gatest.quote_ident(other)}")
        cfg2 = config_with(sc, {"j": TREE3_JOB}, "destination", "job_schema", other)
        for command in ("archive", "copy-only"):
            r = sc.job(command, cfg2)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(f"the archive database {sc.dst_db} is filled by the runs of registry (job_schema) "
                          f"{sc.job_schema}, not {other}", r.err)
        # validate, which writes nothing, says so too.
        r = sc.run("validate", "-c", cfg2, "-j", "j")
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn(f"is filled by the runs of registry (job_schema) {sc.job_schema}, not {other}", r.out + r.err)
        self.assertEqual(sc.snapshot(TREE3_TABLES), mid_src)
        self.assertEqual({t: sc.rows("destination", t) for t in TREE3_TABLES}, mid_dst)
        sc.assert_invariant(before, TREE3_RELATIONS)

    def test_a_second_source_on_one_archive_database_is_refused(self):
        """Two shards (two source databases) into one archive database: the same keys on both would meet in the
        archive, and one shard's cleanup could delete the other's only copy. The second source is refused (exit 2),
        nothing moved on either shard."""
        sc = Scenario(self, "own8")
        tree3(sc, roots=10)
        shard2 = sc.src_db + "_2"
        q = gatest.quote_ident
        gatest.sql("source", f"CREATE DATABASE {q(shard2)}")
        self.addCleanup(gatest.sql, "source", f"DROP DATABASE IF EXISTS {q(shard2)}")
        for t in TREE3_TABLES:
            gatest.sql("source", f"CREATE TABLE {q(shard2)}.{q(t)} LIKE {q(sc.src_db)}.{q(t)}")
            gatest.sql("source", f"INSERT INTO {q(shard2)}.{q(t)} SELECT * FROM {q(sc.src_db)}.{q(t)}")
        before = sc.snapshot(TREE3_TABLES)
        r = sc.job("archive", sc.config({"j": TREE3_JOB}))
        self.assertEqual(r.rc, 0, r)
        mid_dst = {t: sc.rows("destination", t) for t in TREE3_TABLES}
        shard2_before = {t: gatest.sql("source", f"SELECT * FROM {q(shard2)}.{q(t)} ORDER BY id") for t in TREE3_TABLES}
        r = sc.job("archive", config_with(sc, {"j2": TREE3_JOB}, "source", "database", shard2), "j2")
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"database {sc.src_db}, not ", r.err)
        self.assertEqual({t: gatest.sql("source", f"SELECT * FROM {q(shard2)}.{q(t)} ORDER BY id")
                          for t in TREE3_TABLES}, shard2_before)
        self.assertEqual({t: sc.rows("destination", t) for t in TREE3_TABLES}, mid_dst)
        sc.assert_invariant(before, TREE3_RELATIONS)

    # -- item 9 -----------------------------------------------------------------------------------------------------
    def test_a_reused_unique_value_leaves_its_root_and_never_blocks_the_job(self):
        """The source reuses a secondary UNIQUE value (an e-mail address) that an archived row holds. `schema`
        makes such a key a plain index on the archive; where the archive keeps it UNIQUE by hand, the root holding
        the reused value stays in the source, named, and every other root is archived, on every run (exit 0)."""
        sc = Scenario(self, "own9")
        sc.src(f"CREATE TABLE u (id INT PRIMARY KEY, email VARCHAR(40) NOT NULL, UNIQUE KEY uk_email (email)) {INNODB}")
        sc.src("INSERT INTO u VALUES (1, 'a@x'), (2, 'b@x'), (3, 'c@x'), (4, 'd@x')")
        cfg = sc.config({"j": {"root_table": "u", "where": "id <= 2"}})
        r = sc.job("schema", cfg, "j", "--apply")
        self.assertEqual(r.rc, 0, r)
        unique = gatest.sql("destination", "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
                                           "AND TABLE_NAME = 'u' AND INDEX_NAME = 'uk_email' AND NON_UNIQUE = 0",
                            (sc.dst_db,))[0][0]
        self.assertEqual(unique, 0, "schema --apply kept the secondary UNIQUE key")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.src("UPDATE u SET email = 'a@x' WHERE id = 3")   # a@x was freed and reused
        cfg = sc.config({"j": {"root_table": "u", "where": "1=1"}})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("source", "u"), 0)
        self.assertEqual(sorted(sc.dst("SELECT id, email FROM u")), [(1, "a@x"), (2, "b@x"), (3, "a@x"), (4, "d@x")])
        # An archive made UNIQUE by hand: the root with the reused value stays, the others go, every run.
        sc.dst("DELETE FROM u WHERE id = 3")
        sc.dst("ALTER TABLE u DROP INDEX uk_email, ADD UNIQUE KEY uk_email (email)")
        sc.src("INSERT INTO u VALUES (3, 'a@x'), (5, 'e@x')")
        before = sc.snapshot(["u"])
        for _ in range(2):
            r = sc.job("archive", cfg)
            self.assertEqual(r.rc, 0, r)
            self.assertIn("root u (id) = (3): the row u (id) = (3) holds a value of a unique key that another "
                          "archived row holds", r.out)
            self.assertEqual(sorted(sc.src("SELECT id, email FROM u")), [(3, "a@x")])
        self.assertEqual(sc.rows("destination", "u")[(5,)], before["u"][(5,)])
        self.assertEqual(sc.unfinished(), 0)

    # -- item 10 ----------------------------------------------------------------------------------------------------
    def test_archive_after_a_crashed_purge_is_refused_not_a_conflict(self):
        """purge killed in its delete, then archive of the same job: archive would compare the purge batch's roots
        with copies that were never made and report conflicts (exit 1) for roots that have one version. It is
        refused instead, naming purge; purge finishes its batch; archive then runs clean."""
        sc = Scenario(self, "own10")
        tree3(sc, roots=12)
        cfg = sc.config({"j": TREE3_JOB}, processing={"batch_size": 3})
        r = sc.job("purge", cfg, env={"GOARCHIVE_FAULT": "after_delete_commit:1"})
        self.assertEqual(r.rc, -9, r)
        mid = sc.snapshot(TREE3_TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("job j has unfinished purge work", r.err)
        self.assertNotIn("are in conflict", r.err + r.out)
        self.assertEqual(sc.snapshot(TREE3_TABLES), mid)
        r = sc.job("purge", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)
        sc.src("UPDATE p SET old = 1 WHERE id IN (2, 4)")
        before = sc.snapshot(TREE3_TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("are in conflict", r.err + r.out)
        self.assertEqual(set(sc.rows("destination", "p")), {(2,), (4,)})
        sc.assert_invariant(before, TREE3_RELATIONS)


if __name__ == "__main__":
    unittest.main()
