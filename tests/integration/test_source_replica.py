#!/usr/bin/python3
"""A source that is a replica (issue 31, item 12). [source] pointed at the GTID replica of scripts/servers.sh instead
of its primary: archive and purge delete rows there that the primary still holds, and the primary's own later
change of those rows stops the replica's SQL thread (error 1032). They are refused, exit 2, with one message naming
the primary (Master_Host:Master_Port) and the way out, before anything is written anywhere; validate reports it.
copy-only (which writes nothing to the source) and dry-run (nothing at all) only warn. [source] allow_replica = true
lets a writable replica through; a read-only one stays refused, since it is not meant to be written."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario, toml_value  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
PC_JOB = {"root_table": "p", "where": "id <= 5", "relations": [{"table": "c", "foreign_key": "p_id"}]}
q = gatest.quote_ident


def set_source_keys(path, drop=(), **keys):
    """Sets KEYS in the [source] section of the config file at PATH (replacing those it has) and removes the keys
    named in DROP; returns PATH."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, section = [], None
    for line in lines:
        if line.startswith("["):
            if section == "source":
                out[-1:-1] = [f"{k} = {toml_value(v)}" for k, v in keys.items()]
            section = line.strip("[]")
        elif section == "source" and "=" in line:
            k = line.split("=", 1)[0].strip()
            if k in keys or k in drop:
                continue
        out.append(line)
    with open(path, "w") as f:
        f.write("\n".join(out))
    return path


def schema_exists(server, name):
    return bool(gatest.sql(server, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=%s",
                           (name,))[0][0])


