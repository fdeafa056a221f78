#!/usr/bin/python3
"""What a server refuses where MariaDB and MySQL differ only in the error they raise (db/dialect.h), run for real on
MariaDB; MySQL's numbers are unit-tested on recorded answers (unit/test_recorded_mysql.cpp).

- A table without a primary key where the server requires one (MariaDB innodb_force_primary_key: 1173; MySQL
  sql_require_primary_key: 3750). Every table goarchive creates has one, so `schema --apply`, archive and restore
  (the archive tables, the registry, the owner record, the commit proofs) all run with the requirement on; a source
  table without a primary key is refused by `schema` before any DDL, naming the table and the fix.
- A value written into a generated column (MariaDB 1906, MySQL 3105). The copy never writes one; when the archive's
  column turns generated after preflight, an INSERT's refusal names the table, the column and the fix (bulk INSERT
  and LOAD DATA drop the value silently: the verification fails the batch), and nothing is lost.
- JSON: MariaDB's (LONGTEXT) is archived and restored byte for byte; MySQL's binary JSON would rewrite it, so
  preflight refuses a json archive column for it (unit-tested on recorded COLUMN_TYPE values).
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import SHOP_JOB, SHOP_RELATIONS, SHOP_TABLES, Scenario, load_shop  # noqa: E402
from test_safety_live import paused_write  # noqa: E402

q = gatest.quote_ident
INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


def stored(sc, server, tables):
    db = sc.src_db if server == "source" else sc.dst_db
    return {t: gatest.stored_checksums(server, db, t) for t in tables}


def database_exists(server, db):
    return bool(gatest.sql(server, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=%s", (db,))[0][0])


class RequiredPrimaryKeyTest(unittest.TestCase):
    def require_primary_keys(self, *servers):
        """innodb_force_primary_key = ON on SERVERS until the test ends: the server refuses an InnoDB table
        without a primary key (1173), as MySQL does under sql_require_primary_key (3750)."""
        for server in servers:
            gatest.sql(server, "SET GLOBAL innodb_force_primary_key = ON")
            self.addCleanup(gatest.sql, server, "SET GLOBAL innodb_force_primary_key = OFF")
            with self.assertRaises(Exception) as refused:  # the requirement is on: a key-less table is refused
                gatest.sql(server, "CREATE TABLE test.ga_no_pk (a INT) ENGINE=InnoDB")
            self.assertEqual(refused.exception.args[0], 1173, refused.exception)

    def test_every_table_goarchive_creates_has_a_primary_key(self):
        sc = Scenario(self, "reqpk")
        load_shop(sc, orders=60)
        start = stored(sc, "source", SHOP_TABLES)
        gatest.sql("destination", f"DROP DATABASE {q(sc.dst_db)}")
        cfg = sc.config({"j": SHOP_JOB}, processing={"batch_size": 20}, destination={"foreign_key_checks": False})
        self.require_primary_keys("source", "destination")
        r = sc.job("schema", cfg, "j", "--apply")
        self.assertEqual(r.rc, 0, r)
        before = sc.snapshot(SHOP_TABLES)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertGreater(sc.count("destination", "orders"), 0)
        sc.assert_invariant(before, SHOP_RELATIONS)
        # Created by goarchive under the requirement: the registry, the archive's owner record, the commit proofs.
        created = {r[0] for r in gatest.sql("destination", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE "
                                                           "TABLE_SCHEMA=%s", (sc.job_schema,))}
        self.assertTrue({"jobs", "runs", "batches", "batch_keys", "root_marks", "batch_proofs"} <= created, created)
        self.assertEqual(sc.dst("SELECT COUNT(*) FROM goarchive_owner")[0][0], 1)
        self.assertEqual(sc.src("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                                "TABLE_NAME = 'goarchive_commits'")[0][0], 1)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(stored(sc, "source", SHOP_TABLES), start)
        for t in SHOP_TABLES:
            self.assertEqual(sc.count("destination", t), 0, t)
        self.assertEqual(sc.unfinished(), 0)

    def test_schema_refuses_a_source_table_without_a_primary_key_before_any_ddl(self):
        sc = Scenario(self, "reqpk_none")
        sc.src(f"CREATE TABLE p (id INT PRIMARY KEY, created DATE NOT NULL) {INNODB}")
        sc.src(f"CREATE TABLE c (p_id INT NOT NULL, note VARCHAR(20), KEY (p_id)) {INNODB}")
        sc.src("INSERT INTO p VALUES (1, '2001-01-01'), (2, '2001-01-02')")
        sc.src("INSERT INTO c VALUES (1, 'a'), (2, 'b')")
        gatest.sql("destination", f"DROP DATABASE {q(sc.dst_db)}")
        cfg = sc.config({"j": {"root_table": "p", "where": "created < '2002-01-01'",
                               "relations": [{"table": "c", "foreign_key": "p_id"}]}})
        self.require_primary_keys("destination")
        message = (f"table {sc.src_db}.c has no primary key: its archive table would have none, and goarchive "
                   "copies, verifies and deletes rows by exact key (and a server that requires primary keys, under "
                   "MySQL's sql_require_primary_key or MariaDB's innodb_force_primary_key, refuses such a table); add "
                   f"one on the source: ALTER TABLE {q(sc.src_db)}.`c` ADD PRIMARY KEY (...); nothing was created")
        for args in ((), ("--apply",)):
            r = sc.job("schema", cfg, "j", *args)
            self.assertEqual(r.rc, 1, r)
            self.assertEqual(r.err.strip().splitlines()[-1], f"goarchive: {message}", r)
            # Before any DDL: not even the parent's table, nor the database, was created.
            self.assertFalse(database_exists("destination", sc.dst_db))
        # archive refuses the job in preflight, as before.
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"table {sc.src_db}.c has no primary key", r.err)
        self.assertEqual(sc.count("source", "c"), 2)


class GeneratedColumnWriteTest(unittest.TestCase):
    def test_copy_into_a_column_generated_after_preflight(self):
        """preflight refuses an archive column that is generated where the source's is stored. One turned generated
        after preflight (between the first batch's read and its copy) is met by each copy path its own way: an
        INSERT (MySQL's path where local_infile is OFF, its default) fails with error 1906 (MySQL 3105), which the
        message turns into the table, the column and the fix; MariaDB's bulk INSERT and LOAD DATA drop the value
        silently (measured on 10.11.19), so the byte-exact verification fails the batch and the run names the table
        whose definition changed. Either way the batch rolls back: nothing is lost, and the fix lets a rerun
        archive every row."""
        sc = Scenario(self, "genwrite")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, a INT NOT NULL, b INT, created DATE NOT NULL) {INNODB}")
        cfg = sc.config({"j": {"root_table": "p", "where": "created < '2002-01-01'"}}, processing={"batch_size": 10})
        changed = (f"the definition of destination table {sc.dst_db}.p changed during the run (a column added, "
                   "dropped or retyped)")
        refused = (f"batch 1: the copy into {q(sc.dst_db)}.`p` was refused: column b of it is generated there, but "
                   "the source stores it as data (")
        fix = ("goarchive copies every stored column and never writes a generated one. Make it a stored column of "
               f"the source's type (ALTER TABLE {q(sc.dst_db)}.`p` DROP COLUMN `b`, ADD COLUMN `b` <the source's "
               "type>), then run again; nothing of this batch was copied")
        portable = {"GOARCHIVE_TEST_PORTABLE": "1"}
        for path, env, local_infile in (("INSERT", portable, "OFF"), ("bulk INSERT", {}, "ON"),
                                        ("LOAD DATA", portable, "ON")):
            with self.subTest(path=path):
                gatest.sql("destination", f"SET GLOBAL local_infile = {local_infile}")
                self.addCleanup(gatest.sql, "destination", "SET GLOBAL local_infile = ON")
                sc.src("DELETE FROM p")
                sc.dst("DELETE FROM p")
                for i in range(1, 31):
                    sc.src(f"INSERT INTO p VALUES ({i}, {i}, {i * 7}, '2001-01-01')")
                before = sc.snapshot(["p"])

                def make_b_generated():
                    sc.dst("SET STATEMENT lock_wait_timeout = 20 FOR ALTER TABLE p DROP COLUMN b, ADD COLUMN b INT AS "
                           "(a * 2) VIRTUAL")

                r = paused_write(self, sc, cfg, "after_read:1", make_b_generated, env=env)
                self.assertEqual(r.rc, 1, r)
                self.assertEqual(sum(1 for line in r.err.splitlines() if line.startswith("goarchive: ")), 1, r)
                self.assertIn(changed, r.err)
                if path == "INSERT":
                    self.assertIn(refused, r.err)
                    self.assertIn("The value specified for generated column 'b' in table 'p' has been ignored (error "
                                  "1906", r.err)
                    self.assertIn(fix, r.err)
                else:
                    self.assertIn("verification (sha256) failed: the destination row p (id) = (1) differs from the "
                                  "source; nothing was deleted", r.err)
                self.assertEqual(sc.count("destination", "p"), 0)
                sc.assert_invariant(before)
                # The fix the message names; the rerun archives every row.
                sc.dst("ALTER TABLE p DROP COLUMN b, ADD COLUMN b INT AFTER a")
                r = sc.job("archive", cfg, env=env)
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(sc.count("destination", "p"), 30)
                self.assertEqual(sc.count("source", "p"), 0)
                sc.assert_invariant(before)


class JsonStorageTest(unittest.TestCase):
    def test_mariadb_json_stays_byte_for_byte(self):
        """MariaDB's JSON is LONGTEXT with a json_valid CHECK: archive and restore keep its text exactly as written
        (spacing, key order, duplicate keys, number forms MySQL's binary JSON would rewrite), compared by the
        servers' own checksums; `schema` gives the archive column the source's LONGTEXT and CHECK, and validate -v
        names the JSON behaviour of each server."""
        sc = Scenario(self, "json")
        sc.src(f"CREATE TABLE p (id INT PRIMARY KEY, j JSON, created DATE NOT NULL) {INNODB}")
        texts = ['{"b": 1,   "a" : [1.0, 2.50e0, -0]}', '{"k":"v","k":"dup"}', '  [ ]  ', '1E400',
                 '{"z":{"y":{"x":"\\u00e9\\ud83d\\ude00"}}}', '12345678901234567890123', 'null']
        for i, t in enumerate(texts, 1):
            sc.src("INSERT INTO p VALUES (%s, %s, '2001-01-01')", (i, t))
        start = gatest.stored_checksums("source", sc.src_db, "p")
        gatest.sql("destination", f"DROP DATABASE {q(sc.dst_db)}")
        cfg = sc.config({"j": {"root_table": "p", "where": "created < '2002-01-01'"}}, processing={"batch_size": 3})
        r = sc.job("schema", cfg, "j", "--apply")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("CHECK (json_valid(`j`))", gatest.sql("destination", f"SHOW CREATE TABLE {q(sc.dst_db)}.p")[0][1])
        r = sc.run("validate", "-c", cfg, "-v")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("JSON: LONGTEXT with a json_valid CHECK, kept as written and archived byte for byte", r.out)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(gatest.stored_checksums("destination", sc.dst_db, "p"), start)
        self.assertEqual([t for (t,) in sc.dst("SELECT j FROM p ORDER BY id")], texts)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(gatest.stored_checksums("source", sc.src_db, "p"), start)
        self.assertEqual(sc.count("destination", "p"), 0)


if __name__ == "__main__":
    unittest.main()
