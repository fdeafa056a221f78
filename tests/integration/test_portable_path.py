#!/usr/bin/python3
"""The portable path: GOARCHIVE_TEST_PORTABLE=1 (honoured only by builds with the test hooks) makes the dialect layer
(lib/db/dialect.h) take MySQL's choices wherever MariaDB can run them. One archive of a tree the source's foreign
keys guard (the shape MariaDB deletes in one pass of DELETE ... RETURNING), gated on the replica, once with the
switch and once without: the statements each server saw (general logs and status counters) show every choice the
switch changes, and both runs end with the data invariant. validate -v names the server and the path."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402
from test_key_lists import GeneralLog  # noqa: E402
from test_safety_live import JOB, RELATIONS, TABLES, tree  # noqa: E402

ON = {"GOARCHIVE_TEST_PORTABLE": "1"}
OFF = {"GOARCHIVE_TEST_PORTABLE": "0"}


def replication_block():
    return "\n".join(["", "[replication]", "enabled = true", "max_lag_seconds = 10", "check_interval = 0.5", "",
                      "[[replication.servers]]", f'host = "{os.environ.get("GA_HOST", "127.0.0.1")}"',
                      f"port = {gatest.env('GA_REPLICA_PORT')}", f'user = "{gatest.env("GA_USER")}"',
                      'password_env = "GA_PASSWORD"', ""])


def ran(log, text):
    """The statements in LOG that hold TEXT, but the log's own reads."""
    return [s for s in log.statements(text) if "general_log" not in s]


def loads():
    return int(gatest.sql("destination", "SHOW GLOBAL STATUS LIKE 'Com_load'")[0][1])


class PortablePathTest(unittest.TestCase):
    def archive(self, name, env):
        """Archives the guarded tree of test_safety_live under ENV; returns (Scenario, source log, replica log,
        LOAD DATA statements the destination ran)."""
        sc = Scenario(self, name)
        tree(sc)
        before = sc.snapshot(TABLES)
        src_log, replica_log = GeneralLog(self, "source"), GeneralLog(self, "replica")
        cfg = sc.config({"j": JOB}, processing={"batch_size": 10}, extra=replication_block())
        l0 = loads()
        r = sc.job("archive", cfg, env=env)
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(before, RELATIONS)
        self.assertEqual(set(sc.rows("source", "p")), {(2,), (4,), (6,)})
        return sc, src_log, replica_log, loads() - l0

    def test_the_switch_takes_mysqls_choices(self):
        sc, src_log, replica_log, load_count = self.archive("portable_on", ON)
        on_tables = [s for t in TABLES for s in src_log.statements(f"`{sc.src_db}`.`{t}`") if "general_log" not in s]
        deletes = [s for s in on_tables if s.split("*/")[-1].lstrip().startswith("DELETE")]
        self.assertTrue(deletes)
        self.assertFalse([s for s in deletes if " RETURNING " in s], "DELETE ... RETURNING on the portable path")
        # The locked re-read of every table of the tree, then the exact-key deletes.
        for t in TABLES:
            self.assertTrue([s for s in on_tables if f"`{t}`" in s and s.rstrip().endswith("FOR UPDATE")], t)
        # No bulk INSERT: the copy went through LOAD DATA (one per table and batch).
        self.assertGreaterEqual(load_count, len(TABLES))
        # The gate read the replica with MySQL's statement.
        self.assertTrue(ran(replica_log, "SHOW REPLICA STATUS"))
        self.assertFalse(ran(replica_log, "SHOW ALL SLAVES STATUS"))

    def test_without_the_switch_mariadb_takes_its_own(self):
        sc, src_log, replica_log, load_count = self.archive("portable_off", OFF)
        deletes = [s for t in TABLES for s in src_log.statements(f"`{sc.src_db}`.`{t}`")
                   if "general_log" not in s and s.split("*/")[-1].lstrip().startswith("DELETE")]
        self.assertTrue(deletes)
        self.assertTrue(all(" RETURNING " in s for s in deletes), deletes)
        self.assertEqual(load_count, 0, "LOAD DATA where MariaDB takes the bulk INSERT")
        self.assertTrue(ran(replica_log, "SHOW ALL SLAVES STATUS"))
        self.assertFalse(ran(replica_log, "SHOW REPLICA STATUS"))

    def test_validate_names_the_server_and_the_path(self):
        sc = Scenario(self, "portable_val")
        tree(sc)
        cfg = sc.config({"j": JOB})
        version = gatest.sql("source", "SELECT VERSION()")[0][0].split("-")[0]
        r = sc.run("validate", "-c", cfg, "-v", env=ON)
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"source: MariaDB {version} (portable path: MySQL's choices where MariaDB runs them)", r.out)
        self.assertIn("deletes: a locked re-read, then an exact-key delete (no DELETE ... RETURNING", r.out)
        r = sc.run("validate", "-c", cfg, "-v", env=OFF)
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"source: MariaDB {version}\n", r.out)
        self.assertIn("deletes: DELETE ... RETURNING, one pass per batch", r.out)
        self.assertIn("replica status: SHOW ALL SLAVES STATUS", r.out)


if __name__ == "__main__":
    unittest.main()
