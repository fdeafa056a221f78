#!/usr/bin/python3
"""The files goarchive writes (issue 31, item 11): a symlink planted by another user in a shared directory must never
make a run (often root's) write another file. `--metrics-file PATH` writes a new temporary file created exclusively
beside PATH and renames it into place; `--log-file` (and [logging] file) appends but never through a symlink: a clear
error, exit 2, before anything moves."""

import glob
import os
import stat
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
PC_JOB = {"root_table": "p", "where": "id <= 5", "relations": [{"table": "c", "foreign_key": "p_id"}]}
VICTIM_TEXT = "precious: not a metrics file\n"


def pc(sc):
    """p -> c with 10 parents and 20 children in the source, empty tables on the destination."""
    for stmt in (f"CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(10)) {INNODB}",
                 f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v VARCHAR(10), KEY (p_id)) {INNODB}"):
        sc.both(stmt)
    sc.src("INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_10")
    sc.src("INSERT INTO c SELECT seq, 1 + seq % 10, CONCAT('c', seq) FROM seq_1_to_20")


class WrittenFilesTest(unittest.TestCase):
    def setUp(self):
        self.sc = Scenario(self, "files")
        pc(self.sc)
        self.cfg = self.sc.config({"j": PC_JOB})
        self.dir = os.path.join(self.sc.tmp, "collector")  # the shared directory
        os.mkdir(self.dir)
        self.victim = os.path.join(self.sc.tmp, "victim")  # a file the planter may not write, outside that directory
        with open(self.victim, "w") as f:
            f.write(VICTIM_TEXT)

    def victim_untouched(self):
        with open(self.victim) as f:
            self.assertEqual(f.read(), VICTIM_TEXT, "a planted symlink made the run write the victim file")

    def test_metrics_file_symlink(self):
        """Symlinks planted at PATH.tmp and at PATH itself: the victim stays as it was, PATH becomes a regular file
        with the run's metrics, readable by a collector running as another user, and no temporary file is left."""
        metrics = os.path.join(self.dir, "goarchive.prom")
        os.symlink(self.victim, metrics + ".tmp")
        r = self.sc.job("archive", self.cfg, "j", "--metrics-file", metrics)
        self.assertEqual(r.rc, 0, r)
        self.victim_untouched()
        st = os.lstat(metrics)
        self.assertTrue(stat.S_ISREG(st.st_mode), "the metrics file is not a regular file")
        self.assertEqual(st.st_mode & 0o777, 0o644)
        with open(metrics) as f:
            text = f.read()
        self.assertIn('goarchive_run_exit_code{job="j"} 0', text)
        self.assertIn('goarchive_last_run_roots{job="j"} 5', text)
        self.assertEqual(glob.glob(metrics + ".tmp.*"), [], "a temporary metrics file was left behind")
        self.assertTrue(os.path.islink(metrics + ".tmp"), "the planted symlink itself is not goarchive's to remove")
        # A symlink at PATH: replaced by the new file (rename replaces the name), its target untouched; a failed
        # run reads the earlier file's last-success line, never the symlink's target.
        os.unlink(metrics)
        os.symlink(self.victim, metrics)
        r = self.sc.job("archive", self.cfg, "j", "--metrics-file", metrics)
        self.assertEqual(r.rc, 0, r)
        self.victim_untouched()
        self.assertFalse(os.path.islink(metrics))
        with open(metrics) as f:
            self.assertIn('goarchive_run_exit_code{job="j"} 0', f.read())
        self.assertEqual(self.sc.count("source", "p"), 5)
        self.assertEqual(self.sc.count("destination", "p"), 5)

    def test_log_file_symlink(self):
        """A symlink planted at the log file's path: exit 2 with one message naming it and the fix, the victim
        untouched, nothing moved. A regular log file is still appended to."""
        log = os.path.join(self.dir, "goarchive.log")
        os.symlink(self.victim, log)
        state = self.sc.state()
        for args in (["--log-file", log, "archive", "-c", self.cfg, "-j", "j", "--no-progress"],
                     ["validate", "-c", self.sc.config({"j": PC_JOB}, extra=f'\n[logging]\nfile = "{log}"\n')]):
            with self.subTest(args[0]):
                r = self.sc.run(*args)
                self.assertEqual(r.rc, 2, r)
                self.assertIn(f"cannot open the log file {log}: it is a symbolic link", r.err)
                self.assertIn("to the file itself", r.err)
                self.victim_untouched()
                self.assertEqual(self.sc.state(), state)
        os.unlink(log)
        with open(log, "w") as f:
            f.write("earlier line\n")
        r = self.sc.run("--log-file", log, "archive", "-c", self.cfg, "-j", "j", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        with open(log) as f:
            text = f.read()
        self.assertTrue(text.startswith("earlier line\n"), "the log file was not appended to")
        self.assertIn("finished", text)
        self.victim_untouched()


if __name__ == "__main__":
    unittest.main()
