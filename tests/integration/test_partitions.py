#!/usr/bin/python3
"""The partition path (issue 34): a RANGE COLUMNS-partitioned table's partitions that lie wholly inside `where`
leave as one piece (archive: detached into a side table on the source, copied into the archive in verified chunks,
dropped; purge: detached and dropped), the rest go the row path in the same run.

Every check of the data is the invariant on the servers' own stored bytes: each original row is in exactly one of
the source (the table, or a side table `ga_<job id>_<partition>` a killed run left) and the archive, with the
checksum the server computes on what it stores (FLOAT values with more than 6 significant digits included).
  * archive, purge, partitions = "off", copy-only, and the portable path (EXCHANGE PARTITION: the emptied
    partition stays, reported);
  * a row changed between the plan and the detach so that it no longer matches `where` goes back into the table;
  * a row the archive already holds (not written by this job) goes back into the table and stays there;
  * a kill at every step (the 1st and the 2nd time), then a rerun: nothing lost or doubled, no side table left;
  * a long transaction holding the table: every DDL gives up after ddl_lock_wait_timeout, the partitions stay
    whole for the next run (their rows untouched by the row path), and an application insert waits no longer
    than that timeout; the rerun after the transaction ends takes them;
  * dry-run says per partition which path it takes and why.
"""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from test_key_lists import GeneralLog  # noqa: E402
from scenario import Scenario  # noqa: E402

MONTHS = ["2025-10", "2025-11", "2025-12", "2026-01", "2026-02"]
BOUNDS = ["2025-11-01", "2025-12-01", "2026-01-01", "2026-02-01", "2026-03-01"]
COLUMNS = ("id BIGINT NOT NULL AUTO_INCREMENT, created DATE NOT NULL, payload VARCHAR(40) NOT NULL, f FLOAT NULL, "
           "PRIMARY KEY (id, created), KEY by_created (created)")
PARTS = ", ".join(f"PARTITION p{m.replace('-', '_')} VALUES LESS THAN ('{b}')" for m, b in zip(MONTHS, BOUNDS))
SOURCE = f"CREATE TABLE ev ({COLUMNS}) ENGINE=InnoDB PARTITION BY RANGE COLUMNS(created) ({PARTS}, " \
         f"PARTITION pmax VALUES LESS THAN (MAXVALUE))"
ARCHIVE = f"CREATE TABLE ev ({COLUMNS}) ENGINE=InnoDB"
WHERE = "created < '2025-12-15'"  # p2025_10 and p2025_11 whole; half of p2025_12 by the row path
PER_DAY = 20
POINTS = ["partition_detaching", "partition_after_detach", "partition_after_prove", "partition_before_copy_commit",
          "partition_after_copy_commit", "partition_copied", "partition_after_drop"]


def make(test, tag, rows_per_day=PER_DAY):
    sc = Scenario(test, tag)
    sc.src(SOURCE)
    sc.dst(ARCHIVE)
    # Every day from 2025-10-01 to 2026-03-10; FLOATs whose 6-digit text is not their value (mariadb-facts C9).
    sc.src(f"INSERT INTO ev (created, payload, f) SELECT '2025-10-01' + INTERVAL (seq DIV {rows_per_day}) DAY, "
           f"CONCAT('e', seq), IF(seq MOD 3 = 0, NULL, 16777216 + seq MOD 7 + 0.1234567 * seq) "
           f"FROM seq_0_to_{160 * rows_per_day - 1}")
    return sc


def source_tables(sc):
    """The source database's tables but the commit proofs' (goarchive_commits): ev and any side table."""
    return [r[0] for r in gatest.sql("source", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE "
                                               "TABLE_SCHEMA = %s AND TABLE_NAME <> 'goarchive_commits' ORDER BY 1",
                                     (sc.src_db,))]


