#!/usr/bin/python3
"""Safety refusals before any data moves: a destination that is the source's own data (the same server reached any
way, a replica, or the server the source replicates from), destination views, a job re-pointed at another source
while it has unfinished work, unsafe key columns, destination foreign keys and extra columns, and one running run per
job enforced by the registry. Each refusal: its exit code, one message naming the cause and the way out, nothing
written on any server (not even the tracking schema). And the legitimate neighbours keep working: an archive
database on the source server, an archive table with an extra defaulted column."""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario, toml_value  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
PC_JOB = {"root_table": "p", "where": "1=1", "relations": [{"table": "c", "foreign_key": "p_id"}]}
WRITERS = ("archive", "copy-only", "purge")
q = gatest.quote_ident


def pc(sc, dest=True):
    """p -> c on the source (and the destination) with 10 parents and 20 children in the source."""
    ddl = [f"CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(10)) {INNODB}",
           f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v VARCHAR(10), KEY (p_id)) {INNODB}"]
    for stmt in ddl:
        sc.src(stmt)
        if dest:
            sc.dst(stmt)
    sc.src("INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_10")
    sc.src("INSERT INTO c SELECT seq, 1 + seq % 10, CONCAT('c', seq) FROM seq_1_to_20")


def retarget(path, section, **keys):
    """Sets KEYS in [SECTION] of the config file at PATH (replacing those it has); returns PATH."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, current, pending = [], None, dict(keys)
    for line in lines:
        m = re.match(r"^\[(.*)\]$", line.strip())
        if m:
            if current == section:
                out[-1:-1] = [f"{k} = {toml_value(v)}" for k, v in pending.items()]
                pending = {}
            current = m.group(1)
        elif current == section and "=" in line and line.split("=", 1)[0].strip() in keys:
            k = line.split("=", 1)[0].strip()
            out.append(f"{k} = {toml_value(keys[k])}")
            pending.pop(k, None)
            continue
        out.append(line)
    with open(path, "w") as f:
        f.write("\n".join(out))
    return path


def schema_exists(server, name):
    return bool(gatest.sql(server, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=%s",
                           (name,))[0][0])


def drop_later(test, server, db):
    test.addCleanup(lambda: gatest.sql(server, f"DROP DATABASE IF EXISTS {q(db)}"))


def fingerprint(server, db):
    """(count, checksum) of every base table of DB on SERVER."""
    tables = [r[0] for r in gatest.sql(server, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s "
                                               "AND TABLE_TYPE='BASE TABLE' ORDER BY 1", (db,))]
    return {t: gatest.checksum_table(server, db, t) for t in tables}


class SafetyPreflightTest(unittest.TestCase):
    def assert_refused(self, sc, cfg, *texts, command="archive", rc=1, servers=(), job="j"):
        """COMMAND is refused with exit RC and every one of TEXTS on stderr; nothing changed on the scenario's
        databases nor on SERVERS ((server, db) pairs); no tracking schema was created anywhere."""
        state = sc.state()
        extra = {s: fingerprint(*s) for s in servers}
        schemas = {server: schema_exists(server, sc.job_schema) for server in gatest.SERVERS}
        r = sc.job(command, cfg, job)
        self.assertEqual(r.rc, rc, r)
        for t in texts:
            self.assertIn(t, r.err, r)
        self.assertNotIn("batch 1 start", r.err)
        self.assertEqual(sc.state(), state, f"a refused {command} changed a server")
        for s, fp in extra.items():
            self.assertEqual(fingerprint(*s), fp, f"a refused {command} changed {s}")
        for server, existed in schemas.items():
            self.assertEqual(schema_exists(server, sc.job_schema), existed,
                             f"a refused {command} created the tracking schema on the {server}")
        return r

    def refused_everywhere(self, sc, cfg, *texts, rc=2, servers=()):
        for command in WRITERS:
            with self.subTest(command):
                self.assert_refused(sc, cfg, *texts, command=command, rc=rc, servers=servers)
        for command, args in (("archive", ["--dry-run"]), ("dry-run", [])):
            with self.subTest(f"{command} {args}"):
                state = sc.state()
                r = sc.job(command, cfg, "j", *args)
                self.assertEqual(r.rc, rc, r)
                for t in texts:
                    self.assertIn(t, r.err, r)
                self.assertEqual(sc.state(), state)
        with self.subTest("validate"):
            r = sc.run("validate", "-c", cfg, "-j", "j")
            self.assertNotEqual(r.rc, 0, r)
            for t in texts:
                self.assertIn(t, r.err, r)
        self.assertFalse(schema_exists("source", sc.job_schema))
        self.assertFalse(schema_exists("destination", sc.job_schema))

    # -- 1. the destination is the source's own data --------------------------------------------------------------
    def test_destination_is_the_source_database_over_tcp(self):
        sc = Scenario(self, "samedb")
        pc(sc, dest=False)
        cfg = retarget(sc.config({"j": PC_JOB}), "destination", port=int(gatest.env("GA_SOURCE_PORT")),
                       database=sc.src_db)
        self.addCleanup(lambda: gatest.sql("source", f"DROP DATABASE IF EXISTS {q(sc.job_schema)}"))
        self.refused_everywhere(sc, cfg, f"the destination database {sc.src_db}", "is the source database itself",
                                "set [destination] database to another database")
        self.assertEqual(sc.count("source", "p"), 10)
        self.assertEqual(sc.count("source", "c"), 20)

    def test_destination_is_the_source_database_over_the_socket(self):
        sc = Scenario(self, "samesock")
        pc(sc, dest=False)
        cfg = retarget(sc.config({"j": PC_JOB}), "destination", socket=gatest.env("GA_SOURCE_SOCKET"),
                       database=sc.src_db)
        self.addCleanup(lambda: gatest.sql("source", f"DROP DATABASE IF EXISTS {q(sc.job_schema)}"))
        self.refused_everywhere(sc, cfg, "is the source database itself")
        # And the source over the socket, the destination over TCP: the same server either way round.
        cfg = retarget(sc.config({"j": PC_JOB}), "source", socket=gatest.env("GA_SOURCE_SOCKET"))
        retarget(cfg, "destination", port=int(gatest.env("GA_SOURCE_PORT")), database=sc.src_db)
        self.assert_refused(sc, cfg, "is the source database itself", rc=2)
        self.assertEqual(sc.count("source", "c"), 20)

    def test_destination_is_a_replica_of_the_source(self):
        sc = Scenario(self, "replica")
        pc(sc, dest=False)
        gatest.wait_replica_caught_up()
        cfg = retarget(sc.config({"j": PC_JOB}), "destination", port=int(gatest.env("GA_REPLICA_PORT")),
                       database=sc.src_db)
        self.addCleanup(lambda: gatest.sql("replica", f"DROP DATABASE IF EXISTS {q(sc.job_schema)}"))
        self.refused_everywhere(sc, cfg, "holds the source's own data", "replicate one from the other",
                                servers=[("replica", sc.src_db)])
        self.assertFalse(schema_exists("replica", sc.job_schema))

    def test_source_replicates_from_the_destination(self):
        # Run against the replica as the source: the real source is the server it replicates from.
        sc = Scenario(self, "upstream")
        pc(sc, dest=False)
        gatest.wait_replica_caught_up()
        cfg = retarget(sc.config({"j": PC_JOB}), "source", port=int(gatest.env("GA_REPLICA_PORT")))
        retarget(cfg, "destination", port=int(gatest.env("GA_SOURCE_PORT")), database=sc.src_db)
        self.addCleanup(lambda: gatest.sql("source", f"DROP DATABASE IF EXISTS {q(sc.job_schema)}"))
        for command in WRITERS:
            with self.subTest(command):
                self.assert_refused(sc, cfg, "holds the source's own data", command=command, rc=2,
                                    servers=[("replica", sc.src_db)])
        self.assertFalse(schema_exists("source", sc.job_schema))

    def test_source_logging_statements_is_refused_before_anything_moves(self):
        """binlog_format = STATEMENT cannot log a READ COMMITTED delete (error 1665 after the copy): refused, exit 1."""
        sc = Scenario(self, "stmtlog")
        pc(sc)
        saved = gatest.sql("source", "SELECT @@GLOBAL.binlog_format")[0][0]
        gatest.sql("source", "SET GLOBAL binlog_format = 'STATEMENT'")
        self.addCleanup(gatest.sql, "source", f"SET GLOBAL binlog_format = '{saved}'")
        cfg = sc.config({"j": {**PC_JOB, "where": "id <= 4"}})
        for command in ("archive", "purge"):
            r = sc.job(command, cfg)
            self.assertEqual(r.rc, 1, r)
            self.assertIn("the source logs statements (binlog_format = STATEMENT)", r.err)
            self.assertIn("set binlog_format = MIXED or ROW", r.err)
        self.assertEqual(sc.count("source", "p"), 10)
        self.assertEqual(sc.count("destination", "p"), 0)
        self.assertFalse(sc.job_schema_exists())
        before = sc.snapshot(["p", "c"])
        r = sc.job("copy-only", cfg)  # copy-only deletes nothing
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "p"), 4)
        self.assertEqual(sc.snapshot(["p", "c"]), before, "copy-only changed the source")
        sc.assert_nothing_lost(before, [("c", ["p_id"], "p", ["id"])])

    def test_archive_into_another_database_on_the_source_server(self):
        sc = Scenario(self, "otherdb")
        pc(sc)
        archive_db = sc.src_db + "_archive"
        drop_later(self, "source", archive_db)
        self.addCleanup(lambda: gatest.sql("source", f"DROP DATABASE IF EXISTS {q(sc.job_schema)}"))
        gatest.sql("source", f"CREATE DATABASE {q(archive_db)}")
        for t in ("p", "c"):
            gatest.sql("source", f"CREATE TABLE {q(archive_db)}.{t} LIKE {q(sc.src_db)}.{t}")
        cfg = retarget(sc.config({"j": {**PC_JOB, "where": "id <= 4"}}), "destination",
                       port=int(gatest.env("GA_SOURCE_PORT")), database=archive_db)
        r = sc.run("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(gatest.sql("source", f"SELECT COUNT(*) FROM {q(archive_db)}.p")[0][0], 4)
        self.assertEqual(gatest.sql("source", f"SELECT COUNT(*) FROM {q(archive_db)}.c")[0][0], 8)
        self.assertEqual(sc.count("source", "p"), 6)
        self.assertEqual(sc.count("source", "c"), 12)

    def test_destination_views_onto_the_source_tables(self):
        sc = Scenario(self, "dstview")
        pc(sc)
        archive_db = sc.src_db + "_v"
        drop_later(self, "source", archive_db)
        self.addCleanup(lambda: gatest.sql("source", f"DROP DATABASE IF EXISTS {q(sc.job_schema)}"))
        gatest.sql("source", f"CREATE DATABASE {q(archive_db)}")
        for t in ("p", "c"):
            gatest.sql("source", f"CREATE VIEW {q(archive_db)}.{t} AS SELECT * FROM {q(sc.src_db)}.{t}")
        cfg = retarget(sc.config({"j": PC_JOB}), "destination", port=int(gatest.env("GA_SOURCE_PORT")),
                       database=archive_db)
        self.assert_refused(sc, cfg, f"{archive_db}.p on the destination is a view, not a base table",
                            f"{archive_db}.c on the destination is a view")
        self.assertFalse(schema_exists("source", sc.job_schema))
        # The same on the archive server.
        sc.dst("DROP TABLE c")
        sc.dst(f"CREATE VIEW c AS SELECT id, 0 AS p_id, v FROM p")
        self.assert_refused(sc, retarget(sc.config({"j": PC_JOB}), "destination"), f"{sc.dst_db}.c on the "
                            "destination is a view, not a base table", command="copy-only")

    # -- 2. a job re-pointed at another source with unfinished work -----------------------------------------------
    def test_job_repointed_at_another_source_with_unfinished_work(self):
        sc = Scenario(self, "repoint")
        pc(sc)
        other = sc.src_db + "_b"
        drop_later(self, "source", other)
        gatest.sql("source", f"CREATE DATABASE {q(other)}")
        for t in ("p", "c"):
            gatest.sql("source", f"CREATE TABLE {q(other)}.{t} LIKE {q(sc.src_db)}.{t}")
            gatest.sql("source", f"INSERT INTO {q(other)}.{t} SELECT * FROM {q(sc.src_db)}.{t}")
        cfg = sc.config({"j": PC_JOB}, processing={"batch_size": 4})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_copy_commit"})
        self.assertEqual(r.rc, -9, r)
        self.assertGreater(sc.unfinished(), 0)
        moved = retarget(sc.config({"j": PC_JOB}, processing={"batch_size": 4}), "source", database=other)
        port = gatest.env("GA_SOURCE_PORT")
        before_other = fingerprint("source", other)
        # The archive database's owner record refuses another source first (exit 2) ...
        r = sc.job("archive", moved)
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"is filled by the runs of source ", r.err)
        self.assertIn(f"database {sc.src_db}, not ", r.err)
        # ... and an operator who removes it (the way out it names for a source that moved) still meets the
        # registry's refusal: the job's unfinished work belongs to the recorded source.
        gatest.sql("destination", f"DROP TABLE {q(sc.dst_db)}.goarchive_owner")
        before_dst = sc.state()
        r = sc.job("archive", moved)
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"recorded for the source 127.0.0.1:{port}/{sc.src_db}", r.err)
        self.assertIn(f"but it now points at 127.0.0.1:{port}/{other}", r.err)
        self.assertIn(f"Point the job back at 127.0.0.1:{port}/{sc.src_db} and rerun it to finish its work", r.err)
        self.assertEqual(fingerprint("source", other), before_other, "the other source was touched")
        self.assertEqual(sc.state(), before_dst)
        # The refusal holds on every rerun (the recorded source is not overwritten)...
        r = sc.job("archive", moved)
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"recorded for the source 127.0.0.1:{port}/{sc.src_db}", r.err)
        # ... and pointing the job back finishes its work.
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)
        self.assertEqual(sc.count("source", "p"), 0)
        self.assertEqual(sc.count("destination", "p"), 10)
        self.assertEqual(fingerprint("source", other), before_other)

    def test_unfinished_work_of_another_root_scope_is_refused(self):
        sc = Scenario(self, "scope")
        pc(sc)
        cfg = sc.config({"j": PC_JOB}, processing={"batch_size": 4})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_copy_commit"})
        self.assertEqual(r.rc, -9, r)
        js = q(sc.job_schema)
        gatest.sql("destination", f"UPDATE {js}.batches SET scope = REPEAT('0', 32) WHERE state = 'copied'")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("has unfinished work", r.err)
        self.assertEqual(sc.count("source", "p"), 10)

    # -- 3. unsafe keys ---------------------------------------------------------------------------------------------
    def test_nullable_configured_primary_key(self):
        sc = Scenario(self, "nullkey")
        sc.both(f"CREATE TABLE t (id INT PRIMARY KEY, code VARCHAR(10) NULL, UNIQUE KEY (code)) {INNODB}")
        sc.src("INSERT INTO t VALUES (1, 'a'), (2, NULL), (3, NULL)")
        cfg = sc.config({"j": {"root_table": "t", "where": "1=1", "primary_key": "code"}})
        self.assert_refused(sc, cfg, "jobs.j.primary_key column", f"{sc.src_db}.t.code allows NULL",
                            "omit primary_key to use the table's primary key")

    def test_configured_primary_key_that_is_not_unique(self):
        sc = Scenario(self, "notunique")
        sc.both(f"CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b INT NOT NULL, UNIQUE KEY (a, b)) {INNODB}")
        sc.src("INSERT INTO t VALUES (1, 1, 1), (2, 1, 2)")
        cfg = sc.config({"j": {"root_table": "t", "where": "1=1", "primary_key": "a"}})
        self.assert_refused(sc, cfg, "jobs.j.primary_key = (a) is not a unique key", rc=2)  # only the config can fix it
        ok = sc.config({"j": {"root_table": "t", "where": "1=1", "primary_key": ["a", "b"]}})
        r = sc.job("archive", ok)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "t"), 2)

    def test_approximate_number_key_columns(self):
        sc = Scenario(self, "floatkey")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, f DOUBLE NOT NULL, UNIQUE KEY (f)) {INNODB}")
        sc.both(f"CREATE TABLE c (id FLOAT PRIMARY KEY, p_id INT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE g (id INT PRIMARY KEY, pf DOUBLE NOT NULL) {INNODB}")
        sc.src("INSERT INTO p VALUES (1, 0.1), (2, 0.2)")
        sc.src("INSERT INTO c VALUES (0.1, 1), (0.3, 2)")
        sc.src("INSERT INTO g VALUES (1, 0.1)")
        cfg = sc.config({"j": {"root_table": "p", "where": "1=1", "relations": [
            {"table": "c", "foreign_key": "p_id"}, {"table": "g", "foreign_key": "pf", "references": "f"}]}})
        r = self.assert_refused(sc, cfg, f"column {sc.src_db}.c.id (primary key) is float, an approximate number",
                                f"column {sc.src_db}.p.f (references of relation g) is double",
                                f"column {sc.src_db}.g.pf (foreign_key of relation g) is double",
                                "change the column to an exact type")
        self.assertIn("3 problems", r.err)
        root = sc.config({"j": {"root_table": "p", "where": "1=1", "primary_key": "f"}})
        self.assert_refused(sc, root, f"column {sc.src_db}.p.f (the root key) is double", command="purge")

    # -- 4. one running run per job, by the registry ------------------------------------------------------------------
    def test_live_run_of_another_host_refuses_and_a_stale_one_is_taken_over(self):
        sc = Scenario(self, "onerun")
        pc(sc)
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {**PC_JOB, "where": "id <= 2"}})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        js = q(sc.job_schema)
        job_id = gatest.sql("destination", f"SELECT id FROM {js}.jobs WHERE name = 'j'")[0][0]
        gatest.sql("destination", f"INSERT INTO {js}.runs (job_id, command, host, pid, heartbeat_at) "
                                  f"VALUES (%s, 'archive', 'elsewhere.example', 4242, NOW(6))", (job_id,))
        other = gatest.sql("destination", f"SELECT MAX(id) FROM {js}.runs")[0][0]
        wider = sc.config({"j": PC_JOB})
        state = sc.state()
        r = sc.job("archive", wider)
        self.assertEqual(r.rc, 4, r)
        self.assertIn("host elsewhere.example (pid 4242)", r.err)
        self.assertIn("this run did nothing", r.err)
        self.assertEqual(sc.state(), state)
        self.assertEqual(gatest.sql("destination", f"SELECT status FROM {js}.runs WHERE id = %s", (other,))[0][0],
                         "running")
        self.assertEqual(gatest.sql("destination", f"SELECT COUNT(*) FROM {js}.runs")[0][0], 2)
        # Two minutes without a heartbeat: the run is gone; the next run closes it as crashed and goes on.
        gatest.sql("destination", f"UPDATE {js}.runs SET heartbeat_at = NOW(6) - INTERVAL 2 MINUTE WHERE id = %s",
                   (other,))
        r = sc.job("archive", wider)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("marked crashed", r.err)
        row = gatest.sql("destination", f"SELECT status, ended_at IS NOT NULL FROM {js}.runs WHERE id = %s", (other,))
        self.assertEqual(row[0], ("crashed", 1))
        self.assertEqual(sc.count("destination", "p"), 10)
        sc.assert_invariant(before, [("c", ["p_id"], "p", ["id"])])

    # -- 6. one problem, one way out ------------------------------------------------------------------------------
    def test_destination_database_missing_says_create_it(self):
        sc = Scenario(self, "nodstdb")
        pc(sc, dest=False)
        cfg = retarget(sc.config({"j": PC_JOB}), "destination", database=sc.dst_db + "_nope")
        self.assert_refused(sc, cfg, f"the destination database {sc.dst_db}_nope does not exist",
                            "create it with the job's archive tables: goarchive schema -c ",
                            f"(or by hand: CREATE DATABASE `{sc.dst_db}_nope`)")

    # -- 7. destination foreign keys and extra columns -------------------------------------------------------------
    def test_destination_foreign_key_outside_the_job(self):
        sc = Scenario(self, "dstfk")
        pc(sc)
        sc.dst(f"CREATE TABLE customers (id INT PRIMARY KEY) {INNODB}")
        sc.dst("ALTER TABLE p ADD CONSTRAINT fk_p_customer FOREIGN KEY (id) REFERENCES customers (id)")
        # A foreign key between two tables of the job is fine: parents are copied first.
        sc.dst("ALTER TABLE c ADD CONSTRAINT fk_c_p FOREIGN KEY (p_id) REFERENCES p (id)")
        cfg = sc.config({"j": PC_JOB})
        r = self.assert_refused(sc, cfg, f"destination foreign key fk_p_customer of {sc.dst_db}.p references "
                                f"{sc.dst_db}.customers, which is not a table of job j",
                                "set foreign_key_checks = false in [destination]", "DROP FOREIGN KEY `fk_p_customer`")
        self.assertNotIn("fk_c_p", r.err)
        self.assertIn("1 problem)", r.err)
        off = sc.config({"j": PC_JOB}, destination={"foreign_key_checks": False})
        r = sc.job("archive", off)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "c"), 20)

    def test_destination_extra_columns(self):
        sc = Scenario(self, "extracols")
        pc(sc)
        sc.dst("ALTER TABLE p ADD COLUMN must INT NOT NULL")
        sc.dst("ALTER TABLE c ADD COLUMN serial INT NOT NULL AUTO_INCREMENT UNIQUE")
        sc.dst("ALTER TABLE c ADD COLUMN note VARCHAR(10) NULL, ADD COLUMN kind INT NOT NULL DEFAULT 7, "
               "ADD COLUMN twice INT AS (p_id * 2) VIRTUAL")
        cfg = sc.config({"j": PC_JOB})
        r = self.assert_refused(sc, cfg, f"destination table {sc.dst_db}.p has an extra column must",
                                "the server cannot fill it", "SET DEFAULT",
                                f"destination table {sc.dst_db}.c has an extra AUTO_INCREMENT column serial")
        self.assertIn("2 problems", r.err)
        for name in ("note", "kind", "twice"):
            self.assertNotIn(f"column {name}", r.err)

    def test_archive_into_a_table_with_an_extra_defaulted_column(self):
        sc = Scenario(self, "archivedat")
        pc(sc)
        for t in ("p", "c"):
            sc.dst(f"ALTER TABLE {t} ADD COLUMN archived_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP")
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {**PC_JOB, "where": "id <= 5"}}, processing={"batch_size": 2}, verification="sha256")
        r = sc.run("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "p"), 5)
        self.assertEqual(sc.count("destination", "c"), 10)
        self.assertEqual(sc.count("source", "p"), 5)
        self.assertEqual(sc.dst("SELECT COUNT(*) FROM c WHERE archived_at > NOW() - INTERVAL 1 HOUR")[0][0], 10)
        # The source's columns arrived unchanged.
        for t in ("p", "c"):
            cols = ", ".join(q(c) for c in gatest.columns("source", sc.src_db, t))
            archived = {row[0]: row for row in sc.dst(f"SELECT {cols} FROM {t}")}
            for key, row in archived.items():
                self.assertEqual(row, before[t][(key,)])


if __name__ == "__main__":
    unittest.main()
