#!/usr/bin/python3
"""Security (issue 7): secrets never leak, least privilege is enough and a missing grant is named, TLS is enforced,
and hostile-but-real identifiers are quoted.

- The password of a dedicated account (given as `password`, `password_env` and `password_file`) is searched, raw
  and hex-encoded, in: the argv of every goarchive process (`ps`, /proc/PID/cmdline) while a run is paused, the
  servers' process lists, stdout/stderr and --log-file of archive, copy-only, dry-run, plan, validate -v, jobs,
  locks, jobs clear at -vvv in text and JSON, the metrics file, and every row of every registry table.
- `validate -v` shows the password as <redacted>.
- A wrong password is not echoed by the error.
- An account with exactly the GRANTs of goarchive(1) PRIVILEGES archives a tree; a source account without DELETE,
  a destination account without INSERT and a registry account without CREATE are refused by preflight with a
  message naming the grant, and nothing changes.
- tls = "required" against the (non-TLS) test servers is refused, on either side.
- Tables and columns whose names hold backticks, quotes, ';' and comment markers are archived correctly and a
  table outside the tree is untouched.
"""
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import gatest  # noqa: E402
from scenario import BIN, Result, Scenario, toml_value  # noqa: E402

q = gatest.quote_ident
TREE = [
    "CREATE TABLE orders (id INT PRIMARY KEY, created DATE NOT NULL, note VARCHAR(40)) ENGINE=InnoDB",
    "CREATE TABLE items (id INT PRIMARY KEY, order_id INT NOT NULL, qty INT, "
    "FOREIGN KEY (order_id) REFERENCES orders (id)) ENGINE=InnoDB",
    "CREATE TABLE notes (id INT PRIMARY KEY, item_id INT NOT NULL, body VARCHAR(40), "
    "FOREIGN KEY (item_id) REFERENCES items (id)) ENGINE=InnoDB",
]
TREE_TABLES = ["orders", "items", "notes"]
TREE_RELATIONS = [("items", ["order_id"], "orders", ["id"]), ("notes", ["item_id"], "items", ["id"])]
JOB = {"root_table": "orders", "where": "id <= 12", "relations": [
    {"table": "items", "foreign_key": "order_id"},
    {"table": "notes", "parent": "items", "foreign_key": "item_id"}]}


def load_tree(sc, orders=16):
    for stmt in TREE:
        sc.both(stmt)
    for i in range(1, orders + 1):
        sc.src("INSERT INTO orders VALUES (%s, '2020-01-01', %s)", (i, f"order {i}"))
        for k in range(2):
            item = i * 10 + k
            sc.src("INSERT INTO items VALUES (%s, %s, %s)", (item, i, k + 1))
            sc.src("INSERT INTO notes VALUES (%s, %s, %s)", (item * 10, item, f"note {item}"))


