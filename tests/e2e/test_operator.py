#!/usr/bin/python3
"""Operator experience (issue 6), against the real test servers: progress display and progress lines, the end of
run summary (stdout, registry, `jobs`), stopping cleanly (--max-runtime, SIGTERM, SIGINT, sentinel file),
machine-readable output (--format json, --log-format json) and the Prometheus metrics file.

Replication gating is in test_replication_gate.py; credentials, TLS, config origins and discover in
test_operator_config.py.
"""

import json
import os
import shutil
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opkit import (SHOP_JOB, SHOP_RELATIONS, SHOP_TABLES, Background, counts, free_port, hold_order_lock,  # noqa: E402
                   read, registry_runs, replication_block, shop, summary_batches, summary_head, summary_tables,
                   wait_until)

# A carriage return that is not the tty's "\r\n" for a newline: an in-place redraw.
REDRAW = re.compile(r"\r(?!\n)")


def run_args(cmd, cfg, *extra):
    return [cmd, "-c", cfg, "-j", "j", *extra]


class ProgressTest(unittest.TestCase):
    def test_terminal_progress_redraws_in_place(self):
        sc, cfg, before, _ = shop(self, "ptty", processing={"batch_size": 20, "sleep": 0.05})
        p = Background(run_args("archive", cfg), pty=True).kill_on_cleanup(self)
        rc = p.wait(60)
        self.assertEqual(rc, 0, p)
        err = p.err
        redraws = REDRAW.findall(err)
        self.assertGreater(len(redraws), 5, f"no in-place redraws on the terminal:\n{err!r}")
        # Each redraw starts with "\r" and (optionally) an erase-line sequence, then the status line.
        frames = [f for f in re.split(r"\r(?!\n)", err)[1:] if f.strip()]
        status = [f for f in frames if "roots" in f and "rows/s" in f and "ETA" in f]
        self.assertTrue(status, f"no progress frame with roots, rows/s and ETA:\n{err!r}")
        states = {w for f in status for w in ("copying", "verifying", "deleting") if w in f}
        self.assertTrue(states, f"no state word (copying/verifying/deleting) in the frames:\n{status[:5]}")
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_terminal_log_lines_do_not_run_into_the_progress_line(self):
        # Log lines share stderr with the progress display: each must start on a clean line, not be glued to the
        # end of the status line ("... | ETA ?2026-11-30T01:15:26Z info  batch 1 ...").
        sc, cfg, before, _ = shop(self, "ptty2", processing={"batch_size": 20, "sleep": 0.05})
        p = Background(run_args("archive", cfg), pty=True).kill_on_cleanup(self)
        self.assertEqual(p.wait(60), 0, p)
        frames = re.split(r"\r(?!\n)", p.err)[1:]
        # Not vacuous: the run drew progress lines and wrote log lines beside them.
        self.assertTrue(any("rows/s" in f for f in frames), f"no progress frame was drawn:\n{p.err[:2000]!r}")
        self.assertRegex(p.err, r"\d{4}-\d\d-\d\dT\d\d:\d\d.*batch 1", "no log line was written")
        glued = [f for f in frames if re.search(r"rows/s.*?\d{4}-\d\d-\d\dT\d\d:\d\d", f.split("\r\n")[0])]
        self.assertEqual(glued, [], f"{len(glued)} log line(s) written onto the progress line, e.g. {glued[:2]!r}")

    def test_no_progress_flag_on_terminal(self):
        sc, cfg, before, _ = shop(self, "pnone", processing={"batch_size": 20, "sleep": 0.05})
        p = Background(run_args("archive", cfg, "--no-progress"), pty=True).kill_on_cleanup(self)
        rc = p.wait(60)
        self.assertEqual(rc, 0, p)
        self.assertEqual(REDRAW.findall(p.err), [], f"--no-progress still redraws:\n{p.err!r}")
        self.assertNotIn("rows/s", p.err)
        self.assertNotIn("ETA", p.err)
        self.assertNotIn("progress:", p.err)

    def test_progress_lines_when_not_a_terminal(self):
        # The run lasts > 2 s (sleep between batches, and a row lock on order 50 held for 2.5 s so that the run is
        # slow whatever `sleep` does): at least two lines one progress_interval (1 s) apart.
        sc, cfg, before, _ = shop(self, "plog", processing={"batch_size": 10, "sleep": 0.6, "progress_interval": 1})
        release = hold_order_lock(self, sc)
        p = Background(run_args("archive", cfg)).kill_on_cleanup(self)
        time.sleep(2.5)
        release()
        rc = p.wait(60)
        self.assertEqual(rc, 0, p)
        lines = [l for l in p.err.splitlines() if "progress:" in l]
        self.assertGreaterEqual(len(lines), 2, p)
        for l in lines:
            self.assertIn("roots", l)
            self.assertIn("rows/s", l)
        self.assertNotIn("\r", p.err)
        # --no-progress turns the lines off as well.
        sc2, cfg2, _, _ = shop(self, "plog2", processing={"batch_size": 10, "sleep": 0.6, "progress_interval": 1})
        release = hold_order_lock(self, sc2)
        p = Background(run_args("archive", cfg2, "--no-progress")).kill_on_cleanup(self)
        time.sleep(2.5)
        release()
        self.assertEqual(p.wait(60), 0, p)
        self.assertNotIn("progress:", p.err)