def partitions(sc):
    return [r[0] for r in gatest.sql("source", "SELECT PARTITION_NAME FROM information_schema.PARTITIONS WHERE "
                                               "TABLE_SCHEMA = %s AND TABLE_NAME = 'ev' ORDER BY "
                                               "PARTITION_ORDINAL_POSITION", (sc.src_db,))]


def stored(sc):
    """{pk hex: [(where, checksum)]} over the source's ev, every side table, and the archive's ev: each computed by
    its own server on its stored bytes."""
    out = {}
    for t in source_tables(sc):
        for k, sha in gatest.stored_checksums("source", sc.src_db, t).items():
            out.setdefault(k, []).append((f"source {t}", sha))
    for k, sha in gatest.stored_checksums("destination", sc.dst_db, "ev").items():
        out.setdefault(k, []).append(("archive ev", sha))
    return out


class Base(unittest.TestCase):
    def assert_exactly_once(self, sc, before, changed=()):
        """Every original row in exactly one place (table, side table or archive), its stored bytes unchanged
        (CHANGED: keys the test itself changed, checked for place only); no row that was not there before."""
        now = stored(sc)
        self.assertTrue(before, "the snapshot holds no row: nothing to check")
        for key, sha in before.items():
            places = now.get(key, [])
            self.assertEqual(len(places), 1, f"row {key}: in {[p for p, _ in places]} (must be exactly one)")
            if key not in changed:
                self.assertEqual(places[0][1], sha, f"row {key} in {places[0][0]}: its stored bytes changed")
        extra = set(now) - set(before)
        self.assertFalse(extra, f"rows that were not there before: {sorted(extra)[:5]}")

    def assert_nothing_lost(self, sc, before):
        """After a kill: every original row in the table, a side table or the archive, its stored bytes unchanged;
        a row in two places only as a side table's row whose copy committed (the side table is dropped next)."""
        now = stored(sc)
        for key, sha in before.items():
            places = now.get(key, [])
            self.assertIn(len(places), (1, 2), f"row {key}: in {[p for p, _ in places]}")
            if len(places) == 2:
                where = sorted(p for p, _ in places)
                self.assertTrue(where[0] == "archive ev" and where[1].startswith("source ga_"), f"row {key}: {where}")
            for place, got in places:
                self.assertEqual(got, sha, f"row {key} in {place}: its stored bytes changed")
        self.assertFalse(set(now) - set(before), "rows that were not there before")

    def before(self, sc):
        snap = gatest.stored_checksums("source", sc.src_db, "ev")
        self.assertGreater(len(snap), 500)
        return snap

    def counts(self, sc):
        src = gatest.sql("source", f"SELECT COUNT(*), SUM(created < '2025-12-15') FROM `{sc.src_db}`.ev")[0]
        dst = gatest.sql("destination", f"SELECT COUNT(*), SUM(created >= '2025-12-15') FROM `{sc.dst_db}`.ev")[0]
        return int(src[0]), int(src[1] or 0), int(dst[0]), int(dst[1] or 0)


