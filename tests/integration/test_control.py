#!/usr/bin/python3
"""The control socket of a running job (issue 36, part 4): `[control] socket` and `goarchive ctl`.

A real archive run, slowed down by a small batch_size and a sleep between batches, is steered through its socket:
`status` answers JSON naming the job; `pause` stops the batches at a boundary (the source and the archive stop
changing while the process lives on, no transaction stays open, the run's heartbeat goes on); `set batch_size`
shows in the status and in the batches the registry records after it; `resume` continues; `stop` ends the run at a
batch boundary with SIGTERM's exit code, the socket removed. The rows are then where the invariant says, and a
rerun finishes the job. A socket path that is not a socket of ours (a regular file, a symbolic link) or that is not
absolute is refused with exit 2 before anything is touched, the file left as it was.
"""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import BIN, Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
PARENTS = 400
RELATIONS = [("c", ["p_id"], "p", ["id"])]
JOB = {"root_table": "p", "where": "id <= 300", "relations": [{"table": "c", "foreign_key": "p_id"}]}


def wait_until(what, check, timeout=30, step=0.1):
    """CHECK()'s first truthy value; fails naming WHAT after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


class ControlTest(unittest.TestCase):
    def setUp(self):
        sc = self.sc = Scenario(self, "ctl")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v VARCHAR(20), KEY (p_id), "
                f"FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.src(f"INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_{PARENTS}")
        sc.src(f"INSERT INTO c SELECT seq, (seq + 1) DIV 2, CONCAT('c', seq) FROM seq_1_to_{2 * PARENTS}")
        self.before = sc.snapshot(["p", "c"])
        self.run_dir = os.path.join(sc.tmp, "run")
        self.socket = os.path.join(self.run_dir, "j.sock")

    def config(self, socket_pattern=None, processing=None):
        pattern = socket_pattern if socket_pattern is not None else os.path.join(self.run_dir, "%j.sock")
        return self.sc.config({"j": JOB}, processing=processing or {"batch_size": 5, "sleep": 0.3},
                              extra=f'[control]\nsocket = "{pattern}"\n')

    def ctl(self, cfg, *words):
        """`goarchive ctl -c CFG -j j WORDS`: (exit code, reply parsed when it is JSON, stderr)."""
        r = self.sc.run("ctl", "-c", cfg, "-j", "j", *words, timeout=30)
        reply = json.loads(r.out) if r.out.strip().startswith("{") else None
        return r.rc, reply, r.err

    def status(self, cfg):
        rc, reply, err = self.ctl(cfg, "status")
        self.assertEqual(rc, 0, err)
        return reply

    def first_batch(self, cfg):
        """The status once the run answers (the socket file exists a moment before it listens) and has a batch."""
        def answered():
            rc, reply, _ = self.ctl(cfg, "status")
            return reply if rc == 0 and reply["batches"] >= 1 else None
        return wait_until("a first batch in the status", answered)

    def start(self, cfg, env=None):
        """The archive run in the background, its stderr in a file (a pipe nobody reads could fill and block it)."""
        self.log_path = os.path.join(self.sc.tmp, "run.log")
        log = open(self.log_path, "w")
        self.addCleanup(log.close)
        e = dict(os.environ)
        e.update(env or {})
        proc = subprocess.Popen([BIN, "archive", "-c", cfg, "-j", "j", "--no-progress"], stdout=subprocess.DEVNULL,
                                stderr=log, env=e)

        def stop_it():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.addCleanup(stop_it)
        return proc

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def registry(self, stmt):
        return gatest.sql("destination", stmt, db=self.sc.job_schema)

    def open_transactions(self, server):
        """Transactions on SERVER that have been open for more than a second (this suite's servers are ours)."""
        return gatest.sql(server, "SELECT COUNT(*) FROM information_schema.INNODB_TRX "
                                  "WHERE trx_started < NOW() - INTERVAL 1 SECOND")[0][0]

    def test_status_pause_set_resume_stop_on_a_real_run(self):
        sc = self.sc
        cfg = self.config()
        proc = self.start(cfg, env={"GOARCHIVE_HEARTBEAT_SECONDS": "0.5"})
        wait_until("the control socket", lambda: os.path.exists(self.socket))
        mode = os.lstat(self.socket).st_mode
        self.assertTrue(__import__("stat").S_ISSOCK(mode))
        self.assertEqual(mode & 0o777, 0o600, "the socket must be mode 0600")

        # status: the progress as JSON, naming the job. A socket that answered something else (or another job) fails.
        st = self.first_batch(cfg)
        self.assertEqual((st["ok"], st["job"], st["command"], st["state"]), (True, "j", "archive", "running"))
        self.assertEqual((st["batch_size"], st["sleep"]), (5, 0.3))
        self.assertEqual(set(st["rows"]), {"p", "c"})
        self.assertGreater(st["run_id"], 0)
        self.assertEqual(st["pid"], proc.pid)

        # pause: the run holds at its next boundary; nothing moves for 2 s while the process lives on.
        rc, reply, err = self.ctl(cfg, "pause")
        self.assertEqual(rc, 0, err)
        self.assertIn(reply["state"], ("pausing", "paused"))
        wait_until("the run to hold at a boundary", lambda: self.status(cfg)["state"] == "paused")
        time.sleep(0.5)  # a delete already under way on the source worker commits on its own
        held = self.status(cfg)
        counts = (sc.count("source", "p"), sc.count("source", "c"), sc.count("destination", "p"),
                  sc.count("destination", "c"))
        beat = self.registry(f"SELECT heartbeat_at FROM runs WHERE id = {held['run_id']}")[0][0]
        time.sleep(2.0)
        self.assertIsNone(proc.poll(), "the paused run exited")
        self.assertEqual((sc.count("source", "p"), sc.count("source", "c"), sc.count("destination", "p"),
                          sc.count("destination", "c")), counts, "rows moved while the run was paused")
        now = self.status(cfg)
        self.assertEqual((now["state"], now["batches"]), ("paused", held["batches"]))
        self.assertLess(counts[0], PARENTS, "the pause came before any batch was archived")
        self.assertGreater(counts[0], PARENTS - 300, "the run finished before it could be paused")
        # The heartbeat goes on while paused (the locks stay held), and no transaction is left open meanwhile.
        self.assertGreater(self.registry(f"SELECT heartbeat_at FROM runs WHERE id = {held['run_id']}")[0][0], beat,
                           "the run's heartbeat stopped while it was paused")
        self.assertEqual(self.open_transactions("source"), 0, "a source transaction stays open during the pause")
        self.assertEqual(self.open_transactions("destination"), 0,
                         "a destination transaction stays open during the pause")

        # set batch_size: validated, shown in the status, used by the batches after it.
        rc, reply, err = self.ctl(cfg, "set", "batch_size=0")
        self.assertEqual(rc, 2, err)
        self.assertIn("batch_size=\"0\" is not allowed", err)
        rc, reply, err = self.ctl(cfg, "set", "batch_size=7")
        self.assertEqual(rc, 0, err)
        wait_until("batch_size 7 in the status", lambda: self.status(cfg)["batch_size"] == 7)
        rc, reply, err = self.ctl(cfg, "set", "sleep=0.2")
        self.assertEqual(rc, 0, err)
        wait_until("sleep 0.2 in the status", lambda: self.status(cfg)["sleep"] == 0.2)
        last_batch = self.registry("SELECT IFNULL(MAX(id), 0) FROM batches")[0][0]

        # resume: the batches go on.
        rc, reply, err = self.ctl(cfg, "resume")
        self.assertEqual(rc, 0, err)
        self.assertEqual(reply["state"], "running")
        wait_until("rows to move after resume", lambda: sc.count("source", "p") < counts[0])
        wait_until("two batches of the new size", lambda: self.registry(
            f"SELECT COUNT(*) FROM batches WHERE id > {last_batch} AND roots = 7")[0][0] >= 2, timeout=30)
        # The batch read ahead before the pause keeps the old size; every one read after the set has the new one.
        sizes = [r[0] for r in self.registry(f"SELECT roots FROM batches WHERE id > {last_batch} ORDER BY id")]
        self.assertIn(sizes[0], (5, 7), sizes)
        self.assertEqual(set(sizes[1:]), {7}, f"batches after set batch_size=7: {sizes}")

        # stop: a clean stop at the next boundary, as on SIGTERM.
        rc, reply, err = self.ctl(cfg, "stop")
        self.assertEqual(rc, 0, err)
        self.assertEqual(reply["state"], "stopping")
        code = proc.wait(timeout=60)
        self.assertEqual(code, 143, self.log())
        log = self.log()
        uid = os.getuid()
        for request in ("status", "pause", "set batch_size=7", "set sleep=0.2", "resume", "stop"):
            self.assertIn(f"control: {request} from uid {uid}", log)
        self.assertIn(f"stopped by goarchive ctl stop (uid {uid})", log)
        self.assertIn("batch_size 5 -> 7 (goarchive ctl set)", log)
        self.assertFalse(os.path.lexists(self.socket), "the socket was left behind")
        self.assertGreater(sc.count("source", "p"), PARENTS - 300, "the run did not stop before the end")
        self.assertEqual(sc.unfinished(), 0)
        run = self.registry("SELECT status, exit_code, reason FROM runs ORDER BY id DESC LIMIT 1")[0]
        self.assertEqual(run[:2], ("stopped", 143), run)
        sc.assert_invariant(self.before, relations=RELATIONS)

        # No run now: ctl says so, naming the socket, with exit 1.
        rc, reply, err = self.ctl(cfg, "status")
        self.assertEqual(rc, 1, err)
        self.assertIn(f"no run of job j is active: nothing answers on the control socket {self.socket}", err)

        # The rerun finishes the job.
        r = sc.job("archive", self.config(processing={"batch_size": 50}))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("source", "p"), PARENTS - 300)
        sc.assert_invariant(self.before, relations=RELATIONS)

    def test_stop_while_paused_ends_the_run_and_under_all_the_list(self):
        # A pause that ignored stop would hang here (proc.wait times out); an --all that went on after a stopped job
        # would archive q's rows or record a run of jq.
        sc = self.sc
        sc.both(f"CREATE TABLE q (id INT PRIMARY KEY, v VARCHAR(20)) {INNODB}")
        sc.src("INSERT INTO q SELECT seq, CONCAT('q', seq) FROM seq_1_to_50")
        before = sc.snapshot(["p", "c", "q"])
        cfg = sc.config({"j": JOB, "jq": {"root_table": "q", "where": "1=1"}},
                        processing={"batch_size": 5, "sleep": 0.3},
                        extra=f'[control]\nsocket = "{os.path.join(self.run_dir, "%j.sock")}"\n')
        self.log_path = os.path.join(sc.tmp, "all.log")
        with open(self.log_path, "w") as log:
            proc = subprocess.Popen([BIN, "archive", "-c", cfg, "--all", "--no-progress"],
                                    stdout=subprocess.DEVNULL, stderr=log)
            self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
            wait_until("the first job's socket", lambda: os.path.exists(self.socket))
            self.first_batch(cfg)
            self.assertEqual(self.ctl(cfg, "pause")[0], 0)
            wait_until("the pause", lambda: self.status(cfg)["state"] == "paused")
            rc, reply, err = self.ctl(cfg, "stop")
            self.assertEqual((rc, reply["state"]), (0, "stopping"), err)
            self.assertEqual(proc.wait(timeout=30), 143, self.log())
        self.assertIn("archive --all: job j was stopped (143); the jobs after it were not run", self.log())
        self.assertEqual(sc.count("source", "q"), 50, "the job after the stopped one ran")
        self.assertEqual(self.registry("SELECT COUNT(*) FROM runs r JOIN jobs j ON j.id = r.job_id "
                                       "WHERE j.name = 'jq'")[0][0], 0)
        self.assertFalse(os.path.lexists(self.socket))
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(before, relations=RELATIONS)

    def test_a_socket_path_that_is_not_ours_is_refused_and_left_alone(self):
        sc = self.sc
        state = sc.state()
        os.makedirs(self.run_dir, mode=0o700)
        # A regular file where the socket would go.
        with open(self.socket, "w") as f:
            f.write("precious\n")
        r = sc.job("archive", self.config())
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"control socket {self.socket}: the path exists and is a regular file", r.err)
        with open(self.socket) as f:
            self.assertEqual(f.read(), "precious\n")
        # A symbolic link there, to a file that must not be replaced (nor created when the link dangles).
        os.unlink(self.socket)
        target = os.path.join(sc.tmp, "target")
        os.symlink(target, self.socket)
        r = sc.job("archive", self.config())
        self.assertEqual(r.rc, 2, r)
        self.assertIn("the path exists and is a symbolic link", r.err)
        self.assertFalse(os.path.lexists(target))
        self.assertEqual(os.readlink(self.socket), target)
        # Not an absolute path: a configuration error naming the key.
        r = sc.job("archive", self.config(socket_pattern="run/%j.sock"))
        self.assertEqual(r.rc, 2, r)
        self.assertIn('control.socket "run/%j.sock" must be an absolute path', r.err)
        # Nothing was touched: the rows, and no registry.
        self.assertEqual(sc.state(), state)

    def test_ctl_refuses_bad_input_and_says_when_no_run_answers(self):
        sc = self.sc
        cfg = self.config()
        for words, message in ((["stat"], 'unknown request "stat"'), (["set", "sleep=-1"], 'sleep="-1" is not allowed'),
                               (["set", "delete_batch_size=9"], 'unknown setting "delete_batch_size"'),
                               (["pause", "now"], "pause takes no argument")):
            rc, reply, err = self.ctl(cfg, *words)
            self.assertEqual(rc, 2, err)
            self.assertIn(message, err)
        rc, reply, err = self.ctl(cfg, "pause")
        self.assertEqual(rc, 1, err)
        self.assertIn(f"no run of job j is active: nothing answers on the control socket {self.socket} (it does not "
                      "exist)", err)
        # --socket names the socket directly.
        r = sc.run("ctl", "--socket", os.path.join(sc.tmp, "none.sock"), "status")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("nothing answers on the control socket", r.err)
        # A config without [control]: nothing to talk to.
        plain = sc.config({"j": JOB})
        r = sc.run("ctl", "-c", plain, "-j", "j", "status")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("sets no control socket", r.err)


if __name__ == "__main__":
    unittest.main()
