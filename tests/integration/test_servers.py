#!/usr/bin/python3
"""The three test servers are up, reachable as GA_USER, and the replica follows the source.

Run after `eval "$(scripts/servers.sh env)"`; without the GA_* variables it fails.
"""

import os
import sys
import time
import unittest
import uuid

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402

EXPECTED_IDS = {"source": 1, "replica": 2, "destination": 3}


class ServersTest(unittest.TestCase):
    def setUp(self):
        gatest.require_env()
        self.db = f"ga_servers_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.qdb = gatest.quote_ident(self.db)
        gatest.sql("source", f"CREATE DATABASE {self.qdb}")
        gatest.sql("source", f"CREATE TABLE {self.qdb}.t (id INT PRIMARY KEY, note VARCHAR(50)) ENGINE=InnoDB")

    def tearDown(self):
        gatest.sql("source", f"DROP DATABASE IF EXISTS {self.qdb}")
        gatest.wait_replica_caught_up()
        self.assertEqual(gatest.sql("replica", "SHOW DATABASES LIKE %s", (self.db,)), ())

    def test_each_server_is_the_one_named(self):
        for name, server_id in EXPECTED_IDS.items():
            with self.subTest(server=name):
                row = gatest.sql(name, "SELECT @@server_id, @@gtid_domain_id, @@version")[0]
                self.assertEqual(row[:2], (server_id, server_id))
                self.assertIn("MariaDB", row[2])

    def test_row_inserted_on_source_appears_on_replica(self):
        note = "héllo 😀"
        gatest.sql("source", f"INSERT INTO {self.qdb}.t VALUES (1, %s)", (note,))
        deadline = time.monotonic() + 30
        while True:
            try:
                rows = gatest.sql("replica", f"SELECT id, note FROM {self.qdb}.t")
            except pymysql.MySQLError as e:
                if e.args[0] not in (1049, 1146):  # unknown database / table: not replicated yet
                    raise
                rows = ()
            if rows or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(rows, ((1, note),))
        self.assertEqual(gatest.checksum_table("replica", self.db, "t"), gatest.checksum_table("source", self.db, "t"))

    def test_replica_gtid_slave_pos_has_source_in_domain_1(self):
        gatest.sql("source", f"INSERT INTO {self.qdb}.t VALUES (2, 'gtid')")
        gatest.wait_replica_caught_up()
        source_id = gatest.sql("source", "SELECT @@server_id")[0][0]
        entries = gatest.parse_gtid_list(gatest.sql("replica", "SELECT @@gtid_slave_pos")[0][0])
        self.assertIn((1, source_id), [(domain, server) for domain, server, _ in entries])

    def test_destination_answers(self):
        self.assertIn("MariaDB", gatest.sql("destination", "SELECT @@version")[0][0])


if __name__ == "__main__":
    unittest.main()