class TestPartitionPath(Base):
    def test_archive_takes_whole_partitions(self):
        sc = make(self, "part_arch")
        before = self.before(sc)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("partition p2025_10 (values less than '2025-11-01'", r.err)
        self.assertIn("whole: every row matches where", r.err)
        self.assertIn("partition p2025_12 (values less than '2026-01-01'", r.err)
        self.assertIn("row path: it holds rows outside where", r.err)
        self.assertEqual(partitions(sc), ["p2025_12", "p2026_01", "p2026_02", "pmax"])
        self.assertEqual(source_tables(sc), ["ev"], "no side table is left")
        src_all, src_cold, dst_all, dst_warm = self.counts(sc)
        self.assertEqual(src_cold, 0, "every row inside where left the source")
        self.assertEqual(dst_warm, 0, "no row outside where reached the archive")
        self.assertEqual(dst_all, 75 * PER_DAY)
        self.assert_exactly_once(sc, before)
        # The DDL replicates: the GTID replica has the same partitions and the same rows, its SQL thread running.
        gatest.wait_replica_caught_up()
        self.assertEqual(gatest.sql("replica", "SELECT PARTITION_NAME FROM information_schema.PARTITIONS WHERE "
                                               "TABLE_SCHEMA = %s AND TABLE_NAME = 'ev' ORDER BY "
                                               "PARTITION_ORDINAL_POSITION", (sc.src_db,)),
                         tuple((p,) for p in partitions(sc)))
        self.assertEqual(gatest.stored_checksums("replica", sc.src_db, "ev"),
                         gatest.stored_checksums("source", sc.src_db, "ev"))
        self.assertEqual(gatest.replica_status()["Slave_SQL_Running"], "Yes")
        # The next run has nothing to do.
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(self.counts(sc)[2], 75 * PER_DAY)

    def test_purge_drops_whole_partitions(self):
        sc = make(self, "part_purge")
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.job("purge", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(partitions(sc), ["p2025_12", "p2026_01", "p2026_02", "pmax"])
        self.assertEqual(source_tables(sc), ["ev"])
        src_all, src_cold, dst_all, _ = self.counts(sc)
        self.assertEqual(src_cold, 0)
        self.assertEqual(src_all, 160 * PER_DAY - 75 * PER_DAY)
        self.assertEqual(dst_all, 0, "purge copies nothing")
        # Dropped uncounted: the summary gives the server's estimate as one, and the steps are recorded dropped
        # in two registry transactions (all detaching, then all ended), not four writes per partition.
        self.assertRegex(r.out, r"purged whole: about [0-9]+ row\(s\), the server's estimate")
        self.assertIn("partitions: detached 2, taken whole 2, left whole for the next run 0", r.out)
        steps = gatest.sql("destination", f"SELECT partition_name, state, version FROM `{sc.job_schema}`."
                                          "partition_steps ORDER BY partition_name")
        self.assertEqual([tuple(s) for s in steps], [("p2025_10", "dropped", 2), ("p2025_11", "dropped", 2)])
        # With nothing left, the run asks whether any row matches instead of walking the primary key through the
        # table's remaining partitions to find none.
        log = GeneralLog(self, "source")
        probe, walk = f"SELECT EXISTS (SELECT 1 FROM `{sc.src_db}`.`ev` WHERE", f"`{sc.src_db}`.`ev` FORCE INDEX (PRIMARY)"

        def sent():  # goarchive's statements only (the log holds these very reads too, and maybe older runs')
            return tuple(len([s for s in log.statements(n) if s.startswith("/* goarchive")]) for n in (probe, walk))

        before = sent()
        r = sc.job("purge", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("nothing to do", r.out)
        self.assertEqual(sent(), (before[0] + 1, before[1]))

    def test_partitions_off_takes_the_row_path(self):
        sc = make(self, "part_off")
        before = self.before(sc)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE, "partitions": "off"}})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("whole:", r.err)
        self.assertEqual(len(partitions(sc)), 6, "every partition stays")
        self.assertEqual(self.counts(sc)[1], 0)
        self.assert_exactly_once(sc, before)
        # --partitions off on the command line overrides the key.
        sc2 = make(self, "part_flag")
        cfg2 = sc2.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc2.job("purge", cfg2, "j", "--partitions", "off")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(partitions(sc2)), 6)

    def test_copy_only_changes_nothing(self):
        sc = make(self, "part_copy")
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(partitions(sc)), 6)
        self.assertEqual(source_tables(sc), ["ev"])
        self.assertEqual(self.counts(sc)[0], 160 * PER_DAY)
        self.assertEqual(self.counts(sc)[2], 75 * PER_DAY)

    def test_portable_path_exchanges(self):
        sc = make(self, "part_exch")
        before = self.before(sc)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.job("archive", cfg, env={"GOARCHIVE_TEST_PORTABLE": "1"})
        self.assertEqual(r.rc, 0, r)
        self.assertIn("the emptied partition stays", r.err)
        self.assertEqual(len(partitions(sc)), 6, "EXCHANGE leaves the emptied partitions in place")
        self.assertEqual(gatest.sql("source", f"SELECT COUNT(*) FROM `{sc.src_db}`.ev PARTITION (p2025_10, p2025_11)")
                         [0][0], 0)
        self.assertEqual(source_tables(sc), ["ev"])
        self.assertEqual(self.counts(sc)[1], 0)
        self.assert_exactly_once(sc, before)
        r = sc.job("archive", cfg, env={"GOARCHIVE_TEST_PORTABLE": "1"})
        self.assertEqual(r.rc, 0, r)
        self.assertIn("partition p2025_10 (values less than '2025-11-01', ~0 rows): nothing: empty", r.err)

    def test_row_changed_before_the_detach_goes_back(self):
        sc = make(self, "part_late")
        before = self.before(sc)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE + " AND payload NOT LIKE 'late%'"}})
        flag = os.path.join(sc.tmp, "pause")
        open(flag, "w").close()
        p = sc.start("archive", "-c", cfg, "-j", "j", "--no-progress",
                     env={"GOARCHIVE_PAUSE": f"partition_detaching:1:{flag}"})
        deadline = time.time() + 60
        while not os.path.exists(flag + ".reached"):
            self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
            self.assertLess(time.time(), deadline, "the run never reached the pause")
            time.sleep(0.05)
        # The plan is made; the first partition is about to be detached. One of its rows stops matching where.
        key = gatest.sql("source", f"SELECT id, created FROM `{sc.src_db}`.ev PARTITION (p2025_10) ORDER BY id LIMIT 1")[0]
        gatest.sql("source", f"UPDATE `{sc.src_db}`.ev SET payload = 'late one' WHERE id = %s", (key[0],))
        os.remove(flag)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("1 row(s) did not match where", err)
        row = gatest.sql("source", f"SELECT payload FROM `{sc.src_db}`.ev WHERE id = %s", (key[0],))
        self.assertEqual(row, ((("late one",)),), "the changed row is back in the table")
        # The changed row's new version is the one to find, once.
        live = dict(before)
        live.update(gatest.stored_checksums("source", sc.src_db, "ev", where=f"id = {int(key[0])}"))
        self.assert_exactly_once(sc, live)

    def test_row_the_archive_holds_goes_back(self):
        sc = make(self, "part_there")
        before = self.before(sc)
        # The archive already holds one row of p2025_11, equal to the source's, written by nobody of this job.
        first = gatest.sql("source", f"SELECT id FROM `{sc.src_db}`.ev PARTITION (p2025_11) ORDER BY id LIMIT 1")[0][0]
        row = gatest.sql("source", f"SELECT id, created, payload, CAST(f AS DOUBLE) FROM `{sc.src_db}`.ev "
                                   f"WHERE id = %s", (first,))[0]
        gatest.sql("destination", f"INSERT INTO `{sc.dst_db}`.ev VALUES (%s, %s, %s, %s)", row)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.job("archive", cfg)
        self.assertIn("went back into ev and stays there", r.err, r)
        in_src = gatest.sql("source", f"SELECT COUNT(*) FROM `{sc.src_db}`.ev WHERE id = %s", (first,))[0][0]
        self.assertEqual(in_src, 1, "the row the archive held already stays in the source")
        others = {k: v for k, v in before.items()}
        now = stored(sc)
        doubled = [k for k, places in now.items() if len(places) > 1]
        self.assertEqual(len(doubled), 1, f"only the pre-placed row is on both sides: {doubled[:3]}")
        for k in doubled:
            others.pop(k)
        for key, sha in others.items():
            self.assertEqual([s for _, s in now[key]], [sha], f"row {key}")