class Accounts:
    """MariaDB accounts created for one test on both servers and dropped at its end."""

    def __init__(self, test):
        self.names = []
        test.addCleanup(self.drop)

    def create(self, password):
        name = f"gasec_{secrets.token_hex(4)}"
        for server in ("source", "destination"):
            gatest.sql(server, f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s", (password,))
        self.names.append(name)
        return name

    def grant(self, server, privileges, on, name):
        gatest.sql(server, f"GRANT {privileges} ON {on} TO '{name}'@'%'")

    def drop(self):
        for name in self.names:
            for server in ("source", "destination"):
                try:
                    gatest.sql(server, f"DROP USER IF EXISTS '{name}'@'%'")
                except Exception:
                    pass


class SecurityBase(unittest.TestCase):
    def setUp(self):
        self.sc = Scenario(self, "sec")
        # A private copy of the binary: a concurrent rebuild cannot swap it out mid-test.
        self.bin = str(Path(self.sc.tmp) / "goarchive")
        shutil.copy2(BIN, self.bin)
        self.accounts = Accounts(self)
        self.outputs = []  # (what, text) of everything goarchive printed or wrote

    def env(self, extra=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("GOARCHIVE_") and k != "GA_PASSWORD"}
        e.update(extra or {})
        return e

    def run_ga(self, *args, env=None, timeout=300):
        p = subprocess.run([self.bin, *args], capture_output=True, text=True, errors="surrogateescape",
                           env=self.env(env), timeout=timeout)
        r = Result(p)
        self.outputs.append((f"goarchive {' '.join(args)}: stdout", r.out))
        self.outputs.append((f"goarchive {' '.join(args)}: stderr", r.err))
        self.assertGreaterEqual(r.rc, 0, f"killed by a signal: {args}: {r!r}")
        self.assertNotIn("internal error", r.err)
        return r

    def config(self, user, password_lines, job=None, source=None, destination=None, **kw):
        """A scenario config whose [source] and [destination] log in as USER with PASSWORD_LINES (a dict of
        password/password_env/password_file keys, or per side {"source": {...}, "destination": {...}})."""
        path = self.sc.config({"j": job or JOB}, **kw)
        text = Path(path).read_text()
        gauser = f'user = "{gatest.env("GA_USER")}"'
        for side, override in (("source", source), ("destination", destination)):
            header = f"[{side}]\n"
            start = text.index(header)
            end = text.index("\n\n", start)
            block = text[start:end]
            lines = password_lines.get(side, password_lines) if isinstance(password_lines, dict) else password_lines
            if isinstance(user, dict):
                u = user[side]
            else:
                u = user
            block = block.replace(gauser, f'user = "{u}"').replace('password_env = "GA_PASSWORD"\n', "")
            block += "".join(f"\n{k} = {toml_value(v)}" for k, v in lines.items())
            block += "".join(f"\n{k} = {toml_value(v)}" for k, v in (override or {}).items())
            text = text[:start] + block + text[end:]
        Path(path).write_text(text)
        return path

    def registry_dump(self):
        """Every row of every table of the scenario's job_schema, as text."""
        out = []
        conn = gatest.connect("destination", self.sc.job_schema)
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW TABLES")
                for (table,) in cur.fetchall():
                    cur.execute(f"SELECT * FROM {q(table)}")
                    for row in cur.fetchall():
                        out.append(f"{table}: " + " | ".join(
                            v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v) for v in row))
        finally:
            conn.close()
        return out

    def assert_no_secret(self, secret, what, text):
        for form in (secret, secret.encode().hex(), secret.encode().hex().upper()):
            self.assertNotIn(form, text, f"the password appears in {what}")


