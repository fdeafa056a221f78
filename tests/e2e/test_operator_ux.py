#!/usr/bin/python3
"""Operator experience, second round: what the operator reads when something is wrong, against the real servers.

- `validate` never says "ok" for a job it could not check (wrong password, wrong port);
- `discover --root` with a mistyped table is an error that names the close matches;
- `jobs` tells a SIGKILLed run (job lock free) from a live one, and prints no empty `exit :`;
- the metrics textfile follows the Prometheus naming and type conventions (strict parser; promtool when installed);
- a mistyped command names itself and the close one;
- `validate -v` prints every row in aligned columns;
- [throttle] and its flags are validated (exit 2 with a clear message) and shown with their origins; the premise of
  max_threads_running (sessions inside SLEEP count in Threads_running) holds on the test server.

The decisions of control::Throttle are unit-tested in tests/unit/test_throttle.cpp; wiring it into the run loop
(and its end-to-end test) belongs to the run loop's owner.
"""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opkit import (BIN, SHOP_JOB, SHOP_TABLES, Background, free_port, gatest, hold_order_lock, read,  # noqa: E402
                   replace_in_section, shop, wait_until)


def args(cmd, cfg, *extra):
    return [cmd, "-c", cfg, "-j", "j", *extra]


def run_bin(*argv, timeout=60):
    return subprocess.run([BIN, *argv], capture_output=True, text=True, timeout=timeout)


# -- 1. validate ----------------------------------------------------------------------------------------------------
class ValidateTest(unittest.TestCase):
    def check_not_ok(self, sc, cfg, what):
        r = sc.run("validate", "-c", cfg)
        self.assertEqual(r.rc, 1, f"{what}: {r}")
        self.assertNotIn("ok", r.out.replace("NOT CHECKED", ""), f"{what}: stdout says ok:\n{r}")
        self.assertIn("job j: NOT CHECKED (", r.out, f"{what}: {r}")
        self.assertRegex(r.err, r"validate found \d+ problems?:", what)
        r = sc.run("validate", "-c", cfg, "--format", "json")
        self.assertEqual(r.rc, 1, f"{what}: {r}")
        doc = json.loads(r.out)
        self.assertFalse(doc["ok"])
        self.assertEqual((doc["jobs"][0]["checked"], doc["jobs"][0]["ok"]), (False, False), doc)
        self.assertTrue(doc["server_failures"], doc)
        return r

    def test_wrong_password_is_not_ok(self):
        sc, cfg, _, _ = shop(self, "vpw", orders=20)
        replace_in_section(cfg, "source", 'password_env = "GA_PASSWORD"', ['password = "wrong-password"'])
        self.check_not_ok(sc, cfg, "wrong source password")
        r = sc.run("validate", "-c", cfg)
        self.assertIn("job j: NOT CHECKED (the source could not be reached)", r.out, r)

    def test_wrong_port_is_not_ok(self):
        sc, cfg, _, _ = shop(self, "vport", orders=20)
        replace_in_section(cfg, "destination", f"port = {gatest.env('GA_DEST_PORT')}", [f"port = {free_port()}"])
        self.check_not_ok(sc, cfg, "wrong destination port")
        r = sc.run("validate", "-c", cfg)
        self.assertIn("job j: NOT CHECKED (the destination could not be reached", r.out, r)

    def test_good_config_is_ok(self):
        sc, cfg, _, _ = shop(self, "vok", orders=20)
        r = sc.run("validate", "-c", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out, "job j: ok (config and every preflight check)\n", r)
        doc = json.loads(sc.run("validate", "-c", cfg, "--format", "json").out)
        self.assertEqual((doc["ok"], doc["jobs"][0]["checked"], doc["jobs"][0]["ok"]), (True, True, True))


# -- 9. validate -v alignment ---------------------------------------------------------------------------------------
ORIGIN = re.compile(r" \((default|file|job block|environment|flag|password|password_env [^)]*|password_file .*)\)$")