class TestPartitionKills(Base):
    def test_kill_at_every_step_then_rerun(self):
        # CONVERT PARTITION, and the portable path's EXCHANGE PARTITION into an empty twin.
        for portable in ("0", "1"):
            for command in ("archive", "purge"):
                for point in POINTS:
                    if command == "purge" and point in ("partition_before_copy_commit", "partition_after_copy_commit"):
                        continue
                    for nth in (1, 2):
                        with self.subTest(portable=portable, command=command, point=point, nth=nth):
                            self.kill_then_rerun(command, point, nth, portable)

    def kill_then_rerun(self, command, point, nth, portable):
        env = {"GOARCHIVE_TEST_PORTABLE": portable}
        sc = make(self, "part_kill", rows_per_day=4)
        before = self.before(sc)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.job(command, cfg, env={"GOARCHIVE_FAULT": f"{point}:{nth}", **env})
        self.assertEqual(r.rc, -9, f"{command} at {point}:{nth} was not killed: {r}")
        if command == "archive":
            self.assert_nothing_lost(sc, before)
        r = sc.job(command, cfg, env=env)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(source_tables(sc), ["ev"], "no side table is left after the rerun")
        self.assertEqual(self.counts(sc)[1], 0)
        if command == "archive":
            self.assert_exactly_once(sc, before)
        else:
            self.assertEqual(self.counts(sc)[0], 160 * 4 - 75 * 4)
        state = gatest.sql("destination", f"SELECT state, COUNT(*) FROM `{sc.job_schema}`."
                                          "partition_steps GROUP BY state")
        self.assertEqual(dict(state), {"dropped": 2})
        # EXCHANGE leaves the emptied partitions in place; CONVERT takes them out of the table.
        self.assertEqual(len(partitions(sc)), 6 if portable == "1" else 4)

    def test_restore_refuses_unfinished_partition_work(self):
        sc = make(self, "part_rest", rows_per_day=4)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "partition_after_prove:1"})
        self.assertEqual(r.rc, -9, r)
        # `jobs` names the unfinished step, where its rows are, and the command that finishes it.
        r = sc.run("jobs", "-c", cfg)
        self.assertIn(f"partition p2025_10: archive detached (its rows are in the side table {sc.src_db}.ga_1_p2025_10, "
                      "0 copied); `goarchive archive -j j` finishes it", r.out)
        steps = sc.jobs_json(cfg)["j"]["partition_steps"]
        self.assertEqual(steps, [{"partition": "p2025_10", "command": "archive", "state": "detached",
                                  "side_table": f"{sc.src_db}.ga_1_p2025_10", "rows_copied": 0}])
        r = sc.job("purge", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("that only archive may finish; run `goarchive archive -j j` first", r.err)
        r = sc.run("restore", "-c", cfg, "-j", "j", "--no-progress", "--where", "1=1")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("that only archive may finish; run `goarchive archive -j j` first", r.err)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)