class PasswordNeverLeaks(SecurityBase):
    def setUp(self):
        super().setUp()
        load_tree(self.sc)
        self.password = "GaSecretPw" + secrets.token_hex(12)
        self.user = self.accounts.create(self.password)
        self.accounts.grant("source", "ALL", f"{q(self.sc.src_db)}.*", self.user)
        self.accounts.grant("destination", "ALL", f"{q(self.sc.dst_db)}.*", self.user)
        self.accounts.grant("destination", "ALL", f"{q(self.sc.job_schema)}.*", self.user)

    def scan_everything(self, files=()):
        texts = list(self.outputs)
        for f in files:
            if os.path.exists(f):
                texts.append((f, Path(f).read_text(errors="replace")))
        texts += [("registry", "\n".join(self.registry_dump()))]
        for what, text in texts:
            self.assert_no_secret(self.password, what, text)
        return len(texts)

    def test_password_in_file_env_and_password_file(self):
        pwfile = Path(self.sc.tmp) / "pw"
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        forms = {
            "password": ({"password": self.password}, {}),
            "password_env": ({"password_env": "GA_SECRET_UNDER_TEST"}, {"GA_SECRET_UNDER_TEST": self.password}),
            "password_file": ({"password_file": str(pwfile)}, {}),
        }
        log = os.path.join(self.sc.tmp, "run.log")
        metrics = os.path.join(self.sc.tmp, "metrics.prom")
        before = self.sc.snapshot(TREE_TABLES)
        for form, (lines, env) in forms.items():
            with self.subTest(form=form):
                cfg = self.config(self.user, lines, processing={"batch_size": 2})
                if form == "password":  # the scanner finds the password where it is (a control of the scan)
                    with self.assertRaises(AssertionError):
                        self.assert_no_secret(self.password, "the config file", Path(cfg).read_text())
                common = ["-c", cfg, "--log-file", log]
                r = self.run_ga("validate", *common, "-v", env=env)
                self.assertEqual(r.rc, 0, r)
                self.assertIn("<redacted>", r.out)
                self.assertRegex(r.out, r"source\.password\s+<redacted>")
                self.assertRegex(r.out, r"destination\.password\s+<redacted>")
                self.assertEqual(self.run_ga("validate", *common, "-vvv", "--format", "json", env=env).rc, 0)
                self.assertEqual(self.run_ga("plan", *common, "-vvv", "-j", "j", env=env).rc, 0)
                self.assertEqual(self.run_ga("dry-run", *common, "-vvv", "-j", "j", env=env).rc, 0)
                self.assertEqual(self.run_ga("dry-run", *common, "-vvv", "-j", "j", "--format", "json", env=env).rc, 0)
                self.assertEqual(self.run_ga("archive", *common, "-vvv", "-j", "j", "--dry-run", env=env).rc, 0)
                # Only the first form moves rows; the later ones find nothing to do but log every statement too.
                r = self.run_ga("archive", *common, "-vvv", "--log-format", "json", "-j", "j", "--no-progress",
                                "--metrics-file", metrics, env=env)
                self.assertEqual(r.rc, 0, r)
                self.outputs.append((f"metrics file ({form})", Path(metrics).read_text()))
                self.assertEqual(self.run_ga("copy-only", *common, "-vvv", "-j", "j", "--no-progress", env=env).rc, 0)
                self.assertEqual(self.run_ga("jobs", *common, "-vvv", env=env).rc, 0)
                self.assertEqual(self.run_ga("jobs", *common, "-vvv", "--format", "json", env=env).rc, 0)
                self.assertEqual(self.run_ga("locks", *common, "-vvv", "-j", "j", env=env).rc, 0)
                self.run_ga("jobs", "clear", *common, "-vvv", "-j", "j", env=env)  # refused: not running; scanned
                self.run_ga("discover", *common, "-vvv", "--root", "orders", env=env)
                # A failure path: a job whose table does not exist (a configuration error: exit 2).
                bad = self.config(self.user, lines, job={"root_table": "nosuch", "where": "1=1"})
                r = self.run_ga("archive", "-c", bad, "-vvv", "-j", "j", "--no-progress", "--log-file", log, env=env)
                self.assertEqual(r.rc, 2, r)
        self.assertTrue(Path(log).stat().st_size > 0 and Path(metrics).stat().st_size > 0)
        self.assertIn("SELECT", Path(log).read_text(), "-vvv should trace the statements")
        n = self.scan_everything([log, metrics])
        self.sc.assert_invariant(before, relations=TREE_RELATIONS)
        print(f"\nsecrets scan: {n} outputs, files and the registry; password found 0 times", file=sys.stderr)

    def test_password_not_in_argv_or_processlist(self):
        sentinel = Path(self.sc.tmp) / "pause"
        sentinel.write_text("")
        cfg = self.config(self.user, {"password_env": "GA_SECRET_UNDER_TEST"},
                          processing={"batch_size": 2, "sentinel_file": str(sentinel)})
        p = subprocess.Popen([self.bin, "archive", "-c", cfg, "-j", "j", "-vvv", "--no-progress"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=self.env({"GA_SECRET_UNDER_TEST": self.password}))
        try:
            # Wait until the run holds its locks and pauses at the sentinel.
            deadline = time.time() + 60
            paused = False
            while time.time() < deadline and p.poll() is None:
                rows = gatest.sql("source", "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                                  (self.user,))
                if rows[0][0] >= 2:
                    paused = True
                    break
                time.sleep(0.2)
            self.assertTrue(paused, "the run did not reach its pause")
            cmdline = Path(f"/proc/{p.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            self.assert_no_secret(self.password, "/proc/PID/cmdline", cmdline)
            ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
            self.assertIn(str(p.pid), ps)
            self.assert_no_secret(self.password, "ps output", ps)
            for server in ("source", "destination"):
                pl = gatest.sql(server, "SELECT USER, HOST, DB, COMMAND, INFO FROM information_schema.PROCESSLIST")
                self.assert_no_secret(self.password, f"the {server}'s process list", repr(pl))
        finally:
            sentinel.unlink()
            out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assert_no_secret(self.password, "stdout", out)
        self.assert_no_secret(self.password, "stderr", err)
        self.assert_no_secret(self.password, "registry", "\n".join(self.registry_dump()))

    def test_no_password_flag(self):
        r = self.run_ga("--help-all")
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("--password", r.out)
        self.assertNotIn("-p,", r.out)
        r = self.run_ga("archive", "--password", self.password, "-c", "x.toml", "-j", "j")
        self.assertEqual(r.rc, 2, r)
        self.assertTrue(r.err.startswith("goarchive:"), r)

    def test_wrong_password_not_echoed(self):
        wrong = "GaWrongPw" + secrets.token_hex(12)
        pwfile = Path(self.sc.tmp) / "wrong"
        pwfile.write_text(wrong + "\n")
        pwfile.chmod(0o600)
        state = self.sc.state()
        for side in ("source", "destination"):
            for lines, env in (({"password": wrong}, {}), ({"password_env": "GA_WRONG"}, {"GA_WRONG": wrong}),
                               ({"password_file": str(pwfile)}, {})):
                with self.subTest(side=side, form=next(iter(lines))):
                    good = {"password": self.password}
                    cfg = self.config(self.user, {side: lines, "source" if side == "destination" else "destination": good})
                    for command in (["archive", "-j", "j", "--no-progress"], ["validate", "-v"],
                                    ["dry-run", "-j", "j"], ["jobs"], ["locks", "-j", "j"]):
                        r = self.run_ga(command[0], "-c", cfg, "-vvv", *command[1:], env=env)
                        if command[0] == "jobs" and side == "source":
                            self.assertEqual(r.rc, 0, r)  # jobs reads the registry on the destination only
                        else:
                            self.assertEqual(r.rc, 1, r)
                            self.assertIn("Access denied", r.out + r.err)
                        self.assert_no_secret(wrong, f"{command[0]} output", r.out + r.err)
                        self.assert_no_secret(self.password, f"{command[0]} output", r.out + r.err)
        self.assertEqual(self.sc.state(), state)


class LeastPrivilege(SecurityBase):
    def setUp(self):
        super().setUp()
        load_tree(self.sc)
        self.password = "GaLpPw" + secrets.token_hex(8)
        self.before = self.sc.snapshot(TREE_TABLES)

    def grants_from_the_manual(self, user, source_privs="SELECT, DELETE", dest_privs="SELECT, INSERT, DELETE",
                               registry_privs="SELECT, INSERT, UPDATE, DELETE, CREATE, INDEX"):
        """goarchive(1) PRIVILEGES, for this scenario's databases."""
        for t in TREE_TABLES:
            if source_privs:
                self.accounts.grant("source", source_privs, f"{q(self.sc.src_db)}.{q(t)}", user)
        if dest_privs:
            self.accounts.grant("destination", dest_privs, f"{q(self.sc.dst_db)}.*", user)
        if registry_privs:
            self.accounts.grant("destination", registry_privs, f"{q(self.sc.job_schema)}.*", user)

    def assert_refused(self, cfg, *texts, command="archive"):
        state = self.sc.state()
        r = self.run_ga(command, "-c", cfg, "-j", "j", "--no-progress")
        if os.environ.get("SECURITY_SHOW"):
            print(f"\n--- {self.id()} {command}: rc={r.rc}\n{r.err}", file=sys.stderr)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(sum(1 for line in r.err.splitlines() if line.startswith("goarchive:")), 1, r)
        self.assertIn("preflight refused", r.err, r)
        for t in texts:
            self.assertIn(t, r.err, r)
        self.assertEqual(self.sc.state(), state, "a refused run changed a server")
        self.assertFalse(self.sc.job_schema_exists())
        return r

    def test_documented_grants_are_enough(self):
        user = self.accounts.create(self.password)
        self.grants_from_the_manual(user)
        cfg = self.config(user, {"password": self.password}, processing={"batch_size": 3})
        r = self.run_ga("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        r = self.run_ga("archive", "-c", cfg, "-j", "j", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(self.sc.count("destination", "orders"), 12)
        self.sc.assert_invariant(self.before, relations=TREE_RELATIONS)
        for command in (["jobs"], ["locks", "-j", "j"], ["dry-run", "-j", "j"]):
            self.assertEqual(self.run_ga(command[0], "-c", cfg, *command[1:]).rc, 0, command)

    def test_validate_notes_a_commit_proof_table_the_run_cannot_use(self):
        user = self.accounts.create(self.password)
        self.grants_from_the_manual(user)  # without the grants on goarchive_commits
        cfg = self.config(user, {"password": self.password}, processing={"batch_size": 3})
        table = f"`{self.sc.src_db}`.`goarchive_commits`"
        r = self.run_ga("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        lines = r.out.strip().splitlines()
        self.assertEqual(lines[-2], "job j: ok (config and every preflight check)", r.out)
        self.assertTrue(lines[-1].startswith(f"job j: note: no commit proof: the source table {table} cannot be "
                                             "used (it does not exist and the source account lacks CREATE on"), r.out)
        self.assertIn("with INSERT, SELECT and DELETE granted on it", lines[-1])
        doc = json.loads(self.run_ga("validate", "-c", cfg, "-j", "j", "--format", "json").out)
        self.assertTrue(doc["ok"])
        self.assertEqual(len(doc["jobs"][0]["notes"]), 1, doc)
        # Created as goarchive(1) shows, with the grants it names: no note, and the run uses it without a warning.
        gatest.sql("source", f"CREATE TABLE {table} (token BINARY(16) NOT NULL PRIMARY KEY, job VARCHAR(255) NOT "
                             "NULL, batch_id BIGINT UNSIGNED NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT "
                             "CURRENT_TIMESTAMP(6)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
        self.accounts.grant("source", "SELECT, INSERT", table, user)
        r = self.run_ga("validate", "-c", cfg, "-j", "j")
        self.assertIn("lacks DELETE on", r.out.strip().splitlines()[-1])
        self.accounts.grant("source", "DELETE", table, user)
        r = self.run_ga("validate", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out.strip().splitlines()[-1], "job j: ok (config and every preflight check)", r.out)
        r = self.run_ga("archive", "-c", cfg, "-j", "j", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("no commit proof", r.err)
        self.sc.assert_invariant(self.before, relations=TREE_RELATIONS)

    def test_source_without_delete_is_refused_naming_delete(self):
        user = self.accounts.create(self.password)
        self.grants_from_the_manual(user, source_privs="SELECT")
        cfg = self.config(user, {"password": self.password})
        r = self.assert_refused(cfg, "lacks DELETE", "GRANT DELETE ON")
        for t in TREE_TABLES:
            self.assertIn(f"{self.sc.src_db}.{t}", r.err)
        # purge needs DELETE too.
        self.assert_refused(cfg, "lacks DELETE", command="purge")
        # copy-only needs only SELECT on the source (goarchive(1)).
        r = self.run_ga("copy-only", "-c", cfg, "-j", "j", "--no-progress")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(self.sc.count("source", "orders"), 16)
        self.assertEqual(self.sc.count("destination", "orders"), 12)

    def test_source_without_select_is_refused_naming_select(self):
        user = self.accounts.create(self.password)
        self.grants_from_the_manual(user, source_privs="DELETE")
        # Without SELECT the account cannot even see the tables: the refusal may name the table or the grant.
        cfg = self.config(user, {"password": self.password})
        r = self.run_ga("archive", "-c", cfg, "-j", "j", "--no-progress")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("preflight refused", r.err)
        self.assertIn("SELECT", r.err, "the refusal must name the missing grant")
        self.assertFalse(self.sc.job_schema_exists())

    def test_destination_without_insert_is_refused_naming_insert(self):
        user = self.accounts.create(self.password)
        self.grants_from_the_manual(user, dest_privs="SELECT, DELETE")
        cfg = self.config(user, {"password": self.password})
        self.assert_refused(cfg, "lacks INSERT", "GRANT INSERT ON")
        self.assert_refused(cfg, "lacks INSERT", command="copy-only")

    def test_registry_without_create_is_refused_naming_create(self):
        user = self.accounts.create(self.password)
        self.grants_from_the_manual(user, registry_privs="SELECT, INSERT, UPDATE, DELETE")
        cfg = self.config(user, {"password": self.password})
        self.assert_refused(cfg, "CREATE", f"{self.sc.job_schema}")

    def test_registry_without_any_grant_is_refused(self):
        user = self.accounts.create(self.password)
        self.grants_from_the_manual(user, registry_privs="")
        cfg = self.config(user, {"password": self.password})
        self.assert_refused(cfg, "SELECT, INSERT, UPDATE, DELETE, CREATE")


class Tls(SecurityBase):
    def test_tls_required_refuses_a_server_without_tls(self):
        load_tree(self.sc)
        state = self.sc.state()
        for side in ("source", "destination"):
            for mode in ("required",):
                with self.subTest(side=side, mode=mode):
                    kw = {side: {"tls": mode}}
                    cfg = self.sc.config({"j": JOB}, **kw)
                    for command in (["archive", "-j", "j", "--no-progress"], ["copy-only", "-j", "j", "--no-progress"],
                                    ["purge", "-j", "j", "--no-progress"], ["validate"], ["jobs"]):
                        if command[0] == "jobs" and side == "source":
                            continue  # jobs connects to the destination only
                        r = self.run_ga(command[0], "-c", cfg, *command[1:], env={"GA_PASSWORD": gatest.env("GA_PASSWORD")})
                        self.assertEqual(r.rc, 1, r)
                        self.assertIn('tls = "required"', r.err, r)
                        self.assertIn("did not negotiate TLS", r.err, r)
                        self.assertEqual(sum(1 for x in r.err.splitlines() if x.startswith("goarchive:")), 1, r)
        self.assertEqual(self.sc.state(), state)
        self.assertFalse(self.sc.job_schema_exists())


class HostileIdentifiers(SecurityBase):
    """Real tables and columns with hostile names: every statement quotes them, nothing else is touched."""

    ROOT = "ord`ers'; DROP TABLE victim; -- x"
    CHILD = 'it"ems`/* #'
    ID = "i`d"
    FK = "or`der's \"id\""
    NOTE = "n;o--te"

    def test_archive_tables_with_hostile_names(self):
        sc = self.sc
        sc.both(f"CREATE TABLE {q(self.ROOT)} ({q(self.ID)} INT PRIMARY KEY, {q(self.NOTE)} VARCHAR(40)) ENGINE=InnoDB")
        sc.both(f"CREATE TABLE {q(self.CHILD)} ({q(self.ID)} INT PRIMARY KEY, {q(self.FK)} INT NOT NULL, "
                f"FOREIGN KEY ({q(self.FK)}) REFERENCES {q(self.ROOT)} ({q(self.ID)})) ENGINE=InnoDB")
        sc.both("CREATE TABLE victim (id INT PRIMARY KEY) ENGINE=InnoDB")
        sc.src("INSERT INTO victim VALUES (1), (2)")
        for i in range(1, 9):
            sc.src(f"INSERT INTO {q(self.ROOT)} VALUES (%s, %s)", (i, f"it's \"{i}\"; -- `x`"))
            sc.src(f"INSERT INTO {q(self.CHILD)} VALUES (%s, %s)", (i * 10, i))
        before = sc.snapshot([self.ROOT, self.CHILD])
        victim = gatest.checksum_table("source", sc.src_db, "victim")
        job = {"root_table": self.ROOT, "where": f"{q(self.ID)} <= 5 AND {q(self.NOTE)} LIKE '%;%'",
               "relations": [{"table": self.CHILD, "foreign_key": self.FK}]}
        cfg = sc.config({"j": job}, processing={"batch_size": 2})
        env = {"GA_PASSWORD": gatest.env("GA_PASSWORD")}
        r = self.run_ga("dry-run", "-c", cfg, "-j", "j", env=env)
        self.assertEqual(r.rc, 0, r)
        r = self.run_ga("archive", "-c", cfg, "-j", "j", "--no-progress", "-vvv", env=env)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", self.ROOT), 5)
        self.assertEqual(sc.count("destination", self.CHILD), 5)
        sc.assert_invariant(before, relations=[(self.CHILD, [self.FK], self.ROOT, [self.ID])])
        self.assertEqual(gatest.checksum_table("source", sc.src_db, "victim"), victim)
        self.assertEqual(gatest.checksum_table("destination", sc.dst_db, "victim")[0], 0)
        # The registry records the names verbatim.
        rows = "\n".join(self.registry_dump())
        self.assertIn(self.ROOT, rows)
        jobs = json.loads(self.run_ga("jobs", "-c", cfg, "--format", "json", env=env).out)
        self.assertEqual(jobs["jobs"][0]["job"], "j")


if __name__ == "__main__":
    unittest.main()
