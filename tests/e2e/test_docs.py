#!/usr/bin/python3
"""The documentation keeps up with the code.

- every command and every flag that `goarchive <command> --help` prints is in man/goarchive.1;
- every config key that lib/config/ reads has its own entry in man/goarchive.toml.5 (a .TP heading naming it, not
  a mention in passing), and every key an entry documents is one the loader reads, accepted (not refused as an
  unknown key) by `goarchive plan` in the table whose section documents it;
- every GOARCHIVE_* environment variable that lib/ reads is in man/goarchive.1;
- `man --warnings` renders both pages without a warning;
- README.md starts with the two commands `scripts/demo.sh` and `scripts/test.sh`.

The binary is $GOARCHIVE_BIN (set by ctest), else build/goarchive of this checkout.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("GOARCHIVE_BIN") or str(ROOT / "build" / "goarchive")
MAN1 = ROOT / "man" / "goarchive.1"
MAN5 = ROOT / "man" / "goarchive.toml.5"
CONFIG_DIR = ROOT / "lib" / "config"  # the loader's sources read every key
README = ROOT / "README.md"

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


# Reader calls that read a value (not subtable(), which opens a section): the keys a table's entries document.
VALUE_CALL = re.compile(r'\b\w+\s*\.\s*(?:string|integer|number|boolean|string_list|get)\s*\(\s*"([^"]+)"')
SECTION_CALL = re.compile(r'\b\w+\s*\.\s*subtable\s*\(\s*"([^"]+)"')


def loader_names(pattern):
    return sorted(set(k for f in sorted(CONFIG_DIR.glob("*.cpp")) for k in pattern.findall(f.read_text(encoding="utf-8"))))


# The TOML table(s) each section of goarchive.toml(5) documents; sections not named here document no keys.
SECTION_TABLES = {"[source] AND [destination]": ["source", "destination"], "[processing]": ["processing"],
                  "[verification]": ["verification"], "[replication]": ["replication"], "[throttle]": ["throttle"],
                  "[logging]": ["logging"], "[hooks]": ["hooks"], "[control]": ["control"], "[jobs.NAME]": ["jobs.j"],
                  "[[jobs.NAME.relations]]": ["jobs.j.relations"]}
ROFF_ARG = re.compile(r'"([^"]*)"|(\S+)')


def heading_keys(line):
    """The keys an entry heading names: `.B key`, `.BR key " (type)"`, `.BR a ", " b " (type)"`: the bold words
    before the first parenthesis ("" when the heading names no key, e.g. a value or a SQL phrase)."""
    macro, _, rest = line.partition(" ")
    args = [m.group(1) if m.group(1) is not None else m.group(2) for m in ROFF_ARG.finditer(rest)]
    if macro == ".B":
        args = [" ".join(args)]
    elif macro != ".BR":
        return []
    keys = []
    for i, arg in enumerate(args):
        if i % 2:  # roman: only ", " between keys; anything else ends the list
            if arg.strip() != ",":
                break
            continue
        keys.append(arg)
    return [k for k in keys if re.fullmatch(r"[a-z][a-z0-9_]*", k)]


def man5_entries():
    """{(toml table, key): the entry's heading} of every key goarchive.toml(5) gives an entry: the line after a .TP
    at the page's own indentation (the values of a key, inside .RS/.RE, are not keys) in a section that documents a
    table (SECTION_TABLES); "Only in [destination]:" narrows [source] AND [destination] to the destination (and a
    later "Only in [source]:" to the source)."""
    out = {}
    tables, section_tables, depth, after_tp, only_in = None, None, 0, False, False
    for line in MAN5.read_text(encoding="utf-8").replace("\\-", "-").splitlines():
        if line.startswith(".SH "):
            tables = section_tables = SECTION_TABLES.get(line[4:].strip().strip('"'))
            depth = 0
        elif line.startswith(".SS "):
            tables = None  # a subsection is prose about the section (Diamonds, References from outside the job)
        elif line.startswith(".RS"):
            depth += 1
        elif line.startswith(".RE"):
            depth -= 1
        elif line.startswith("Only in"):
            only_in = True
            continue
        elif only_in and section_tables:
            named = [t for t in section_tables if f"[{t}]" in line]
            tables = named or section_tables
        elif after_tp and tables and depth == 0:
            for key in heading_keys(line):
                for t in tables:
                    out[(t, key)] = line
        only_in = False
        after_tp = line.startswith(".TP")
    return out


def toml_with(table, key, value):
    """A config that plan accepts (a job j of one table r) with KEY = VALUE added to TABLE."""
    sections = {"source": ['host = "127.0.0.1"', 'user = "u"', 'password = "p"', 'database = "s"'],
                "destination": ['host = "127.0.0.1"', 'user = "u"', 'password = "p"', 'database = "d"'],
                "jobs.j": ['root_table = "r"', 'where = "id < 10"']}
    sections.setdefault(table, []).append(f"{key} = {value}")
    text = []
    for name, lines in sections.items():
        text.append(f"[[{name}]]" if name == "jobs.j.relations" else f"[{name}]")
        text += lines
        if name == "jobs.j.relations":
            text += ['table = "c"', 'foreign_key = "rid"']
    return "\n".join(text) + "\n"


def plan_with(table, key, value):
    """(rc, stderr) of `goarchive plan` on toml_with(TABLE, KEY, VALUE)."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(toml_with(table, key, value))
        f.flush()
        env = {k: v for k, v in os.environ.items() if not k.startswith("GOARCHIVE_")}
        proc = subprocess.run([BIN, "plan", "-c", f.name], capture_output=True, text=True, timeout=30, env=env)
        return proc.returncode, proc.stderr


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
    @classmethod
    def setUpClass(cls):
        cls.keys = set(loader_names(VALUE_CALL))
        cls.entries = man5_entries()
        cls.documented = {k for _, k in cls.entries}

    def test_the_sources_and_the_page_were_parsed(self):
        # Guards the regexes: the loader reads far more keys than this, and the page documents them.
        self.assertGreater(len(self.keys), 30, f"only {sorted(self.keys)} found in {CONFIG_DIR}; has the Reader API "
                                               "changed?")
        for expected in ("host", "batch_size", "foreign_key", "job_schema", "relations", "method"):
            self.assertIn(expected, self.keys)
        for section in ("source", "processing", "jobs", "logging"):
            self.assertIn(section, loader_names(SECTION_CALL))
        for expected in (("source", "host"), ("destination", "job_schema"), ("processing", "batch_size"),
                         ("jobs.j", "batch_size"), ("jobs.j.relations", "foreign_key"), ("source", "tls_key"),
                         ("replication", "servers"), ("logging", "file")):
            self.assertIn(expected, self.entries)
        for not_a_key in (("source", "job_schema"), ("source", "disabled"), ("source", "verify-ca")):
            self.assertNotIn(not_a_key, self.entries)

    def test_every_config_key_has_its_own_entry_in_goarchive_toml_5(self):
        missing = sorted(self.keys - self.documented)
        self.assertEqual(missing, [], f"config keys the loader reads without an entry (.TP heading) in {MAN5}")

    def test_every_documented_key_is_read_by_the_loader(self):
        unknown = sorted(self.documented - self.keys)
        self.assertEqual(unknown, [], f"keys {MAN5} documents that {CONFIG_DIR} never reads")

    def test_every_documented_key_is_accepted_in_its_table(self):
        if not os.access(BIN, os.X_OK):
            raise AssertionError(f"no goarchive binary at {BIN}; build it or set GOARCHIVE_BIN")
        # The probe is not blind: a key nobody reads is refused in each table, and the base config is accepted.
        for table in SECTION_TABLES.values():
            rc, err = plan_with(table[0], "no_such_key", "1")
            self.assertIn("unknown key", err, f"[{table[0]}] no_such_key = 1 was not refused: rc={rc}")
        rc, err = plan_with("jobs.j", "primary_key", '"id"')
        self.assertEqual(rc, 0, err)
        refused = []
        for (table, key), heading in sorted(self.entries.items()):
            # Any value: a key the loader reads is read (and its value judged) before unknown keys are refused.
            value = "[{}]" if "array of tables" in heading else "1"
            rc, err = plan_with(table, key, value)
            if "unknown key" in err:
                refused.append(f"[{table}] {key}: {err.strip()}")
        self.assertEqual(refused, [], f"keys {MAN5} documents in a table whose loader refuses them")

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
