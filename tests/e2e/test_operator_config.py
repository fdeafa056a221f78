#!/usr/bin/python3
"""Operator experience (issue 6), the config side: credentials (password_file permissions, password_env, option
files, no secret anywhere), TLS modes, `validate -v` origins, and `discover`.
"""

import json
import os
import re
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opkit import (SHOP_JOB, SHOP_RELATIONS, Background, env_with, gatest, read, registry_runs,  # noqa: E402
                   replace_in_section, shop, summary_batches, wait_until)

PW_LINE = 'password_env = "GA_PASSWORD"'


def args(cmd, cfg, *extra):
    return [cmd, "-c", cfg, "-j", "j", *extra]


def write_private(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


class CredentialsTest(unittest.TestCase):
    def test_password_file_permissions(self):
        sc, cfg, before, expected = shop(self, "pwfile", processing={"batch_size": 100})
        pwf = write_private(os.path.join(sc.tmp, "source.pw"), os.environ["GA_PASSWORD"] + "\n", 0o644)
        replace_in_section(cfg, "source", PW_LINE, [f'password_file = "{pwf}"'])
        for mode in (0o644, 0o640, 0o604):
            os.chmod(pwf, mode)
            r = sc.run(*args("archive", cfg, "--no-progress"))
            self.assertEqual(r.rc, 2, f"mode {mode:o}: {r}")
            self.assertIn("chmod 600", r.err)
            self.assertIn(pwf, r.err)
            self.assertIn("group or others", r.err)
            self.assertFalse(sc.job_schema_exists(), "nothing was touched")
        os.chmod(pwf, 0o600)
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        r = sc.run("validate", "-c", cfg, "-v")
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out, r"source\.password\s+<redacted>\s+\(password_file " + re.escape(pwf) + r"\)")
        self.assertNotIn(os.environ["GA_PASSWORD"], r.out + r.err)

    def test_password_env_unset(self):
        sc, cfg, before, _ = shop(self, "pwenv")
        var = f"GA_TEST_UNSET_{uuid.uuid4().hex[:8].upper()}"
        for section in ("source", "destination"):
            replace_in_section(cfg, section, PW_LINE, [f'password_env = "{var}"'])
        env = env_with(**{var: None})
        for cmd in (args("archive", cfg, "--no-progress"), args("copy-only", cfg, "--no-progress"),
                    args("dry-run", cfg), ["jobs", "-c", cfg], args("locks", cfg), ["discover", "-c", cfg, "--root",
                    "orders"], ["validate", "-c", cfg]):
            r = sc.run(*cmd, env=env)
            self.assertEqual(r.rc, 2, f"{cmd[0]}: {r}")
            self.assertIn(var, r.err, f"{cmd[0]}: {r}")
            self.assertIn("not set", r.err)
        r = sc.run("plan", "-c", cfg, "-j", "j", env=env)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("orders", r.out)
        # Set, it works.
        r = sc.run(*args("dry-run", cfg), env=env_with(**{var: os.environ["GA_PASSWORD"]}))
        self.assertEqual(r.rc, 0, r)

    def test_defaults_file_instead_of_user_and_password(self):
        sc, cfg, before, expected = shop(self, "mycnf", processing={"batch_size": 100})
        mycnf = write_private(os.path.join(sc.tmp, "my.cnf"),
                              f"[client]\nuser = {os.environ['GA_USER']}\npassword = {os.environ['GA_PASSWORD']}\n")
        for section in ("source", "destination"):
            replace_in_section(cfg, section, PW_LINE, [f'defaults_file = "{mycnf}"'])
            replace_in_section(cfg, section, f'user = "{os.environ["GA_USER"]}"', [])
        text = read(cfg)
        self.assertNotIn("user =", text)
        self.assertNotIn("password", text)
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])
        sc.assert_invariant(before, SHOP_RELATIONS)
        r = sc.run("jobs", "-c", cfg)
        self.assertEqual(r.rc, 0, r)
        # A wrong password in the option file is refused as a login failure.
        write_private(mycnf, f"[client]\nuser = {os.environ['GA_USER']}\npassword = wrong-{uuid.uuid4().hex}\n")
        r = sc.run(*args("dry-run", cfg))
        self.assertNotEqual(r.rc, 0, r)
        self.assertNotIn("wrong-", r.out + r.err)

    def test_no_secret_anywhere(self):
        secret = os.environ["GA_PASSWORD"]
        sc, cfg, before, expected = shop(self, "nosecret", orders=40, processing={"batch_size": 10})
        metrics = os.path.join(sc.tmp, "m.prom")
        outputs = []
        for cmd in (args("archive", cfg, "--no-progress", "-vvv", "--metrics-file", metrics),
                    ["validate", "-c", cfg, "-v"], ["validate", "-c", cfg, "--format", "json"],
                    ["jobs", "-c", cfg], ["jobs", "-c", cfg, "--format", "json"],
                    args("dry-run", cfg, "-vvv"), args("dry-run", cfg, "--format", "json"),
                    args("plan", cfg, "--format", "json"), args("locks", cfg),
                    args("archive", cfg, "--no-progress", "--log-format", "json", "-vvv")):
            r = sc.run(*cmd)
            self.assertEqual(r.rc, 0, f"{cmd}: {r}")
            outputs.append((cmd, r.out + r.err))
        outputs.append(("metrics", read(metrics)))
        for cmd, text in outputs:
            self.assertNotIn(secret, text, f"the password appears in the output of {cmd}")
        v = [t for c, t in outputs if c[:3] == ["validate", "-c", cfg] and "-v" in c][0]
        self.assertRegex(v, r"source\.password\s+<redacted>\s+\(password_env GA_PASSWORD\)")
        self.assertRegex(v, r"destination\.password\s+<redacted>\s+\(password_env GA_PASSWORD\)")
        # The registry: every column of every table of the tracking schema.
        q = gatest.quote_ident
        tables = [r[0] for r in gatest.sql("destination", "SELECT TABLE_NAME FROM information_schema.TABLES "
                                                          "WHERE TABLE_SCHEMA = %s", (sc.job_schema,))]
        self.assertIn("runs", tables)
        for t in tables:
            for row in gatest.sql("destination", f"SELECT * FROM {q(sc.job_schema)}.{q(t)}"):
                self.assertNotIn(secret, repr(row), f"the password is stored in {sc.job_schema}.{t}")
        for run in registry_runs(sc):
            self.assertNotIn(secret, json.dumps(run[4]) + str(run[3]))

        # A wrong password in the config: the login error does not echo it, neither does validate -v.
        wrong = f"Wr0ng-{uuid.uuid4().hex}"
        bad = sc.config({"j": SHOP_JOB}, destination={"foreign_key_checks": False})
        replace_in_section(bad, "source", PW_LINE, [f'password = "{wrong}"'])
        for cmd in (args("archive", bad, "--no-progress", "-vvv"), ["validate", "-c", bad, "-v"],
                    args("dry-run", bad), args("archive", bad, "--no-progress", "--log-format", "json")):
            r = sc.run(*cmd)
            self.assertNotEqual(r.rc, 0, r)
            self.assertNotIn(wrong, r.out + r.err, f"{cmd}")
        r = sc.run("validate", "-c", bad, "-v")
        self.assertRegex(r.out, r"source\.password\s+<redacted>\s+\(password\)")

    def test_secret_not_in_argv(self):
        # The secret comes from the environment: the running process's command line never carries it.
        sc, cfg, before, _ = shop(self, "argv", processing={"batch_size": 10, "sentinel_file": "/nonexistent"})
        pause = os.path.join(sc.tmp, "pause")
        open(pause, "w").close()
        replace_in_section(cfg, "processing", 'sentinel_file = "/nonexistent"', [f'sentinel_file = "{pause}"'])
        p = Background(args("archive", cfg, "--no-progress")).kill_on_cleanup(self)
        wait_until(lambda: "paused" in p.err or not p.running(), 20, what="the run to pause")
        with open(f"/proc/{p.pid}/cmdline", "rb") as f:
            self.assertNotIn(os.environ["GA_PASSWORD"].encode(), f.read())
        os.remove(pause)
        self.assertEqual(p.wait(60), 0, p)


