#!/usr/bin/python3
"""End-of-run hooks ([hooks] and --on-*, goarchive.toml(5) HOOKS): each outcome runs its hook once, with the outcome
in GOARCHIVE_* variables and no secret, a hook can post the JSON summary to a chat webhook with curl (a local HTTP
listener here), and a hook that fails or hangs never changes the run's exit code."""

import http.server
import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


class Listener:
    """A local HTTP listener that keeps every POST it gets: (path, body)."""

    def __init__(self):
        self.posts = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts.append((self.path, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def env_file(path):
    """The NAME=value lines a hook wrote with `env`, as a dict."""
    out = {}
    with open(path) as f:
        for line in f:
            name, _, value = line.rstrip("\n").partition("=")
            out[name] = value
    return out


class HooksTest(unittest.TestCase):
    def scenario(self, tag):
        sc = Scenario(self, tag)
        sc.both(f"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)) {INNODB}")
        sc.src("INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_1_to_20")
        return sc

    def test_success_posts_the_summary_and_every_hook_sees_the_outcome_without_secrets(self):
        # A build without hooks, or one that ran the wrong hook, leaves the listener without a post or the files
        # missing; one that passes its environment through shows GA_PASSWORD (the password_env variable).
        sc = self.scenario("hookok")
        web = Listener()
        self.addCleanup(web.close)
        end_env = os.path.join(sc.tmp, "end.env")
        hooks = (f'[hooks]\non_success = "curl -sf --data-binary @\\"$GOARCHIVE_SUMMARY_JSON\\" '
                 f'http://127.0.0.1:{web.port}/success"\n'
                 f'on_failure = "touch {sc.tmp}/failure-ran"\n'
                 f'on_end = "env > {end_env}"\n')
        before = sc.snapshot(["t"])
        cfg = sc.config({"j": {"root_table": "t", "where": "id <= 12"}}, processing={"batch_size": 5}, extra=hooks)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(before)
        self.assertEqual([p for p, _ in web.posts], ["/success"], r)
        summary = json.loads(web.posts[0][1])
        self.assertEqual(summary["exit_code"], 0, summary)
        self.assertFalse(os.path.exists(os.path.join(sc.tmp, "failure-ran")), "on_failure ran on a success")
        env = env_file(end_env)
        self.assertEqual(env["GOARCHIVE_HOOK"], "on_end")
        self.assertEqual(env["GOARCHIVE_JOB"], "j")
        self.assertEqual(env["GOARCHIVE_COMMAND"], "archive")
        self.assertEqual(env["GOARCHIVE_EXIT_CODE"], "0")
        self.assertEqual(env["GOARCHIVE_CONFLICTS"], "0")
        self.assertEqual(env["GOARCHIVE_ROWS_COPIED"], "t=12")
        self.assertEqual(env["GOARCHIVE_ROWS_DELETED"], "t=12")
        self.assertGreater(int(env["GOARCHIVE_RUN_ID"]), 0)
        self.assertIn("finished", env["GOARCHIVE_REASON"])
        self.assertNotIn("GA_PASSWORD", env)
        self.assertNotIn(gatest.env("GA_PASSWORD"), open(end_env).read(), "a secret reached a hook")
        self.assertFalse(os.path.exists(env["GOARCHIVE_SUMMARY_JSON"]), "the summary file was left behind")

    def test_a_failing_or_hanging_hook_never_changes_the_exit_code(self):
        # A hook runner that returned the hook's status, or waited for a hung hook, would change the exit code or
        # run past the timeout (2 s here, the hook sleeps 60).
        sc = self.scenario("hookfail")
        hooks = '[hooks]\non_success = "exit 3"\non_end = "sleep 60"\ntimeout = 2\n'
        cfg = sc.config({"j": {"root_table": "t", "where": "id <= 3"}}, extra=hooks)
        t0 = time.time()
        r = sc.job("archive", cfg)
        took = time.time() - t0
        self.assertEqual(r.rc, 0, r)
        self.assertIn("hook on_success exited with status 3; the run's exit code stays 0", r.err)
        self.assertIn("hook on_end timed out after 2 s and was stopped", r.err)
        self.assertLess(took, 30, "the hung hook was not stopped")
        self.assertEqual(sc.count("destination", "t"), 3)

    def test_busy_and_failure_run_their_hooks_and_flags_win_over_the_file(self):
        # exit 4 (the job lock held elsewhere) runs on_busy, given as a flag over the file's; a refusal (exit 2)
        # runs on_failure. A runner that ignored the flag would write the file's marker.
        sc = self.scenario("hookbusy")
        hooks = f'[hooks]\non_busy = "touch {sc.tmp}/file-busy"\non_failure = "env > {sc.tmp}/failure.env"\n'
        cfg = sc.config({"j": {"root_table": "t", "where": "id <= 3"}}, extra=hooks)
        conn = gatest.connect("destination")
        self.addCleanup(conn.close)
        with conn.cursor() as cur:
            cur.execute("SELECT GET_LOCK(CONCAT('goarchive:j:', LEFT(SHA2(CONCAT(LOWER(%s), CHAR(0), LOWER('j')), "
                        "256), 32)), 0)", (sc.job_schema,))
            self.assertEqual(cur.fetchone()[0], 1)
        r = sc.job("archive", cfg, "j", "--on-busy", f"env > {sc.tmp}/busy.env")
        self.assertEqual(r.rc, 4, r)
        self.assertFalse(os.path.exists(f"{sc.tmp}/file-busy"), "the file's on_busy ran instead of the flag's")
        env = env_file(f"{sc.tmp}/busy.env")
        self.assertEqual((env["GOARCHIVE_HOOK"], env["GOARCHIVE_EXIT_CODE"]), ("on_busy", "4"))
        self.assertIn("is already running", env["GOARCHIVE_REASON"])
        with conn.cursor() as cur:
            cur.execute("DO RELEASE_ALL_LOCKS()")
        bad = sc.config({"j": {"root_table": "missing_table", "where": "1=1"}}, extra=hooks)
        r = sc.job("archive", bad)
        self.assertIn(r.rc, (1, 2), r)
        env = env_file(f"{sc.tmp}/failure.env")
        self.assertEqual((env["GOARCHIVE_HOOK"], env["GOARCHIVE_EXIT_CODE"]), ("on_failure", str(r.rc)))
        self.assertIn("preflight refused job \"j\"", env["GOARCHIVE_REASON"])
        self.assertEqual(sc.count("source", "t"), 20, "nothing moved")


if __name__ == "__main__":
    unittest.main()
