#!/usr/bin/python3
"""Hostile configurations (issue 7): every file of tests/hostile/configs is refused with one clear message and
changes nothing on any server.

Each corpus file starts with a comment header, then the configuration:

    # attack: what the file attacks
    # expect: RC SUBSTRING        exit code of `archive` and a substring of its stderr message
    # validate: RC SUBSTRING      optional: the same for `validate` (default: the expect line)
    # job: NAME                   optional: the -j argument (default j)
    # unset: VAR                  optional: an environment variable removed for the run
    # bug: ...                    optional: the goarchive bug the file found (kept until it is fixed)

Placeholders filled in per run: @SRC_DB@ @DST_DB@ @JOB_SCHEMA@ (this run's scenario databases), @HOST@
@SOURCE_PORT@ @DEST_PORT@ @USER@ @PASSWORD@ (the test servers), @WORLD_READABLE_PASSWORD_FILE@ (a 0644 file
holding the password), @PRIVATE_DIR@ (a 0700 directory).

For every file and for both `archive -c FILE -j JOB` and `validate -c FILE -j JOB`:
- the exit code is the expected one (2 for a config or usage error, 1 for a preflight refusal or a server-side
  failure such as wrong credentials), never a signal;
- stderr holds exactly one line starting with "goarchive:" and the expected substring, no "internal error", no
  sanitizer report, and no raw control character (an echoed name cannot drive the terminal);
- the source and destination databases have the same checksums as before, and the job_schema database was not
  created.

HOSTILE_ONLY=substring restricts the run to the matching files; HOSTILE_SHOW=1 prints every stderr.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import gatest  # noqa: E402
from scenario import BIN, Result, Scenario  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "hostile" / "configs"
HEADER = re.compile(r"^# (attack|expect|validate|job|unset|bug): ?(.*)$")
CRASH_MARKERS = ("internal error", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:",
                 "terminate called", "Segmentation fault", "core dumped", "Assertion")
OUTFILE = "/tmp/goarchive-hostile-outfile"  # where_into_outfile.toml tries to write it


def parse_header(data):
    """{key: [values]} from the leading '# key: value' lines of DATA (bytes)."""
    head = {}
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        m = HEADER.match(line)
        if not m:
            break
        head.setdefault(m.group(1), []).append(m.group(2))
    return head


def parse_expect(text):
    rc, _, substring = text.partition(" ")
    return int(rc), substring


def corpus_files():
    only = os.environ.get("HOSTILE_ONLY", "")
    return sorted(p for p in CORPUS.glob("*.toml") if only in p.name)


class _ClassCleanups:
    """Lets a Scenario live for the whole class: its cleanup runs once after the last test."""

    def __init__(self, cls):
        self.cls = cls

    def addCleanup(self, fn, *args, **kwargs):  # noqa: N802 (unittest's name)
        self.cls.addClassCleanup(fn, *args, **kwargs)


class HostileConfigs(unittest.TestCase):
    tried = 0
    runs = 0

    @classmethod
    def setUpClass(cls):
        sc = Scenario(_ClassCleanups(cls), "hostile")
        cls.sc = sc
        # A private copy of the binary: a concurrent rebuild cannot swap it out in the middle of the corpus.
        cls.bin = str(Path(sc.tmp) / "goarchive")
        shutil.copy2(BIN, cls.bin)
        cls.load_fixture()
        world = Path(sc.tmp) / "world-readable-password"
        world.write_text(gatest.env("GA_PASSWORD") + "\n")
        world.chmod(0o644)
        private = Path(sc.tmp) / "private"
        private.mkdir(mode=0o700)
        cls.placeholders = {
            "@SRC_DB@": sc.src_db, "@DST_DB@": sc.dst_db, "@JOB_SCHEMA@": sc.job_schema,
            "@HOST@": os.environ.get("GA_HOST", "127.0.0.1"), "@SOURCE_PORT@": gatest.env("GA_SOURCE_PORT"),
            "@DEST_PORT@": gatest.env("GA_DEST_PORT"), "@USER@": gatest.env("GA_USER"),
            "@PASSWORD@": gatest.env("GA_PASSWORD"), "@WORLD_READABLE_PASSWORD_FILE@": str(world),
            "@PRIVATE_DIR@": str(private),
        }
        cls.initial = sc.state()
        if os.path.exists(OUTFILE):
            os.unlink(OUTFILE)

    @classmethod
    def load_fixture(cls):
        """A three-level tree (orders -> items -> notes) with rows on the source and one on the destination."""
        sc = cls.sc
        for server, db in (("source", sc.src_db), ("destination", sc.dst_db)):
            for t in ("notes", "items", "orders"):
                gatest.sql(server, f"DROP TABLE IF EXISTS {gatest.quote_ident(db)}.{t}")
        gatest.sql("destination", f"DROP DATABASE IF EXISTS {gatest.quote_ident(sc.job_schema)}")
        for stmt in ("CREATE TABLE orders (id INT PRIMARY KEY, created DATE NOT NULL, note VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE items (id INT PRIMARY KEY, order_id INT NOT NULL, qty INT, "
                     "FOREIGN KEY (order_id) REFERENCES orders (id)) ENGINE=InnoDB",
                     "CREATE TABLE notes (id INT PRIMARY KEY, item_id INT NOT NULL, body VARCHAR(20), "
                     "FOREIGN KEY (item_id) REFERENCES items (id)) ENGINE=InnoDB"):
            sc.both(stmt)
        sc.src("INSERT INTO orders VALUES (1,'2020-01-01','a'),(2,'2020-01-02','b'),(3,'2024-01-01','c')")
        sc.src("INSERT INTO items VALUES (10,1,1),(11,1,2),(20,2,1),(30,3,5)")
        sc.src("INSERT INTO notes VALUES (100,10,'x'),(200,20,'y'),(300,30,'z')")
        # One archived row already on the destination, so that its checksum is not the empty one.
        sc.dst("INSERT INTO orders VALUES (0,'2019-01-01','old')")

    @classmethod
    def tearDownClass(cls):
        print(f"\nhostile inputs tried: {cls.tried} files, {cls.runs} goarchive runs", file=sys.stderr)

    def render(self, src, data):
        for k, v in self.placeholders.items():
            data = data.replace(k.encode(), v.encode())
        path = Path(self.sc.tmp) / src.name
        path.write_bytes(data)
        return str(path)

    def env_for(self, head):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GOARCHIVE_") or k == "GOARCHIVE_BIN"}
        for var in head.get("unset", []):
            env.pop(var, None)
        return env

    def check_run(self, name, command, cfg, job, env, expect):
        rc_expected, substring = expect
        for k, v in self.placeholders.items():
            substring = substring.replace(k, v)
        p = subprocess.run([self.bin, command, "-c", cfg, "-j", job, "--no-progress"], capture_output=True,
                           text=True, errors="surrogateescape", env=env, timeout=120)
        r = Result(p)
        self.runs += 1
        type(self).runs += 1
        if os.environ.get("HOSTILE_SHOW"):
            print(f"--- {name} {command}: rc={r.rc}\n{r.err}", file=sys.stderr)
        where = f"{name}: {command}: {r!r}"
        self.assertGreaterEqual(r.rc, 0, f"killed by a signal: {where}")
        for marker in CRASH_MARKERS:
            self.assertNotIn(marker, r.err, where)
            self.assertNotIn(marker, r.out, where)
        self.assertEqual(r.rc, rc_expected, where)
        if rc_expected == 0:
            return
        messages = [line for line in r.err.splitlines() if line.startswith("goarchive:")]
        self.assertEqual(len(messages), 1, f"exactly one 'goarchive:' message expected: {where}")
        message = r.err[r.err.index("goarchive:"):]
        self.assertIn(substring, message, where)
        bad = [c for c in r.err if (ord(c) < 0x20 and c not in "\n\t") or ord(c) == 0x7f]
        self.assertEqual(bad, [], f"raw control characters in stderr: {where}")

    def check_unchanged(self, name):
        now = self.sc.state()
        if now != self.initial:
            self.load_fixture()  # so that the next file starts from the same state
        self.assertEqual(now, self.initial, f"{name}: a server changed")
        self.assertFalse(os.path.exists(OUTFILE), f"{name}: the server wrote {OUTFILE}")

    def test_corpus(self):
        files = corpus_files()
        if not os.environ.get("HOSTILE_ONLY"):
            self.assertGreaterEqual(len(files), 100, "the corpus must hold at least 100 configurations")
        for src in files:
            data = src.read_bytes()
            head = parse_header(data)
            with self.subTest(file=src.name):
                self.assertIn("attack", head, f"{src.name}: no '# attack:' line")
                self.assertIn("expect", head, f"{src.name}: no '# expect:' line")
                type(self).tried += 1
                cfg = self.render(src, data)
                job = head.get("job", ["j"])[0]
                env = self.env_for(head)
                expect = parse_expect(head["expect"][0])
                try:
                    self.check_run(src.name, "archive", cfg, job, env, expect)
                finally:
                    self.check_unchanged(src.name)
                validate = head.get("validate", [None])[0]
                if validate != "skip":
                    vexp = parse_expect(validate) if validate else expect
                    try:
                        self.check_run(src.name, "validate", cfg, job, env, vexp)
                    finally:
                        self.check_unchanged(src.name)

    def test_corpus_files_are_small_and_named(self):
        for src in corpus_files():
            with self.subTest(file=src.name):
                self.assertRegex(src.name, r"^[a-z0-9_]+\.toml$")
                limit = 110_000 if "huge" in src.name else 4096
                self.assertLessEqual(src.stat().st_size, limit)
                self.assertFalse(src.stat().st_mode & stat.S_IXUSR, f"{src.name} is executable")


if __name__ == "__main__":
    unittest.main()