class SourceReplicaTest(unittest.TestCase):
    def setUp(self):
        self.sc = sc = Scenario(self, "srcrepl")
        # Created on the primary, replicated to the replica (the destination gets its own empty tables).
        for stmt in (f"CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(10)) {INNODB}",
                     f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v VARCHAR(10), KEY (p_id)) {INNODB}"):
            sc.both(stmt)
        sc.src("INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_10")
        sc.src("INSERT INTO c SELECT seq, 1 + seq % 10, CONCAT('c', seq) FROM seq_1_to_20")
        gatest.wait_replica_caught_up()
        self.primary = f"127.0.0.1:{gatest.env('GA_SOURCE_PORT')}"
        self.status = gatest.replica_status()
        self.assertEqual(self.status.get("Slave_SQL_Running"), "Yes", self.status)
        self.assertEqual(f"{self.status['Master_Host']}:{self.status['Master_Port']}", self.primary)
        self.assertEqual(gatest.sql("replica", "SELECT @@GLOBAL.read_only")[0][0], 0, "the replica is left writable")

    def config(self, drop=(), **source):
        return set_source_keys(self.sc.config({"j": PC_JOB}), drop,
                               **dict({"port": int(gatest.env("GA_REPLICA_PORT"))}, **source))

    def replica_count(self, table):
        return gatest.sql("replica", f"SELECT COUNT(*) FROM {q(self.sc.src_db)}.{q(table)}")[0][0]

    def replica_state(self):
        return {t: gatest.checksum_table("replica", self.sc.src_db, t) for t in ("p", "c")}

    def assert_refused(self, cfg, command, *texts):
        """COMMAND exits 2 with TEXTS on stderr and writes nothing: not on the replica, the primary or the
        destination, and no tracking schema anywhere."""
        before = (self.replica_state(), self.sc.state())
        r = self.sc.job(command, cfg)
        self.assertEqual(r.rc, 2, r)
        for t in texts:
            self.assertIn(t, r.err, r)
        self.assertNotIn("batch 1 start", r.err)
        self.assertEqual((self.replica_state(), self.sc.state()), before, f"a refused {command} wrote something")
        for server in gatest.SERVERS:
            self.assertFalse(schema_exists(server, self.sc.job_schema), f"{command} created the registry on {server}")
        return r

    def test_source_is_replica_refused(self):
        cfg = self.config()
        for command in ("archive", "purge"):
            with self.subTest(command):
                r = self.assert_refused(cfg, command, f"is a replica of {self.primary} (replication running)",
                                        f"point [source] at the primary {self.primary}",
                                        "set allow_replica = true in [source]", "error 1032")
                self.assertEqual(r.err.count("is a replica of"), 1, r)
        self.assertEqual(self.replica_count("p"), 10)
        self.assertEqual(self.replica_count("c"), 20)
        self.assertEqual(gatest.replica_status().get("Slave_SQL_Running"), "Yes")
        # validate reports it (it checks what archive would do): a problem, not "ok"; exit 2 like archive's refusal,
        # since the fix is in the configuration and it is the only problem.
        r = self.sc.run("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"is a replica of {self.primary}", r.err)
        self.assertNotIn("job j: ok", r.out)

    def test_source_is_replica_stopped_or_unprivileged_still_refused(self):
        """Replication configured but stopped is still a replica; and an account without SLAVE MONITOR (the
        least-privilege grants of goarchive(1)) cannot read SHOW SLAVE STATUS, yet the refusal stands."""
        cfg = self.config()
        gatest.sql("replica", "STOP SLAVE")
        try:
            self.assert_refused(cfg, "archive", f"is a replica of {self.primary} (replication configured, not running)")
        finally:
            gatest.sql("replica", "START SLAVE")
        gatest.wait_replica_caught_up()
        user = f"lp_{self.sc.id}"[:32]
        for host in ("127.0.0.1", "localhost"):
            gatest.sql("source", f"CREATE USER '{user}'@'{host}' IDENTIFIED BY 'lp-pw'")
            gatest.sql("source", f"GRANT SELECT, DELETE ON {q(self.sc.src_db)}.* TO '{user}'@'{host}'")
            self.addCleanup(gatest.sql, "source", f"DROP USER IF EXISTS '{user}'@'{host}'")
        gatest.wait_replica_caught_up()
        lp = self.config(drop=("password_env",), user=user, password="lp-pw")
        if gatest.PORTABLE:
            # MySQL's handling: no status variable tells a replica to an account without REPLICATION CLIENT, so
            # archive is not refused but told how to make it so (dry-run: this replica must not lose rows).
            r = self.sc.job("dry-run", lp, "j", "--mode", "archive")
            self.assertEqual(r.rc, 0, r)
            self.assertIn("is a replica: the account may not read SHOW REPLICA STATUS; GRANT REPLICATION CLIENT",
                          r.err)
            return
        self.assert_refused(lp, "archive", "is a replica of a primary it does not name to this account",
                            "set allow_replica = true in [source]")

    def test_source_replica_copy_only_and_dry_run_warn(self):
        """copy-only writes nothing to the source and dry-run nothing at all: not refused, but they say so."""
        cfg = self.config()
        r = self.sc.job("dry-run", cfg, "j", "--mode", "archive")
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"a real archive run would be refused: source 127.0.0.1:{gatest.env('GA_REPLICA_PORT')} is a "
                      "replica", r.err)
        self.assertIn(f"is a replica of {self.primary}", r.err)
        r = self.sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"is a replica of {self.primary} (replication running): copy-only only reads it", r.err)
        self.assertEqual(self.sc.count("destination", "p"), 5)
        self.assertEqual(self.replica_count("p"), 10)

    def test_source_replica_allowed_when_writable(self):
        """allow_replica = true: a writable replica is archived (with a warning); validate passes with a note. A
        read-only one is still refused, and so is read_only on a server that is no replica."""
        cfg = self.config(allow_replica=True)
        r = self.sc.run("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"note: source 127.0.0.1:{gatest.env('GA_REPLICA_PORT')} is a replica of "
                      f"{self.primary}", r.out)
        gatest.sql("replica", "SET GLOBAL read_only = 1")
        try:
            r = self.assert_refused(cfg, "archive", "is read-only (read_only = ON)",
                                    f"a replica of {self.primary}", "allow_replica does not lift this")
        finally:
            gatest.sql("replica", "SET GLOBAL read_only = 0")
        r = self.sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("allow_replica = true in [source] lets archive delete rows there", r.err)
        self.assertEqual(self.replica_count("p"), 5)
        self.assertEqual(self.sc.count("destination", "p"), 5)
        self.assertEqual(self.sc.count("source", "p"), 10)  # the primary keeps them: why this is refused by default
        # A read-only server that replicates from nobody: the primary itself, read_only for a switchover.
        gatest.sql("source", "SET GLOBAL read_only = 1")
        try:
            pcfg = self.sc.config({"j": PC_JOB})
            r = self.sc.job("purge", pcfg)
            self.assertEqual(r.rc, 2, r)
            self.assertIn("is read-only (read_only = ON): purge deletes rows there", r.err)
            self.assertIn("point [source] at the writable primary", r.err)
        finally:
            gatest.sql("source", "SET GLOBAL read_only = 0")
        self.assertEqual(self.sc.count("source", "p"), 10)


if __name__ == "__main__":
    unittest.main()
