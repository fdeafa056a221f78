#!/usr/bin/python3
"""The documentation keeps up with the code.

- every command and every flag that `goarchive <command> --help` prints is in man/goarchive.1;
- every config key that lib/config/config.cpp reads is in man/goarchive.toml.5;
- every GOARCHIVE_* environment variable that lib/ reads is in man/goarchive.1;
- `man --warnings` renders both pages without a warning;
- README.md starts with the two commands `scripts/demo.sh` and `scripts/test.sh`.

The binary is $GOARCHIVE_BIN (set by ctest), else build/goarchive of this checkout.
"""
import os
import re
import shutil
import subprocess
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("GOARCHIVE_BIN") or str(ROOT / "build" / "goarchive")
MAN1 = ROOT / "man" / "goarchive.1"
MAN5 = ROOT / "man" / "goarchive.toml.5"
CONFIG_DIR = ROOT / "lib" / "config"  # the loader's sources read every key
README = ROOT / "README.md"

# Reader calls in config.cpp that name a key: r.string("host"), top.subtable("source"), r.get("relations"), ...
KEY_CALL = re.compile(r'\b\w+\s*\.\s*(?:string|integer|number|boolean|string_list|subtable|get)\s*\(\s*"([^"]+)"')
# GOARCHIVE_* names as string literals in lib/ (compile-time macros are not quoted, so they do not match).
ENV_LITERAL = re.compile(r'"(GOARCHIVE_[A-Z0-9_]*)"')
# Suffixes appended to the GOARCHIVE_SOURCE_/GOARCHIVE_DESTINATION_ prefixes: take("HOST", ...).
ENV_SUFFIX = re.compile(r'\btake\s*\(\s*"([A-Z0-9_]+)"')