class TestPartitionLocks(Base):
    def test_long_transaction_leaves_partitions_whole(self):
        sc = make(self, "part_busy", rows_per_day=4)
        before = self.before(sc)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE, "ddl_lock_wait_timeout": 1}})
        holder = gatest.connect("source", sc.src_db, autocommit=False)
        holder.cursor().execute("SELECT * FROM ev WHERE created >= '2026-02-10' LIMIT 1 FOR UPDATE")
        waits, stop = [], threading.Event()

        def probe():
            conn = gatest.connect("source", sc.src_db)
            while not stop.is_set():
                t0 = time.monotonic()
                conn.cursor().execute("INSERT INTO ev (created, payload) VALUES ('2026-02-20', 'probe')")
                waits.append(time.monotonic() - t0)
                time.sleep(0.02)
            conn.close()

        th = threading.Thread(target=probe)
        th.start()
        try:
            r = sc.job("archive", cfg)
        finally:
            stop.set()
            th.join()
            holder.rollback()
            holder.close()
        self.assertEqual(r.rc, 0, r)
        self.assertIn("left for the next run", r.err)
        self.assertEqual(len(partitions(sc)), 6, "both partitions stay whole")
        self.assertEqual(source_tables(sc), ["ev"])
        cold = gatest.sql("source", f"SELECT COUNT(*) FROM `{sc.src_db}`.ev PARTITION (p2025_10, p2025_11)")[0][0]
        self.assertEqual(cold, 61 * 4, "the row path left the rows of the partitions left whole alone")
        self.assertGreater(len(waits), 50)
        self.assertLess(max(waits), 1.6, f"the application waited {max(waits):.2f} s behind a DDL")
        gatest.sql("source", f"DELETE FROM `{sc.src_db}`.ev WHERE payload = 'probe'")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(partitions(sc), ["p2025_12", "p2026_01", "p2026_02", "pmax"])
        self.assert_exactly_once(sc, before)


