#!/usr/bin/python3
"""Reproduces the engine bug the shared-archive chaos rounds found (chaoskit.HELD_PARENT_ALLOWED): the copy-only sweep
keeps, in the copy of a root gone from the source, a row the source still holds (the parent of an only-version child
the application deleted), at its old version and under the gone root; an archive job of that row's current root then
meets it as a conflict, exit 1, on every run. Failed before bf74b08, which makes the sweep remove (and copy again
under their current root) the rows the source still holds. Not run by ctest.

  GOARCHIVE_TEST_DIR=/tmp/ga-chaos GA_SOURCE_PORT=26306 GA_REPLICA_PORT=26307 GA_DEST_PORT=26308 \
      scripts/servers.sh start source destination
  PYTHONPATH=tests/integration GOARCHIVE_BIN=build/goarchive /usr/bin/python3 tests/chaos/repro_held_parent.py"""
import os
import sys
import unittest

for var, value in (("GA_SOURCE_PORT", "26306"), ("GA_REPLICA_PORT", "26307"), ("GA_DEST_PORT", "26308"),
                   ("GA_HOST", "127.0.0.1"), ("GA_USER", "goarchive"), ("GA_PASSWORD", "goarchive-test-pw")):
    os.environ.setdefault(var, value)
from scenario import Scenario  # noqa: E402  (reads GOARCHIVE_BIN)


class Repro(unittest.TestCase):
    def test(self):
        sc = Scenario(self, "sweepbug")
        sc.both("CREATE TABLE r (id INT PRIMARY KEY, cold TINYINT NOT NULL, v INT NOT NULL) ENGINE=InnoDB")
        sc.both("CREATE TABLE c (id INT PRIMARY KEY, r_id INT NOT NULL, v INT NOT NULL, KEY (r_id)) ENGINE=InnoDB")
        sc.both("CREATE TABLE g (id INT PRIMARY KEY, c_id INT NOT NULL, v INT NOT NULL, KEY (c_id)) ENGINE=InnoDB")
        sc.src("INSERT INTO r VALUES (1, 1, 0), (2, 0, 0)")      # r1: copy-only jc and purge jp; r2: no job yet
        sc.src("INSERT INTO c VALUES (10, 1, 1)")
        sc.src("INSERT INTO g VALUES (100, 10, 1), (101, 10, 1)")
        rels = [{"table": "c", "foreign_key": "r_id"}, {"table": "g", "parent": "c", "foreign_key": "c_id"}]
        jobs = {"jc": {"root_table": "r", "where": "cold = 1 AND v = 0", "relations": rels},
                "jp": {"root_table": "r", "where": "cold = 1 AND v = 0", "relations": rels},
                "ja": {"root_table": "r", "where": "cold = 1 AND v = 2", "relations": rels}}
        cfg = sc.config(jobs)
        def go(mode, job):
            r = sc.run(mode, "-c", cfg, "-j", job, "--no-progress")
            print(f"--- {mode} -j {job}: rc={r.rc}\n{r.err[-1500:]}", file=sys.stderr)
            return r
        self.assertEqual(go("copy-only", "jc").rc, 0)          # archive: r1, c10, g100, g101
        sc.src("DELETE FROM g WHERE id = 101")                 # the application deletes g101
        sc.src("UPDATE c SET r_id = 2, v = 2 WHERE id = 10")   # ... moves c10 (with g100) to r2
        self.assertEqual(go("purge", "jp").rc, 0)              # r1 purged (its tree is r1 only now)
        self.assertEqual(go("copy-only", "jc").rc, 0)          # the sweep: r1's copy, root gone from the source
        print("archive c:", sc.dst("SELECT * FROM c"), " source c:", sc.src("SELECT * FROM c"), file=sys.stderr)
        print("archive g:", sc.dst("SELECT * FROM g"), " source g:", sc.src("SELECT * FROM g"), file=sys.stderr)
        sc.src("UPDATE r SET cold = 1, v = 2 WHERE id = 2")    # r2 becomes an archive root of job ja
        r1, r2 = go("archive", "ja"), go("archive", "ja")
        # The brief's rule: rows the source still holds (c10, g100) are removed from the gone root's copy and copied
        # again under their current root; ja archives r2 with c10 and g100, exit 0.
        self.assertEqual(sc.dst("SELECT id, r_id, v FROM c"), ((10, 2, 2),), "the archive holds an old c10")
        self.assertEqual((r1.rc, r2.rc), (0, 0), "archive of r2 fails on every run")


if __name__ == "__main__":
    unittest.main()