def roff_text(path):
    """The page's source with the escapes that hide plain text removed: \\- is -, \\(aq is ', fonts dropped."""
    text = path.read_text(encoding="utf-8")
    for escape, plain in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\(ga", "`"), ("\\e", "\\"),
                          ("\\&", ""), ("\\c", ""), ("\\fP", ""), ("\\fR", ""), ("\\fB", ""), ("\\fI", "")):
        text = text.replace(escape, plain)
    return text


def mentions(text, word):
    """Whether `word` occurs in `text` as a whole token (not as part of a longer name or flag)."""
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def run_help(args):
    proc = subprocess.run([BIN, *args, "--help"], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise AssertionError(f"goarchive {' '.join(args)} --help exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def parse_help(text):
    """(flags, subcommands) of one CLI11 help text."""
    flags, subcommands, section = set(), [], None
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            section = line[:-1]
            continue
        m = re.match(r"^  (\S+)", line)
        if not m:
            continue
        if section == "Options":
            for token in m.group(1).split(","):
                if token.startswith("-"):
                    flags.add(token)
        elif section == "Subcommands":
            subcommands.append(m.group(1))
    return flags, subcommands


def commands_and_flags():
    """{command path: flags} for the top level and every (nested) subcommand."""
    out = {}
    todo = [[]]
    while todo:
        path = todo.pop(0)
        flags, subs = parse_help(run_help(path))
        out[" ".join(path)] = flags
        todo.extend(path + [s] for s in subs)
    return out


def config_keys():
    return sorted(set(k for f in sorted(CONFIG_DIR.glob("*.cpp")) for k in KEY_CALL.findall(f.read_text(encoding="utf-8"))))


def environment_variables():
    names = set()
    suffixes = set()
    for src in sorted((ROOT / "lib").rglob("*.cpp")) + sorted((ROOT / "lib").rglob("*.h")):
        text = src.read_text(encoding="utf-8")
        names.update(ENV_LITERAL.findall(text))
        suffixes.update(ENV_SUFFIX.findall(text))
    out = set()
    for name in names:
        if name.endswith("_"):  # a prefix such as GOARCHIVE_SOURCE_: one variable per suffix
            out.update(name + s for s in suffixes)
        else:
            out.add(name)
    return sorted(out)


class CommandsAndFlags(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BIN, os.X_OK):
            raise AssertionError(f"no goarchive binary at {BIN}; build it or set GOARCHIVE_BIN")
        cls.commands = commands_and_flags()
        cls.man1 = roff_text(MAN1)

    def test_the_help_was_parsed(self):
        # Guards the parser itself: if CLI11's layout changes, this fails instead of checking nothing.
        self.assertIn("archive", self.commands)
        self.assertIn("jobs clear", self.commands)
        self.assertIn("--config", self.commands[""])
        self.assertIn("--batch-size", self.commands["archive"])

    def test_every_command_is_in_goarchive_1(self):
        section = self.man1.split(".SH COMMANDS", 1)[1].split("\n.SH ", 1)[0]
        missing = [c for c in self.commands if c and not mentions(section, c.split()[-1])]
        self.assertEqual(missing, [], f"commands missing from the COMMANDS section of {MAN1}")

    def test_every_flag_is_in_goarchive_1(self):
        missing = sorted({f"{flag} (goarchive {cmd or '<global>'})" for cmd, flags in self.commands.items()
                          for flag in flags if not mentions(self.man1, flag)})
        self.assertEqual(missing, [], f"flags missing from {MAN1}")


class ConfigKeys(unittest.TestCase):
    def test_every_config_key_is_in_goarchive_toml_5(self):
        keys = config_keys()
        # Guards the regex: config.cpp reads far more keys than this.
        self.assertGreater(len(keys), 30, f"only {keys} found in {CONFIG_DIR}; has the Reader API changed?")
        for expected in ("host", "batch_size", "foreign_key", "job_schema", "relations", "method"):
            self.assertIn(expected, keys)
        man5 = roff_text(MAN5)
        missing = [k for k in keys if not mentions(man5, k)]
        self.assertEqual(missing, [], f"config keys missing from {MAN5}")

    def test_every_environment_variable_is_in_goarchive_1(self):
        names = environment_variables()
        for expected in ("GOARCHIVE_SOURCE_HOST", "GOARCHIVE_DESTINATION_PASSWORD", "GOARCHIVE_JOB_SCHEMA",
                         "GOARCHIVE_BATCH_SIZE", "GOARCHIVE_HEARTBEAT_SECONDS"):
            self.assertIn(expected, names)
        man1 = roff_text(MAN1)
        environment = man1.split(".SH ENVIRONMENT", 1)[1].split("\n.SH ", 1)[0]
        missing = [n for n in names if not mentions(environment, n)]
        self.assertEqual(missing, [], f"environment variables missing from the ENVIRONMENT section of {MAN1}")


class ManPagesRender(unittest.TestCase):
    def check(self, page):
        man = shutil.which("man")
        self.assertIsNotNone(man, "man is not installed (scripts/setup.sh installs man-db and groff-base)")
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_STDERR="1")
        env.pop("MANPAGER", None)
        env.pop("PAGER", None)
        proc = subprocess.run([man, "--warnings", "-l", str(page)], capture_output=True, text=True, env=env,
                              timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "", f"man --warnings reports for {page}:\n{proc.stderr}")
        self.assertIn("NAME", proc.stdout)

    def test_goarchive_1(self):
        self.check(MAN1)

    def test_goarchive_toml_5(self):
        self.check(MAN5)


class Readme(unittest.TestCase):
    def test_starts_with_the_two_commands(self):
        lines = [l.strip() for l in README.read_text(encoding="utf-8").splitlines() if l.strip()]
        if lines and lines[0].startswith("# "):
            lines = lines[1:]  # a short title line may come first
        self.assertGreaterEqual(len(lines), 2)
        first, second = (re.sub(r"^(?:\d+\.|[-*])\s+", "", l) for l in lines[:2])
        self.assertTrue(first.startswith("`scripts/demo.sh`"), f"README.md must start with scripts/demo.sh: {lines[0]!r}")
        self.assertTrue(second.startswith("`scripts/test.sh`"), f"then scripts/test.sh: {lines[1]!r}")
        for cmd in ("scripts/demo.sh", "scripts/test.sh"):
            self.assertTrue((ROOT / cmd).is_file(), f"{cmd} does not exist")


if __name__ == "__main__":
    unittest.main()