class TestPartitionPrivileges(Base):
    def test_missing_privileges_refused_before_anything_is_recorded(self):
        sc = make(self, "part_priv", rows_per_day=2)
        q = gatest.quote_ident
        user, pw = f"gp{os.getpid() % 100000}", "gp-test-pw-1"
        for server in ("source", "destination"):
            gatest.sql(server, f"DROP USER IF EXISTS '{user}'@'%%'")
            gatest.sql(server, f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (pw,))
            self.addCleanup(gatest.sql, server, f"DROP USER IF EXISTS '{user}'@'%%'")
        gatest.sql("source", f"GRANT SELECT, INSERT, DELETE ON {q(sc.src_db)}.* TO '{user}'@'%'")
        for db in (sc.dst_db, sc.job_schema):
            gatest.sql("destination", f"GRANT ALL ON {q(db)}.* TO '{user}'@'%'")
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        with open(cfg) as f:
            text = f.read().replace(f'user = "{gatest.env("GA_USER")}"', f'user = "{user}"')
        with open(cfg, "w") as f:
            f.write(text.replace('password_env = "GA_PASSWORD"', 'password_env = "GP_PW"'))
        env = {"GP_PW": pw}
        before = sc.state()
        r = sc.job("archive", cfg, env=env)
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"the source account lacks ALTER on {sc.src_db}.ev; run on the source: GRANT ALTER ON "
                      f"{q(sc.src_db)}.{q('ev')} TO '{user}'@'%'; or set partitions = \"off\"", r.err)
        self.assertIn(f"the source account lacks CREATE, DROP on {sc.src_db}.*", r.err)
        self.assertEqual(len(partitions(sc)), 6)
        self.assertEqual({k: v for k, v in sc.state().items() if k != "job_schema exists"},
                         {k: v for k, v in before.items() if k != "job_schema exists"}, "the refused run changed data")
        # The GRANTs the messages name are enough.
        gatest.sql("source", f"GRANT ALTER ON {q(sc.src_db)}.{q('ev')} TO '{user}'@'%'")
        gatest.sql("source", f"GRANT CREATE, DROP ON {q(sc.src_db)}.* TO '{user}'@'%'")
        r = sc.job("archive", cfg, env=env)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(partitions(sc), ["p2025_12", "p2026_01", "p2026_02", "pmax"])


class TestPartitionPlan(Base):
    def test_dry_run_names_each_partition(self):
        sc = make(self, "part_dry", rows_per_day=2)
        cfg = sc.config({"j": {"root_table": "ev", "where": WHERE}})
        r = sc.run("dry-run", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("partition p2025_10 (values less than '2025-11-01'", r.out)
        self.assertIn("whole: every row matches where", r.out)
        self.assertIn("partition pmax (values less than MAXVALUE", r.out)
        self.assertIn("row path: the last partition: new rows land in it", r.out)
        self.assertEqual(len(partitions(sc)), 6, "dry-run changes nothing")
        r = sc.run("dry-run", "-c", cfg, "-j", "j", "--partitions", "off")
        self.assertIn('row path: partitions = "off"', r.out)
        r = sc.run("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("job j: note: partition p2025_11 (values less than '2025-12-01'", r.out)
        self.assertIn("whole: every row matches where", r.out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