class SummaryTest(unittest.TestCase):
    def test_summary_stdout_registry_and_jobs(self):
        sc, cfg, before, expected = shop(self, "summ", processing={"batch_size": 40})
        r = sc.run(*run_args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        mode, job, run_id, reason, code = summary_head(r.out)
        self.assertEqual((mode, job, reason, code), ("archive", "j", "finished", 0), r.out)
        tables = summary_tables(r.out)
        self.assertEqual(set(tables), set(SHOP_TABLES), r.out)
        for t in SHOP_TABLES:
            n = expected[t]
            self.assertEqual(tables[t], (n, n, n), f"{t}: expected {n} copied/verified/deleted\n{r.out}")
        batches, roots, retries = summary_batches(r.out)
        self.assertEqual(roots, expected["orders"])
        self.assertEqual(batches, -(-expected["orders"] // 40))
        self.assertEqual(retries, 0)
        for word in ("select", "copy", "verify", "delete", "held", "rows/s"):
            self.assertIn(word, r.out)
        sc.assert_invariant(before, SHOP_RELATIONS)

        # The registry holds the same summary with the run.
        runs = registry_runs(sc)
        self.assertEqual(len(runs), 1)
        rid, status, exit_code, rreason, summ = runs[0]
        self.assertEqual((rid, status, exit_code, rreason), (run_id, "finished", 0, "finished"))
        self.assertEqual(summ["schema_version"], 1)
        self.assertEqual(summ["batches"], batches)
        self.assertEqual({t["table"]: (t["copied"], t["verified"], t["deleted"]) for t in summ["tables"]}, tables)

        # `jobs --format json` shows the last run's summary with the same numbers.
        j = sc.jobs_json(cfg)["j"]
        last = j["last_run"]
        self.assertEqual((last["run_id"], last["status"], last["exit_code"], last["reason"]),
                         (run_id, "finished", 0, "finished"))
        self.assertEqual(last["summary"]["batches"], batches)
        self.assertEqual({t["table"]: (t["copied"], t["verified"], t["deleted"]) for t in last["summary"]["tables"]},
                         tables)
        # Text `jobs` names the last run and its reason.
        r2 = sc.run("jobs", "-c", cfg)
        self.assertEqual(r2.rc, 0, r2)
        self.assertIn(f"#{run_id} finished exit 0: finished", r2.out)

        # The rerun has nothing to do, says so, and `jobs` now shows that run.
        r = sc.run(*run_args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        _, _, run2, reason, code = summary_head(r.out)
        self.assertEqual((reason, code), ("nothing to do", 0), r.out)
        self.assertTrue(all(v == (0, 0, 0) for v in summary_tables(r.out).values()), r.out)
        last = sc.jobs_json(cfg)["j"]["last_run"]
        self.assertEqual((last["run_id"], last["reason"]), (run2, "nothing to do"))
        self.assertEqual(registry_runs(sc)[-1][3], "nothing to do")


class StopTest(unittest.TestCase):
    def test_sleep_between_batches(self):
        # 5 batches, 0.4 s between them: at least 1.6 s.
        sc, cfg, before, _ = shop(self, "sleep", processing={"batch_size": 30, "sleep": 0.4})
        t0 = time.time()
        r = sc.run(*run_args("archive", cfg, "--no-progress"))
        took = time.time() - t0
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(summary_batches(r.out)[0], 5, r.out)
        self.assertGreaterEqual(took, 1.6, f"sleep = 0.4 with 5 batches, but the run took {took:.2f}s\n{r}")

    def test_max_runtime_stops_cleanly_and_rerun_finishes(self):
        # sleep 0.3 with batches of 10 makes the run slow; the row lock on order 50 (batch 3) held for 1.5 s makes
        # it last longer than 1 s whatever `sleep` does.
        sc, cfg, before, expected = shop(self, "maxrt", processing={"batch_size": 10, "sleep": 0.3})
        release = hold_order_lock(self, sc)
        t0 = time.time()
        p = Background(run_args("archive", cfg, "--no-progress", "--max-runtime", "1s")).kill_on_cleanup(self)
        time.sleep(1.5)
        release()
        rc = p.wait(60)
        took = time.time() - t0
        self.assertEqual(rc, 0, p)
        self.assertLess(took, 5, f"--max-runtime 1s ran for {took:.1f}s\n{p}")
        _, _, _, reason, code = summary_head(p.out)
        self.assertIn("max-runtime", reason, p.out)
        self.assertIn("max-runtime", p.err, "the reason is logged")
        moved = sc.count("destination", "orders")
        self.assertGreater(moved, 0, p)
        self.assertLess(moved, expected["orders"], p)
        self.assertEqual(sc.unfinished(), 0, "stopped at a batch boundary: nothing half-done")
        self.assertIn("max-runtime", registry_runs(sc)[-1][3])
        sc.assert_invariant(before, SHOP_RELATIONS)
        r = sc.run(*run_args("archive", cfg, "--no-progress", "--sleep", "0"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(summary_head(r.out)[3], "finished", r.out)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(before, SHOP_RELATIONS)

    def _signal_run(self, sig, code, word):
        sc, cfg, before, expected = shop(self, f"sig{code}", processing={"batch_size": 10, "sleep": 0.3})
        release = hold_order_lock(self, sc)  # the run blocks in batch 3 until released
        p = Background(run_args("archive", cfg, "--no-progress")).kill_on_cleanup(self)
        wait_until(lambda: sc.count("source", "orders") <= 280, 30, what="two batches to be deleted")
        time.sleep(0.3)
        p.signal(sig)
        time.sleep(0.3)
        release()
        rc = p.wait(30)
        self.assertEqual(rc, code, p)
        _, _, _, reason, scode = summary_head(p.out)
        self.assertEqual((reason, scode), (f"interrupted by {word}", code), p.out)
        moved = sc.count("destination", "orders")
        self.assertLess(moved, expected["orders"], "the signal came too late to test anything")
        self.assertEqual(registry_runs(sc)[-1][2], code)
        sc.assert_invariant(before, SHOP_RELATIONS)
        r = sc.run(*run_args("archive", cfg, "--no-progress", "--sleep", "0"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(before, SHOP_RELATIONS)

    def test_sigterm_exit_143_and_resumable(self):
        self._signal_run(signal.SIGTERM, 143, "SIGTERM")

    def test_sigint_exit_130_and_resumable(self):
        self._signal_run(signal.SIGINT, 130, "SIGINT")

    def test_sentinel_file_pauses_the_run(self):
        import tempfile
        tmp = tempfile.mkdtemp(prefix="goarchive-sentinel-")
        self.addCleanup(shutil.rmtree, tmp, True)
        sentinel = os.path.join(tmp, "pause")
        open(sentinel, "w").close()
        sc, cfg, before, expected = shop(self, "sentinel", processing={"batch_size": 40, "sentinel_file": sentinel})
        src0, dst0 = counts(sc, "source"), counts(sc, "destination")
        p = Background(run_args("archive", cfg, "--no-progress")).kill_on_cleanup(self)
        wait_until(lambda: "paused" in p.err or not p.running(), 20, what="the paused message")
        time.sleep(2)
        self.assertTrue(p.running(), f"the run ended while the sentinel file exists:\n{p}")
        self.assertIn(sentinel, p.err)
        self.assertEqual(counts(sc, "source"), src0, "rows left the source while paused")
        self.assertEqual(counts(sc, "destination"), dst0, "rows were copied while paused")
        os.remove(sentinel)
        rc = p.wait(60)
        self.assertEqual(rc, 0, p)
        self.assertEqual(summary_head(p.out)[3], "finished")
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        sc.assert_invariant(before, SHOP_RELATIONS)


class JsonOutputTest(unittest.TestCase):
    def test_format_json_commands(self):
        sc, cfg, before, expected = shop(self, "json", processing={"batch_size": 40})
        # jobs before any run: no registry yet, still a versioned document.
        r = sc.run("jobs", "-c", cfg, "--format", "json")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(json.loads(r.out), {"schema_version": 1, "jobs": []})

        r = sc.run("plan", "-c", cfg, "-j", "j", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        plan = json.loads(r.out)
        self.assertEqual(plan["schema_version"], 1)
        self.assertEqual(plan["root_table"], "orders")
        self.assertEqual(plan["copy_order"][0], "orders")
        self.assertEqual(plan["delete_order"][-1], "orders")
        self.assertEqual(plan["settings"]["batch_size"], "40")

        r = sc.run("dry-run", "-c", cfg, "-j", "j", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        dry = json.loads(r.out)
        self.assertEqual(dry["schema_version"], 1)
        self.assertEqual({t["table"]: t["rows"] for t in dry["tables"]}, expected)
        self.assertTrue(dry["sql"])

        r = sc.run("validate", "-c", cfg, "--format", "json")
        self.assertEqual(r.rc, 0, r)
        v = json.loads(r.out)
        self.assertEqual((v["schema_version"], v["ok"]), (1, True))
        # A failing validate is still one JSON document.
        bad = sc.config({"j": {"root_table": "no_such_table", "where": "1=1"}})
        r = sc.run("validate", "-c", bad, "--format", "json")
        self.assertNotEqual(r.rc, 0, r)
        v = json.loads(r.out)
        self.assertEqual((v["schema_version"], v["ok"]), (1, False))
        self.assertTrue(v["jobs"][0]["failures"])

        r = sc.run(*run_args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        r = sc.run("jobs", "-c", cfg, "--format", "json")
        self.assertEqual(r.rc, 0, r)
        doc = json.loads(r.out)
        self.assertEqual(doc["schema_version"], 1)
        self.assertEqual(doc["jobs"][0]["last_run"]["summary"]["schema_version"], 1)

    def _json_lines(self, err):
        out = []
        for line in err.splitlines():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                self.fail(f"stderr line is not JSON ({e}): {line!r}\n--- stderr\n{err}")
            self.assertIsInstance(obj, dict, line)
            for k in ("schema_version", "level", "msg"):
                self.assertIn(k, obj, line)
            self.assertEqual(obj["schema_version"], 1, line)
            out.append(obj)
        return out

    def test_log_format_json_every_line(self):
        import tempfile
        tmp = tempfile.mkdtemp(prefix="goarchive-json-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # A sentinel path with a double quote, a backslash and a tab: the "paused" message must survive as JSON.
        sentinel = os.path.join(tmp, 'pause "now" \\ \there')
        open(sentinel, "w").close()
        job = dict(SHOP_JOB)
        job["where"] = 'created_at < NOW() - INTERVAL 2 YEAR AND status <> "x\\"y"'
        sc, cfg, before, expected = shop(self, "jlog", processing={"batch_size": 50, "sentinel_file": sentinel},
                                         job=job)
        # -vvv logs every statement, with their quotes, backquotes and newlines.
        p = Background(run_args("archive", cfg, "--no-progress", "--log-format", "json", "-vvv")).kill_on_cleanup(self)
        wait_until(lambda: "paused" in p.err or not p.running(), 20, what="the paused message")
        os.remove(sentinel)
        rc = p.wait(60)
        self.assertEqual(rc, 0, p)
        objs = self._json_lines(p.err)
        self.assertGreater(len(objs), 10)
        paused = [o for o in objs if "paused" in o["msg"]]
        self.assertTrue(paused, p.err[-3000:])
        self.assertIn(sentinel, paused[0]["msg"], "the path round-trips through the JSON escaping")
        self.assertTrue(any('"x\\"y"' in o["msg"] for o in objs), "a statement with the quoted condition is logged")
        self.assertTrue({o["level"] for o in objs} >= {"info", "trace"})
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])

    def test_log_format_json_error_line(self):
        # A failing run with --log-format json: its one clear error message is a log line too and must be JSON.
        sc, cfg, before, _ = shop(self, "jerr", source={"tls": "required"})
        r = sc.run(*run_args("archive", cfg, "--no-progress", "--log-format", "json"))
        self.assertNotEqual(r.rc, 0, r)
        self.assertTrue(r.err.strip(), r)
        objs = self._json_lines(r.err)
        self.assertTrue(any(o["level"] in ("error", "critical") for o in objs), r.err)


class MetricsTest(unittest.TestCase):
    LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')

    def parse(self, text):
        samples = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                self.assertTrue(not line or re.match(r"^# (HELP|TYPE) \w+ ", line), line)
                continue
            m = self.LINE.match(line)
            self.assertIsNotNone(m, f"not a Prometheus sample line: {line!r}")
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            samples[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
        return samples

    def test_metrics_file(self):
        sc, cfg, before, expected = shop(self, "metrics", processing={"batch_size": 40})
        mdir = os.path.join(sc.tmp, "textfile")
        os.mkdir(mdir)
        path = os.path.join(mdir, "goarchive.prom")
        with open(path, "w") as f:
            f.write("# stale\n")
        ino = os.stat(path).st_ino
        t0 = time.time()
        r = sc.run(*run_args("archive", cfg, "--no-progress", "--metrics-file", path))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(os.listdir(mdir), ["goarchive.prom"], "a temporary file was left behind")
        self.assertNotEqual(os.stat(path).st_ino, ino, "the file was rewritten in place, not renamed into place")
        text = read(path)
        s = self.parse(text)
        for t in SHOP_TABLES:
            self.assertEqual(s[("goarchive_last_run_rows_copied", (("job", "j"), ("table", t)))], expected[t], text)
            self.assertEqual(s[("goarchive_last_run_rows_deleted", (("job", "j"), ("table", t)))], expected[t], text)
        self.assertEqual(s[("goarchive_run_exit_code", (("job", "j"),))], 0)
        self.assertGreater(s[("goarchive_run_duration_seconds", (("job", "j"),))], 0)
        ts = s[("goarchive_last_success_timestamp_seconds", (("job", "j"),))]
        self.assertLessEqual(abs(ts - t0), 120)
        self.assertNotIn(os.environ["GA_PASSWORD"], text)

    def _metric(self, path, name):
        text = read(path) if os.path.exists(path) else ""
        return self.parse(text).get((name, (("job", "j"),))), text

    def test_last_success_survives_a_failed_run(self):
        # The point of a last-success timestamp is alerting on `time() - last_success > N`: a run that fails must
        # not make it disappear from the textfile. The failing run: an unreachable replica held past max_hold (exit 4).
        sc, cfg, before, expected = shop(self, "metrics2", processing={"batch_size": 40},
                                         extra=replication_block(port=free_port(), max_hold=1, check_interval=0.3))
        ok_cfg = sc.config({"j": SHOP_JOB}, processing={"batch_size": 40},
                           destination={"foreign_key_checks": False})
        path = os.path.join(sc.tmp, "goarchive.prom")
        sc.src("UPDATE orders SET created_at = NOW() WHERE id > 100")  # leave work for the second run
        r = sc.run(*run_args("archive", ok_cfg, "--no-progress", "--metrics-file", path))
        self.assertEqual(r.rc, 0, r)
        first, _ = self._metric(path, "goarchive_last_success_timestamp_seconds")
        self.assertIsNotNone(first)
        sc.src("UPDATE orders SET created_at = NOW() - INTERVAL 3 YEAR WHERE id > 250")
        time.sleep(1.1)
        r = sc.run(*run_args("archive", cfg, "--no-progress", "--metrics-file", path))
        self.assertEqual(r.rc, 4, r)
        code, text = self._metric(path, "goarchive_run_exit_code")
        self.assertEqual(code, 4, text)
        last, text = self._metric(path, "goarchive_last_success_timestamp_seconds")
        self.assertEqual(last, first, f"the last success timestamp is gone or changed after a failed run:\n{text}")

    def test_metrics_written_when_the_run_fails_before_starting(self):
        # A nightly run that starts failing in preflight must not leave the previous night's exit code 0 in place.
        sc, cfg, before, expected = shop(self, "metrics3", processing={"batch_size": 40})
        path = os.path.join(sc.tmp, "goarchive.prom")
        r = sc.run(*run_args("archive", cfg, "--no-progress", "--metrics-file", path))
        self.assertEqual(r.rc, 0, r)
        sc.dst("DROP TABLE shipment_items")  # preflight now refuses the job
        r = sc.run(*run_args("archive", cfg, "--no-progress", "--metrics-file", path))
        self.assertEqual(r.rc, 1, r)
        code, text = self._metric(path, "goarchive_run_exit_code")
        self.assertEqual(code, 1, f"the metrics file still reports the previous run:\n{text}\n{r}")

if __name__ == "__main__":
    unittest.main()