class TlsTest(unittest.TestCase):
    def test_tls_required_refuses_a_server_without_tls(self):
        sc, cfg, before, _ = shop(self, "tlsreq", source={"tls": "required"})
        for cmd in (args("archive", cfg, "--no-progress"), ["validate", "-c", cfg], args("dry-run", cfg)):
            r = sc.run(*cmd)
            self.assertNotEqual(r.rc, 0, f"{cmd[0]}: {r}")
            self.assertRegex(r.err, r"(?i)\btls\b", f"{cmd[0]}: {r}")
            self.assertIn("source", r.err)
        self.assertFalse(sc.job_schema_exists(), "nothing was written")
        self.assertEqual(sc.count("destination", "orders"), 0)

    def test_tls_required_on_destination(self):
        sc, cfg, before, _ = shop(self, "tlsdst", destination={"tls": "required"})
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertNotEqual(r.rc, 0, r)
        self.assertRegex(r.err, r"(?i)\btls\b")
        self.assertIn("destination", r.err)
        self.assertEqual(sc.count("destination", "orders"), 0)

    def test_tls_disabled_works(self):
        sc, cfg, before, expected = shop(self, "tlsoff", source={"tls": "disabled"}, destination={"tls": "disabled"})
        r = sc.run(*args("archive", cfg, "--no-progress"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), expected["orders"])

    def test_tls_verify_without_ca_is_a_config_error(self):
        sc, cfg, before, _ = shop(self, "tlsca", source={"tls": "verify-ca"})
        r = sc.run("plan", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("tls_ca", r.err)


class OriginsTest(unittest.TestCase):
    LINE = re.compile(r"^\s+(\S+)\s+(.*?)\s+\(([^()]+)\)\s*$")

    def settings(self, out):
        return {m.group(1): (m.group(2), m.group(3)) for m in map(self.LINE.match, out.splitlines()) if m}

    def test_validate_v_origins(self):
        sc, _, before, _ = shop(self, "origins")
        # Job k overrides batch_size in its block; job j inherits [processing].
        cfg = sc.config({"j": SHOP_JOB, "k": dict(SHOP_JOB, batch_size=7)}, processing={"batch_size": 40},
                        destination={"foreign_key_checks": False})
        env = env_with(GOARCHIVE_BATCH_SIZE=None, GOARCHIVE_LOG_LEVEL=None, GOARCHIVE_SLEEP=None)
        r = sc.run("validate", "-c", cfg, "-v", env=env)
        self.assertEqual(r.rc, 0, r)
        s = self.settings(r.out)
        self.assertEqual(s["jobs.k.batch_size"], ("7", "job block"), r.out)
        self.assertEqual(s["jobs.j.batch_size"], ("40", "file"), r.out)
        self.assertEqual(s["processing.batch_size"], ("40", "file"), r.out)
        self.assertEqual(s["jobs.j.delete_batch_size"], ("500", "default"), r.out)
        self.assertEqual(s["jobs.j.sleep"][1], "default", r.out)
        self.assertEqual(s["destination.job_schema"], (sc.job_schema, "file"), r.out)
        self.assertEqual(s["logging.level"], ("info", "default"), r.out)
        self.assertEqual(s["source.password"], ("<redacted>", "password_env GA_PASSWORD"), r.out)

        # The environment beats the file and the job block; a flag beats the environment.
        env = env_with(GOARCHIVE_BATCH_SIZE="13", GOARCHIVE_LOG_LEVEL="warn", GOARCHIVE_SLEEP=None)
        r = sc.run("validate", "-c", cfg, "-v", "--log-format", "text", env=env)
        self.assertEqual(r.rc, 0, r)
        s = self.settings(r.out)
        self.assertEqual(s["jobs.k.batch_size"], ("13", "environment"), r.out)
        self.assertEqual(s["jobs.j.batch_size"], ("13", "environment"), r.out)
        self.assertEqual(s["logging.level"], ("warn", "environment"), r.out)
        self.assertEqual(s["logging.format"], ("text", "flag"), r.out)
        self.assertEqual(s["jobs.j.delete_batch_size"], ("500", "default"), r.out)

        # archive: --batch-size beats GOARCHIVE_BATCH_SIZE (150 old orders in batches of 25 -> 6 batches).
        r = sc.run(*args("archive", cfg, "--no-progress", "--batch-size", "25"),
                   env=env_with(GOARCHIVE_BATCH_SIZE="13", GOARCHIVE_LOG_LEVEL=None))
        self.assertEqual(r.rc, 0, r)
        self.assertIn("batch_size 25", r.err)
        self.assertEqual(summary_batches(r.out)[0], 6, r.out)


class DiscoverTest(unittest.TestCase):
    def tree(self, sc, cfg, job):
        r = sc.run("plan", "-c", cfg, "-j", job, "--format", "json")
        self.assertEqual(r.rc, 0, r)
        plan = json.loads(r.out)
        return sorted((t["table"], t["parent"], tuple(t["foreign_key"])) for t in plan["tables"]), plan

    def test_discover_relations_block_plans_like_shop_job(self):
        sc, cfg, before, _ = shop(self, "discover")
        r = sc.run("discover", "-c", cfg, "--root", "orders")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("[[jobs.", r.out)
        self.assertNotIn("BLOCKS", r.out, "nothing outside the shop tree references it")
        with open(cfg) as f:
            text = f.read()
        pasted = os.path.join(sc.tmp, "discovered.toml")
        with open(pasted, "w") as f:
            f.write(text + "\n" + r.out)
        job = re.search(r"^\[jobs\.([^\].]+)\]$", r.out, re.M).group(1)
        got, plan = self.tree(sc, pasted, job)
        want, _ = self.tree(sc, cfg, "j")
        self.assertEqual(got, want, r.out)
        self.assertEqual(plan["root_table"], "orders")
        self.assertIn(("shipment_items", "shipments", ("shipment_id",)), got)

    def test_discover_marks_outside_references(self):
        sc, cfg, before, _ = shop(self, "discblk")
        # A table of another database on the source that references orders (RESTRICT): it cannot be part of the job,
        # and an order it points at stays in the source (blocked).
        other = f"o_{sc.id}"
        q = gatest.quote_ident
        gatest.sql("source", f"CREATE DATABASE {q(other)}")
        self.addCleanup(lambda: gatest.sql("source", f"DROP DATABASE IF EXISTS {q(other)}"))
        gatest.sql("source", f"CREATE TABLE {q(other)}.invoices (id BIGINT UNSIGNED PRIMARY KEY, order_id BIGINT "
                             f"UNSIGNED NOT NULL, CONSTRAINT fk_invoices_order FOREIGN KEY (order_id) REFERENCES "
                             f"{q(sc.src_db)}.orders (id)) ENGINE=InnoDB")
        r = sc.run("discover", "-c", cfg, "--root", "orders")
        self.assertEqual(r.rc, 0, r)
        notes = [l for l in r.out.splitlines() if "NOTE" in l and "blocked" in l]
        self.assertTrue(any("invoices" in l for l in notes), f"no NOTE line for {other}.invoices:\n{r.out}")
        self.assertNotIn('table = "invoices"', r.out)


if __name__ == "__main__":
    unittest.main()