class ValidateVerboseAlignmentTest(unittest.TestCase):
    def test_every_row_is_aligned(self):
        job = dict(SHOP_JOB, log_retention_days=3, where="created_at < NOW() - INTERVAL 2 YEAR\nAND 1=1")
        sc, cfg, _, _ = shop(self, "valign", orders=20, job=job,
                             extra="[throttle]\nmax_threads_running = 50\nquery = \"SELECT 0\"\n")
        # A long job name: its keys are longer than any fixed column width.
        text = read(cfg).replace("[jobs.j]", "[jobs.archive_old_orders_of_the_eu_shop]").replace(
            "[[jobs.j.relations]]", "[[jobs.archive_old_orders_of_the_eu_shop.relations]]")
        with open(cfg, "w") as f:
            f.write(text)
        r = sc.run("validate", "-c", cfg, "-v")
        self.assertEqual(r.rc, 0, r)
        lines = r.out.splitlines()
        start = lines.index("effective settings (origin):")
        # The settings block: the indented rows after its header, up to the first line that is not (the server
        # report follows it).
        rows = []
        for line in lines[start + 1:]:
            if not line.startswith("  "):
                break
            rows.append(line)
        self.assertGreater(len(rows), 30, r.out)
        value_cols, origin_cols = set(), set()
        for row in rows:
            m = re.match(r"^  (\S+) +(?=\S)", row)
            self.assertIsNotNone(m, f"row without a key and a value: {row!r}")
            value_cols.add(m.end())
            o = ORIGIN.search(row)
            self.assertIsNotNone(o, f"row without an origin: {row!r}")
            origin_cols.add(o.start())
        self.assertEqual(len(value_cols), 1, f"values start in columns {sorted(value_cols)}:\n{r.out}")
        self.assertEqual(len(origin_cols), 1, f"origins start in columns {sorted(origin_cols)}:\n{r.out}")
        key = "jobs.archive_old_orders_of_the_eu_shop.log_retention_days"
        self.assertTrue(any(row.startswith(f"  {key} ") and row.rstrip().endswith("(job block)") for row in rows))
        self.assertTrue(any("\\nAND 1=1" in row for row in rows), "the multi-line where is shown on one row")
        self.assertTrue(any(re.match(r"^  throttle\.max_threads_running +50 +\(file\)$", row) for row in rows))
        self.assertTrue(any(re.match(r"^  throttle\.check_interval +1 +\(default\)$", row) for row in rows))
        self.assertTrue(any(re.match(r"^  processing\.analyze +false +\(default\)$", row) for row in rows))


# -- 2. discover ----------------------------------------------------------------------------------------------------
class DiscoverTest(unittest.TestCase):
    def test_mistyped_root_names_the_close_match(self):
        sc, cfg, _, _ = shop(self, "disc", orders=20)
        r = sc.run("discover", "-c", cfg, "--root", "ordres")
        self.assertEqual(r.rc, 2, r)
        self.assertEqual(r.out, "", r)
        self.assertEqual(r.err, f"goarchive: table ordres not found in database {sc.src_db}; did you mean orders?\n")
        r = sc.run("discover", "-c", cfg, "--root", "shipment_item")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("; did you mean shipment_items?", r.err)

    def test_unknown_root_without_a_close_match_lists_the_tables(self):
        sc, cfg, _, _ = shop(self, "disc2", orders=20)
        r = sc.run("discover", "-c", cfg, "--root", "zzzzzzzz")
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"table zzzzzzzz not found in database {sc.src_db}; its tables are: ", r.err)
        self.assertIn("orders", r.err)

    def test_existing_root_still_works(self):
        sc, cfg, _, _ = shop(self, "disc3", orders=20)
        r = sc.run("discover", "-c", cfg, "--root", "orders")
        self.assertEqual(r.rc, 0, r)
        self.assertIn('table = "order_items"', r.out)


# -- 8. mistyped command --------------------------------------------------------------------------------------------
class UnknownCommandTest(unittest.TestCase):
    def test_close_command_is_suggested(self):
        for argv, word, close in ((["archiv"], "archiv", "archive"), (["-c", "x.toml", "valdate"], "valdate",
                                  "validate"), (["--log-format", "json", "purg", "-j", "j"], "purg", "purge"),
                                  (["jobs", "clera", "-j", "j"], "jobs clera", "jobs clear")):
            r = run_bin(*argv)
            self.assertEqual(r.returncode, 2, r)
            self.assertEqual(r.stdout, "")
            first = r.stderr.splitlines()[0]
            self.assertEqual(first, f'goarchive: unknown command "{word}"; did you mean "{close}"?', r.stderr)
            self.assertNotIn("A subcommand is required", r.stderr)

    def test_far_command_is_named_without_a_guess(self):
        r = run_bin("frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.splitlines()[0], 'goarchive: unknown command "frobnicate"')

    def test_known_commands_still_parse(self):
        r = run_bin("version")
        self.assertEqual(r.returncode, 0, r)
        r = run_bin("-c", "/nonexistent.toml", "plan")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read config file /nonexistent.toml", r.stderr)
        r = run_bin()
        self.assertEqual(r.returncode, 2)
        self.assertIn("A subcommand is required", r.stderr)


# -- 6. jobs after SIGKILL ------------------------------------------------------------------------------------------
class JobsAfterKillTest(unittest.TestCase):
    def test_sigkilled_run_is_stopped_not_live(self):
        sc, cfg, _, _ = shop(self, "jkill", processing={"batch_size": 10})
        release = hold_order_lock(self, sc)
        p = Background(args("archive", cfg, "--no-progress")).kill_on_cleanup(self)
        wait_until(lambda: sc.jobs_json(cfg).get("j", {}).get("live"), 30, what="the run to be live")
        r = sc.run("jobs", "-c", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("(live)", r.out)
        self.assertRegex(r.out, r"\n\S+ +archive +\S+ +running ")
        self.assertNotIn("exit :", r.out)
        p.signal(signal.SIGKILL)
        p.wait(30)
        killed = time.time()

        def gone():
            j = sc.jobs_json(cfg)["j"]
            return j if j["state"] == "stopped (process gone)" else None
        j = wait_until(gone, 10, what="jobs to see the process gone")
        self.assertEqual((j["status"], j["live"], j["job_lock_held"]), ("running", False, False), j)
        self.assertIsNone(j["last_run"]["exit_code"])
        r = sc.run("jobs", "-c", cfg)
        self.assertLess(time.time() - killed, 50, "the check must run inside the heartbeat's 60 s window")
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("(live)", r.out, r)
        self.assertNotIn("exit :", r.out, r)
        self.assertIn("stopped (process gone)", r.out, r)
        self.assertRegex(r.out, r"#\d+ ended without an exit code")
        # `jobs clear` agrees that the process is gone: it does not refuse a "live" job.
        r = sc.run("jobs", "clear", "-c", cfg, "-j", "j")
        self.assertNotEqual(r.rc, 4, r)
        self.assertNotIn("is live", r.err)
        release()


# -- 7. metrics -----------------------------------------------------------------------------------------------------
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)(?: (-?\d+))?$")
LABEL_PAIR = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
UNITS = ("_seconds", "_bytes", "_ratio", "_total", "_info")


def parse_value(text):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.match(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$", text):
        raise ValueError(f"not a Prometheus value: {text!r}")
    return float(text)


def parse_labels(text):
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL_PAIR.match(text, pos)
        if not m:
            raise ValueError(f"bad label set {{{text}}} at {pos}")
        if m.group(1) in labels:
            raise ValueError(f"label {m.group(1)} twice")
        labels[m.group(1)] = m.group(2)
        pos = m.end()
    return labels


def strict_parse(text, test):
    """Checks the Prometheus text format and naming conventions; returns {(name, labels tuple): value}."""
    test.assertTrue(text.endswith("\n"), "the file ends with a newline")
    families, samples, order = {}, {}, []
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = f"line {n}: {line!r}"
        test.assertNotEqual(line.strip(), "", f"{where}: blank line")
        if line.startswith("# HELP "):
            parts = line.split(" ", 3)
            test.assertEqual(len(parts), 4, f"{where}: HELP without text")
            name = parts[2]
            test.assertRegex(name, METRIC_NAME, where)
            test.assertNotIn(name, families, f"{where}: second HELP for {name}")
            test.assertTrue(parts[3].strip(), f"{where}: empty HELP")
            families[name] = {"help": parts[3], "type": None, "samples": 0}
            order.append(name)
        elif line.startswith("# TYPE "):
            parts = line.split(" ")
            test.assertEqual(len(parts), 4, where)
            name, kind = parts[2], parts[3]
            test.assertIn(name, families, f"{where}: TYPE before HELP")
            test.assertEqual(order[-1], name, f"{where}: TYPE does not follow its HELP")
            test.assertIsNone(families[name]["type"], f"{where}: second TYPE")
            test.assertEqual(families[name]["samples"], 0, f"{where}: TYPE after samples")
            test.assertIn(kind, TYPES, where)
            families[name]["type"] = kind
        elif line.startswith("#"):
            test.fail(f"{where}: a comment that is neither HELP nor TYPE")
        else:
            m = SAMPLE.match(line)
            test.assertIsNotNone(m, f"{where}: not a sample line")
            try:
                name, labels, value = m.group(1), parse_labels(m.group(3) or ""), parse_value(m.group(4))
            except ValueError as e:
                test.fail(f"{where}: {e}")
            test.assertIn(name, families, f"{where}: sample without HELP/TYPE")
            test.assertEqual(order[-1], name, f"{where}: sample outside its family's block")
            test.assertIsNotNone(families[name]["type"], f"{where}: sample before TYPE")
            for k in labels:
                test.assertRegex(k, LABEL_NAME, where)
                test.assertFalse(k.startswith("__"), where)
            key = (name, tuple(sorted(labels.items())))
            test.assertNotIn(key, samples, f"{where}: duplicate sample")
            samples[key] = value
            families[name]["samples"] += 1
    for name, f in families.items():
        test.assertIsNotNone(f["type"], f"{name}: HELP without TYPE")
        test.assertTrue(name.startswith("goarchive_"), f"{name}: no goarchive_ namespace prefix")
        if f["type"] == "counter":
            test.assertTrue(name.endswith("_total"), f"{name}: a counter must end in _total")
        else:
            test.assertFalse(name.endswith("_total"), f"{name}: a {f['type']} must not end in _total")
        test.assertNotRegex(name, r"_(ms|milliseconds|minutes|hours|kb|mb|percent)(_|$)",
                            f"{name}: use base units (_seconds, _bytes)")
        if "timestamp" in name or "duration" in name:
            test.assertTrue(name.endswith("_seconds"), f"{name}: times are in seconds and say so")
    for (name, _), value in samples.items():
        test.assertFalse(math.isnan(value), name)
        if families[name]["type"] == "counter":
            test.assertGreaterEqual(value, 0, name)
    return samples, families


class MetricsTest(unittest.TestCase):
    def promtool(self, path):
        tool = shutil.which("promtool")
        if not tool:  # Debian 12's `prometheus` package ships it; not installed here
            return
        p = subprocess.run([tool, "check", "metrics"], stdin=open(path), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual((p.stdout + p.stderr).strip(), "", p.stdout + p.stderr)

    def test_metrics_follow_prometheus_conventions(self):
        sc, cfg, before, expected = shop(self, "mconv", processing={"batch_size": 40})
        # Two old orders change after their copy? Not deterministic; the roots_changed metric must exist anyway.
        path = os.path.join(sc.tmp, "goarchive.prom")
        r = sc.run(*args("archive", cfg, "--no-progress", "--metrics-file", path))
        self.assertEqual(r.rc, 0, r)
        text = read(path)
        samples, families = strict_parse(text, self)
        self.promtool(path)
        job = (("job", "j"),)
        for t in SHOP_TABLES:
            self.assertEqual(samples[("goarchive_last_run_rows_copied", (("job", "j"), ("table", t)))], expected[t])
            self.assertEqual(samples[("goarchive_last_run_rows_deleted", (("job", "j"), ("table", t)))], expected[t])
        self.assertEqual(samples[("goarchive_last_run_roots_changed", job)], 0)
        self.assertEqual(samples[("goarchive_last_run_roots", job)], expected["orders"])
        self.assertEqual(samples[("goarchive_last_run_batches", job)], -(-expected["orders"] // 40))
        self.assertEqual(samples[("goarchive_last_run_throttled_seconds", job)], 0)
        self.assertIn(("goarchive_last_run_held_seconds", job), samples)
        self.assertEqual(samples[("goarchive_run_exit_code", job)], 0)
        for name in families:
            self.assertEqual(families[name]["type"], "gauge", f"{name}: per-run textfile values are gauges")
        self.assertNotIn("_total", text)

    def test_metrics_of_a_run_refused_before_starting_parse_too(self):
        sc, cfg, _, _ = shop(self, "mconv2", orders=20)
        replace_in_section(cfg, "source", 'password_env = "GA_PASSWORD"', ['password = "wrong-password"'])
        path = os.path.join(sc.tmp, "goarchive.prom")
        r = sc.run(*args("archive", cfg, "--no-progress", "--metrics-file", path))
        self.assertEqual(r.rc, 1, r)
        samples, _ = strict_parse(read(path), self)
        self.promtool(path)
        self.assertEqual(samples[("goarchive_run_exit_code", (("job", "j"),))], 1)

    def test_strict_parser_rejects_what_it_must(self):
        bad = ["# HELP goarchive_x_total X.\n# TYPE goarchive_x_total gauge\ngoarchive_x_total 1\n",
               "# HELP goarchive_x X.\n# TYPE goarchive_x counter\ngoarchive_x 1\n",
               "# HELP goarchive_x X.\ngoarchive_x 1\n",
               "goarchive_x 1\n",
               "# HELP goarchive_x X.\n# TYPE goarchive_x gauge\ngoarchive_x{job=\"a} 1\n",
               "# HELP goarchive_x X.\n# TYPE goarchive_x gauge\ngoarchive_x one\n",
               "# HELP goarchive_run_ms X.\n# TYPE goarchive_run_ms gauge\ngoarchive_run_ms 1\n",
               "# HELP goarchive_x X.\n# TYPE goarchive_x gauge\ngoarchive_x 1"]
        for text in bad:
            with self.assertRaises(AssertionError, msg=text):
                strict_parse(text, self)
        strict_parse('# HELP goarchive_x X.\n# TYPE goarchive_x gauge\ngoarchive_x{job="a\\"b",table="t"} 1.5\n', self)


# -- [throttle] -----------------------------------------------------------------------------------------------------
class ThrottleConfigTest(unittest.TestCase):
    def refused(self, sc, cfg, *extra, command="archive"):
        r = sc.run(*args(command, cfg, "--no-progress", *extra))
        self.assertEqual(r.rc, 2, r)
        self.assertFalse(sc.job_schema_exists(), "nothing was touched")
        return r.err

    def test_bad_values_exit_2_with_a_clear_message(self):
        cases = [("max_threads_running = -1", "throttle.max_threads_running = -1 is out of range; use a value from 0"),
                 ("max_threads_running = 2.5", "throttle.max_threads_running must be a whole number"),
                 ("check_interval = 0", "throttle.check_interval = 0 is out of range"),
                 ("max_hold = -5", "throttle.max_hold = -5 is out of range"),
                 ('query = "DELETE FROM orders"', "throttle.query must be one SELECT statement"),
                 ('query = "SELECT 1; DROP TABLE orders"', "must be a single statement"),
                 ("query = 1", "throttle.query must be a string"),
                 ("max_thread_running = 5", "unknown key throttle.max_thread_running"),
                 ("max_threads_running = 10\ncritical_threads_running = 10",
                  "throttle.critical_threads_running = 10 must be greater than max_threads_running = 10")]
        for line, message in cases:
            sc, cfg, _, _ = shop(self, "thrbad", orders=10, extra=f"[throttle]\n{line}\n")
            err = self.refused(sc, cfg)
            self.assertIn(message, err, line)
            self.assertRegex(err, r"^goarchive: ", line)

    def test_bad_flags_exit_2(self):
        sc, cfg, _, _ = shop(self, "thrflag", orders=10)
        self.assertIn("--max-threads-running", self.refused(sc, cfg, "--max-threads-running", "-1"))
        self.assertIn("--throttle-query must be one SELECT statement",
                      self.refused(sc, cfg, "--throttle-query", "UPDATE orders SET id = id"))
        self.assertIn("goarchive: --critical-threads-running = 5 must be greater than --max-threads-running = 20",
                      self.refused(sc, cfg, "--max-threads-running", "20", "--critical-threads-running", "5"))
        self.assertIn("--progress-interval", self.refused(sc, cfg, "--progress-interval", "0"))
        # The throttle flags are archive's and purge's (DESIGN.md §4); copy-only does not take them.
        r = sc.run(*args("copy-only", cfg, "--no-progress", "--max-threads-running", "5"))
        self.assertEqual(r.rc, 2, r)

    def test_good_values_are_accepted_and_shown_with_origin(self):
        sc, cfg, _, _ = shop(self, "thrgood", orders=10, processing={"analyze": True}, extra=(
            "[throttle]\nmax_threads_running = 40\ncritical_threads_running = 80\n"
            "query = \"\"\"\nSELECT COUNT(*) > 1000 FROM information_schema.PROCESSLIST;\n\"\"\"\n"
            "check_interval = 0.5\nmax_hold = 600\n"))
        r = sc.run("validate", "-c", cfg, "-v")
        self.assertEqual(r.rc, 0, r)
        for key, value, origin in (("throttle.max_threads_running", "40", "file"),
                                   ("throttle.critical_threads_running", "80", "file"),
                                   ("throttle.query", "SELECT COUNT(*) > 1000 FROM information_schema.PROCESSLIST",
                                    "file"),
                                   ("throttle.check_interval", "0.5", "file"), ("throttle.max_hold", "600", "file"),
                                   ("processing.analyze", "true", "file"), ("jobs.j.analyze", "true", "file")):
            self.assertRegex(r.out, rf"\n  {re.escape(key)} +{re.escape(value)} +\({origin}\)\n", key)
        # A run with the flags and --statistics still works (the gates are off at this load).
        r = sc.run(*args("archive", cfg, "--no-progress", "--max-threads-running", "50", "--statistics",
                         "--progress-interval", "5", "--throttle-query", "SELECT 0"))
        self.assertEqual(r.rc, 0, r)

    def test_analyze_must_be_a_boolean(self):
        sc, cfg, _, _ = shop(self, "thran", orders=10, processing={"analyze": "yes"})
        self.assertIn("processing.analyze must be true or false", self.refused(sc, cfg))


class ThreadsRunningPremiseTest(unittest.TestCase):
    """max_threads_running reads SHOW GLOBAL STATUS Threads_running; sessions inside SELECT SLEEP count in it. This
    is the load the run loop's end-to-end throttle test can create."""

    def threads_running(self):
        return int(gatest.sql("source", "SHOW GLOBAL STATUS LIKE 'Threads_running'")[0][1])

    def test_sleeping_sessions_count_in_threads_running(self):
        idle = self.threads_running()
        conns = [gatest.connect("source") for _ in range(6)]
        self.addCleanup(lambda: [c.close() for c in conns])

        def sleep(c):
            with c.cursor() as cur:
                cur.execute("SELECT SLEEP(3)")
                cur.fetchall()
        threads = [threading.Thread(target=sleep, args=(c,)) for c in conns]
        for t in threads:
            t.start()
        busy = wait_until(lambda: (lambda n: n if n >= idle + 6 else None)(self.threads_running()), 2.5, 0.05,
                          "Threads_running to count the sleeping sessions")
        self.assertGreaterEqual(busy, 7)
        for t in threads:
            t.join(10)
        self.assertLess(self.threads_running(), busy)


if __name__ == "__main__":
    unittest.main()
