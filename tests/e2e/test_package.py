#!/usr/bin/python3
"""The Debian package (issue 36, part 1), without touching the machine.

`cpack -G DEB` runs in the build directory ctest built ($GOARCHIVE_BUILD_DIR, else build/ of this checkout; no
Release rebuild, scripts/package.sh does that), writing into a temporary directory. The package is checked with
dpkg-deb (name, control fields, Depends from dpkg-shlibdeps, conffiles, every file at its path, man pages gzip -9n),
then installed into a private root: `dpkg --root` (a dpkg database of its own, so /usr/bin and the machine's
database are never touched) when that works here, else `dpkg -x`. From that root: `goarchive version`, `man`
finds and renders both pages, the bash completion completes commands, flags and the job names of `-c FILE`, the
example configurations load, the cron example is all comments, and the systemd units say what the issue asks
and pass `systemd-analyze verify` (skipped where systemd-analyze is missing).
"""
import functools
import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("GOARCHIVE_BUILD_DIR") or ROOT / "build")
VERSION = re.search(r"project\(goarchive VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text()).group(1)

FILES = {
    "usr/bin/goarchive": "-rwxr-xr-x",
    "usr/share/man/man1/goarchive.1.gz": "-rw-r--r--",
    "usr/share/man/man5/goarchive.toml.5.gz": "-rw-r--r--",
    "usr/share/bash-completion/completions/goarchive": "-rw-r--r--",
    "usr/share/doc/goarchive/examples/goarchive.toml": "-rw-r--r--",
    "usr/share/doc/goarchive/examples/shop.toml": "-rw-r--r--",
    "usr/share/doc/goarchive/examples/shop_schema.sql": "-rw-r--r--",
    "usr/share/doc/goarchive/examples/shop_data.sql": "-rw-r--r--",
    "lib/systemd/system/goarchive@.service": "-rw-r--r--",
    "lib/systemd/system/goarchive@.timer": "-rw-r--r--",
    "etc/cron.d/goarchive": "-rw-r--r--",
}
DIRECTORIES = {"etc/goarchive", "var/log/goarchive"}


def run(args, timeout=120, **kw):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOARCHIVE_")}
    env.update(extra)
    return env


@functools.lru_cache(maxsize=None)
def provided():
    """{virtual package: providers} of the installed packages (the machine's dpkg database, read only)."""
    out = {}
    lines = run(["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Provides}\n"]).stdout.splitlines()
    for line in lines:
        package, status, provides = (line.split("\t") + ["", ""])[:3]
        if status.endswith(" installed"):
            for p in provides.split(","):
                if p.strip():
                    out.setdefault(p.strip().split(" ")[0], set()).add(package)
    return out


def unit_settings(text):
    """{(section, key): [values]} of a unit file."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.setdefault((section, key.strip()), []).append(value.strip())
    return out


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps", "dpkg", "man", "bash"):
            if not shutil.which(tool):
                raise AssertionError(f"{tool} is not installed (scripts/setup.sh installs dpkg-dev and man-db)")
        if not (BUILD_DIR / "CPackConfig.cmake").exists():
            raise AssertionError(f"no CPackConfig.cmake in {BUILD_DIR}; configure it or set GOARCHIVE_BUILD_DIR")
        cls.tmp = Path(tempfile.mkdtemp(prefix="goarchive-package-"))
        out = cls.tmp / "out"
        run(["cpack", "-G", "DEB", "--config", str(BUILD_DIR / "CPackConfig.cmake"), "-B", str(out)],
            timeout=600, cwd=BUILD_DIR)
        cls.debs = sorted(out.glob("*.deb"))
        if len(cls.debs) != 1:
            raise AssertionError(f"cpack wrote {[d.name for d in cls.debs]} in {out}, not one .deb")
        cls.deb = cls.debs[0]
        cls.arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        cls.fields = run(["dpkg-deb", "--field", str(cls.deb)]).stdout
        cls.contents = run(["dpkg-deb", "--contents", str(cls.deb)]).stdout
        cls.root = cls.tmp / "root"
        cls.root.mkdir()
        cls.installed_with, cls.dpkg_root = cls.install(cls.root)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def install(cls, root):
        """(how, dpkg): `dpkg --root ROOT -i` with a database of its own in ROOT, so the machine's is never read
        or written; `dpkg -x` where dpkg refuses that here. `dpkg` is the command line that acts on ROOT."""
        admin = root / "var/lib/dpkg"
        for sub in ("info", "updates", "triggers"):
            (admin / sub).mkdir(parents=True, exist_ok=True)
        (admin / "status").touch()
        (admin / "available").touch()
        dpkg = ["dpkg", f"--root={root}", f"--admindir={admin}", "--log=/dev/null", "--force-depends",
                "--force-not-root", "--force-script-chrootless"]
        proc = subprocess.run([*dpkg, "-i", str(cls.deb)], capture_output=True, text=True, timeout=120)
        if proc.returncode == 0:
            return "dpkg -i", dpkg
        cls.dpkg_root_error = proc.stderr
        run(["dpkg", "-x", str(cls.deb), str(root)])
        return "dpkg -x", None

    def path(self, rel):
        return self.root / rel

    # The package itself.

    def test_file_name_is_the_debian_one(self):
        self.assertEqual(self.deb.name, f"goarchive_{VERSION}_{self.arch}.deb")

    def test_control_fields(self):
        self.assertRegex(self.fields, r"(?m)^Package: goarchive$")
        self.assertRegex(self.fields, rf"(?m)^Version: {re.escape(VERSION)}$")
        self.assertRegex(self.fields, rf"(?m)^Architecture: {self.arch}$")
        self.assertRegex(self.fields, r"(?m)^Maintainer: .+")
        self.assertRegex(self.fields, r"(?m)^Section: database$")
        self.assertRegex(self.fields, r"(?m)^Description: .+\n .+")

    def test_depends_come_from_dpkg_shlibdeps(self):
        m = re.search(r"(?m)^Depends: (.+)$", self.fields)
        self.assertIsNotNone(m, f"no Depends:\n{self.fields}")
        depends = {d.strip().split(" ")[0]: d.strip() for d in m.group(1).split(",")}
        # The libraries the binary links, each with the minimum version dpkg-shlibdeps found in their symbols.
        for lib in ("libmariadb3", "libc6", "libstdc++6"):
            self.assertIn(lib, depends, f"Depends: {m.group(1)}")
        self.assertRegex(depends["libc6"], r"^libc6 \(>= [0-9.]+\)$", "not computed by dpkg-shlibdeps")
        self.assertRegex(depends["libmariadb3"], r"^libmariadb3 \(>= [0-9.:~+-]+\)$")
        # Every library the binary needs is covered, as dpkg-shlibdeps guarantees.
        needed = run(["objdump", "-p", str(self.path("usr/bin/goarchive"))]).stdout if shutil.which("objdump") else ""
        for soname in re.findall(r"NEEDED\s+(\S+)", needed):
            owner = subprocess.run(["dpkg", "-S", f"*/{soname}"], capture_output=True, text=True).stdout
            packages = {line.split(":")[0] for line in owner.splitlines() if ":" in line}
            virtual = {v for v, providers in provided().items() if providers & packages}
            self.assertTrue((packages | virtual) & set(depends), f"{soname} ({packages}) not in Depends: {m.group(1)}")

    def test_depends_are_satisfied_on_this_machine(self):
        # What `dpkg -i` would check against the machine's own database (read, never written).
        depends = re.search(r"(?m)^Depends: (.+)$", self.fields).group(1)
        unmet = []
        for dep in depends.split(","):
            alternatives = [a.strip() for a in dep.split("|")]
            if not any(self.satisfied(a) for a in alternatives):
                unmet.append(dep.strip())
        self.assertEqual(unmet, [], f"Depends this machine does not satisfy: {depends}")

    @staticmethod
    def satisfied(dependency):
        m = re.fullmatch(r"([a-z0-9.+-]+)(?::\w+)?(?: \((<<|<=|=|>=|>>) ([^)]+)\))?", dependency)
        if not m:
            raise AssertionError(f"cannot read the dependency {dependency!r}")
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}\n", m.group(1)],
                              capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            status, _, version = line.partition("\t")
            if status.endswith(" installed") and (not m.group(2) or subprocess.run(
                    ["dpkg", "--compare-versions", version, {"<<": "lt", "<=": "le", "=": "eq", ">=": "ge",
                                                             ">>": "gt"}[m.group(2)], m.group(3)]).returncode == 0):
                return True
        # A virtual package (libspdlog1.10-fmt9 is provided by libspdlog1.10), unversioned.
        return not m.group(2) and m.group(1) in provided()

    def test_cron_example_is_a_conffile(self):
        conffiles = run(["dpkg-deb", "--info", str(self.deb), "conffiles"]).stdout.split()
        self.assertEqual(conffiles, ["/etc/cron.d/goarchive"])

    def test_every_file_at_its_path(self):
        entries = {}
        for line in self.contents.splitlines():
            parts = line.split()
            mode, owner, name = parts[0], parts[1], parts[5]
            entries[name.lstrip("./").rstrip("/")] = (mode, owner)
        for rel, mode in FILES.items():
            self.assertIn(rel, entries, f"{rel} missing from the package:\n{self.contents}")
            self.assertEqual(entries[rel], (mode, "root/root"), rel)
        for rel in DIRECTORIES:
            self.assertIn(rel, entries)
            self.assertEqual(entries[rel][0][0], "d", rel)
        files = {n for n, (mode, _) in entries.items() if mode[0] != "d"}
        self.assertEqual(files - set(FILES), set(), "files the package should not hold")
        self.assertFalse([n for n in files if re.search(r"/man/man\d/.*\.\d$", n)], "an uncompressed man page")

    def test_binary_is_stripped(self):
        if not shutil.which("file"):
            self.skipTest("file is not installed")
        self.assertIn("stripped", run(["file", str(self.path("usr/bin/goarchive"))]).stdout)
        self.assertNotIn("not stripped", run(["file", str(self.path("usr/bin/goarchive"))]).stdout)

    def test_man_pages_are_gzip_9n(self):
        for rel, source in (("usr/share/man/man1/goarchive.1.gz", "man/goarchive.1"),
                            ("usr/share/man/man5/goarchive.toml.5.gz", "man/goarchive.toml.5")):
            data = self.path(rel).read_bytes()
            self.assertEqual(data[:2], b"\x1f\x8b", rel)
            self.assertEqual(data[3] & 0x08, 0, f"{rel}: the file name is stored (gzip without -n)")
            self.assertEqual(data[4:8], b"\0\0\0\0", f"{rel}: a time stamp is stored (gzip without -n)")
            self.assertEqual(data[8], 2, f"{rel}: not compressed with -9")
            self.assertEqual(gzip.decompress(data), (ROOT / source).read_bytes(), rel)

    # Installed into the private root.

    def test_installed_by_dpkg_into_a_private_root(self):
        if self.installed_with != "dpkg -i":
            self.skipTest(f"dpkg --root -i does not work here, extracted with dpkg -x: {self.dpkg_root_error}")
        status = run([*self.dpkg_root, "-s", "goarchive"]).stdout
        self.assertIn("Status: install ok installed", status)
        self.assertIn("/etc/cron.d/goarchive", status)  # registered as a conffile
        listed = run([*self.dpkg_root, "-L", "goarchive"]).stdout.split()
        self.assertIn("/usr/bin/goarchive", listed)

    def test_removed_by_dpkg_keeps_the_conffile_until_purged(self):
        if self.installed_with != "dpkg -i":
            self.skipTest(f"dpkg --root -i does not work here: {self.dpkg_root_error}")
        root = self.tmp / "root-remove"
        root.mkdir()
        how, dpkg = self.install(root)
        self.assertEqual(how, "dpkg -i")
        self.assertTrue((root / "usr/bin/goarchive").exists())
        run([*dpkg, "-r", "goarchive"])
        self.assertFalse((root / "usr/bin/goarchive").exists())
        self.assertFalse((root / "lib/systemd/system/goarchive@.service").exists())
        self.assertTrue((root / "etc/cron.d/goarchive").exists(), "a removed package keeps its conffiles")
        run([*dpkg, "--purge", "goarchive"])
        self.assertFalse((root / "etc/cron.d/goarchive").exists())

    def test_goarchive_version(self):
        proc = run([str(self.path("usr/bin/goarchive")), "version"], timeout=30, env=clean_env())
        self.assertIn(VERSION, proc.stdout)

    def test_man_finds_and_renders_both_pages(self):
        env = clean_env(MANWIDTH="80", LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat")
        manpath = str(self.path("usr/share/man"))
        for args, title in ((["goarchive"], "GOARCHIVE(1)"), (["5", "goarchive.toml"], "GOARCHIVE.TOML(5)")):
            proc = run(["man", "-M", manpath, *args], env=env)  # what `man goarchive` finds once installed
            self.assertIn(title, proc.stdout)
            self.assertIn("NAME", proc.stdout)
        for rel in ("usr/share/man/man1/goarchive.1.gz", "usr/share/man/man5/goarchive.toml.5.gz"):
            proc = run(["man", "-l", str(self.path(rel))], env=env)
            self.assertIn("SYNOPSIS", proc.stdout, rel)
        page = run(["man", "-M", manpath, "goarchive"], env=env).stdout
        for mention in ("goarchive@.service", "goarchive@.timer", "/usr/share/bash-completion/completions/goarchive"):
            self.assertIn(mention, re.sub(r"\s+", " ", page).replace("‐", "-"), "goarchive(1) FILES/SEE ALSO")

    def complete(self, *words, config_env=None):
        """COMPREPLY of the installed completion for the command line WORDS (the last one is completed)."""
        script = (f'source {self.path("usr/share/bash-completion/completions/goarchive")}\n'
                  'complete -p goarchive >/dev/null || exit 3\n'
                  'COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))\n'
                  '_goarchive\n'
                  'printf "%s\\n" "${COMPREPLY[@]}"\n')
        env = clean_env(PATH=f'{self.path("usr/bin")}:{os.environ["PATH"]}')
        if config_env:
            env["GOARCHIVE_CONFIG"] = config_env
        proc = run(["bash", "-c", script, "bash", *words], timeout=30, env=env)
        return [w for w in proc.stdout.splitlines() if w]

    def test_completion_of_commands_and_flags(self):
        self.assertEqual(self.complete("goarchive", "ar"), ["archive"])
        commands = self.complete("goarchive", "")
        for c in ("archive", "copy-only", "purge", "dry-run", "plan", "validate", "jobs", "locks", "version"):
            self.assertIn(c, commands)
        self.assertEqual(self.complete("goarchive", "jobs", "c"), ["clear"])
        self.assertIn("--max-runtime", self.complete("goarchive", "archive", "--max-r"))
        self.assertIn("--batch-size", self.complete("goarchive", "-v", "archive", "--"))
        self.assertEqual(self.complete("goarchive", "plan", "--format", ""), ["text", "json"])
        self.assertEqual(self.complete("goarchive", "dry-run", "--mode", "c"), ["copy-only"])
        self.assertEqual(self.complete("goarchive", "ctl", "-j", "j", ""), ["status", "pause", "resume", "stop", "set"])
        self.assertEqual(self.complete("goarchive", "ctl", "set", ""), ["batch_size=", "sleep="])
        self.assertEqual(self.complete("goarchive", "ctl", "--so"), ["--socket"])

    def test_completion_of_job_names_from_the_config(self):
        examples = self.path("usr/share/doc/goarchive/examples")
        shop = str(examples / "shop.toml")
        self.assertEqual(self.complete("goarchive", "archive", "-c", shop, "-j", ""), ["archive_old_orders"])
        self.assertEqual(self.complete("goarchive", "-c", shop, "dry-run", "--job", "arch"), ["archive_old_orders"])
        self.assertEqual(self.complete("goarchive", "plan", "--config", "=", shop, "-j", ""), ["archive_old_orders"])
        annotated = str(examples / "goarchive.toml")
        self.assertEqual(self.complete("goarchive", "archive", "-c", annotated, "-j", ""),
                         ["archive_old_orders", "archive_old_sessions"])
        # Without -c: $GOARCHIVE_CONFIG (the units' variable), else /etc/goarchive/goarchive.toml.
        self.assertEqual(self.complete("goarchive", "locks", "-j", "", config_env=shop), ["archive_old_orders"])
        quoted = self.tmp / "quoted.toml"
        quoted.write_text('[jobs."old.invoices"]\nroot_table = "i"\n[[jobs."old.invoices".relations]]\n'
                          "[jobs . 'logs']\n  [jobs.sessions]  # a comment\n")
        self.assertEqual(self.complete("goarchive", "archive", "-c", str(quoted), "-j", ""),
                         ["old.invoices", "logs", "sessions"])
        self.assertEqual(self.complete("goarchive", "archive", "-c", str(self.tmp / "missing.toml"), "-j", ""), [])

    def test_example_configurations_load(self):
        examples = self.path("usr/share/doc/goarchive/examples")
        for name, job in (("goarchive.toml", "archive_old_orders"), ("goarchive.toml", "archive_old_sessions"),
                          ("shop.toml", "archive_old_orders")):
            run([str(self.path("usr/bin/goarchive")), "plan", "-c", str(examples / name), "-j", job], timeout=30,
                env=clean_env())
        annotated = (examples / "goarchive.toml").read_text()
        self.assertGreater(annotated.count("#"), 30, "the example configuration is not annotated")

    def test_cron_example_is_disabled(self):
        lines = [line for line in self.path("etc/cron.d/goarchive").read_text().splitlines() if line.strip()]
        self.assertEqual([line for line in lines if not line.lstrip().startswith("#")], [])
        self.assertTrue([line for line in lines if re.search(r"root\s+goarchive archive -c /etc/goarchive/", line)])

    # The systemd units.

    def test_service_unit(self):
        text = self.path("lib/systemd/system/goarchive@.service").read_text()
        s = unit_settings(text)
        self.assertEqual(s[("Service", "Type")], ["oneshot"])
        exec_start = s[("Service", "ExecStart")]
        self.assertEqual(len(exec_start), 1)
        self.assertTrue(exec_start[0].startswith("/usr/bin/goarchive "), exec_start)
        self.assertIn("-j %i", exec_start[0])
        self.assertIn("-c ${GOARCHIVE_CONFIG}", exec_start[0])
        self.assertIn("GOARCHIVE_CONFIG=/etc/goarchive/goarchive.toml", s[("Service", "Environment")])
        self.assertIn("-/etc/default/goarchive", s[("Service", "EnvironmentFile")])
        self.assertIn("4", s[("Service", "SuccessExitStatus")][0].split())  # busy, try later: not a failure
        self.assertEqual(s[("Service", "KillSignal")], ["SIGTERM"])  # a clean stop at a batch boundary
        stop = s[("Service", "TimeoutStopSec")][0]
        minutes = re.fullmatch(r"(\d+)min", stop)
        self.assertTrue(minutes and int(minutes.group(1)) >= 5, f"TimeoutStopSec={stop}: too short for a batch")
        # The comment says how the units and the named locks agree.
        comments = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
        for words in ("never starts a second instance", "job lock", "exit status 4"):
            self.assertIn(words, comments)

    def test_timer_unit(self):
        s = unit_settings(self.path("lib/systemd/system/goarchive@.timer").read_text())
        self.assertTrue(s.get(("Timer", "OnCalendar")))
        self.assertEqual(s[("Timer", "Unit")], ["goarchive@%i.service"])
        self.assertEqual(s[("Install", "WantedBy")], ["timers.target"])

    def test_systemd_analyze_verify(self):
        analyze = shutil.which("systemd-analyze")
        if not analyze:
            self.skipTest("systemd-analyze is not installed")
        units = self.tmp / "units"
        units.mkdir(exist_ok=True)
        binary = str(self.path("usr/bin/goarchive"))
        paths = []
        for suffix in ("service", "timer"):
            # The templates (verify instantiates them) and an instance of each, running the private root's binary.
            text = self.path(f"lib/systemd/system/goarchive@.{suffix}").read_text().replace("/usr/bin/goarchive",
                                                                                          binary)
            for name in (f"goarchive@.{suffix}", f"goarchive@archive_old_orders.{suffix}"):
                (units / name).write_text(text)
                paths.append(str(units / name))
        # Documentation=man:goarchive(1) is checked with man: it finds the pages of the private root.
        env = clean_env(MANPATH=str(self.path("usr/share/man")))
        proc = subprocess.run([analyze, "verify", "--man=yes", *paths], capture_output=True, text=True, timeout=60,
                              env=env, cwd=units)
        output = proc.stdout + proc.stderr
        self.assertEqual(proc.returncode, 0, output)
        ours = [line for line in output.splitlines() if "goarchive" in line]
        self.assertEqual(ours, [], f"systemd-analyze verify complains about the units:\n{output}")
        # Not blind: an unknown key in the unit is reported.
        bad = units / "goarchive@bad.service"
        bad.write_text((units / "goarchive@.service").read_text().replace("[Service]\n", "[Service]\nBogusKey=1\n"))
        proc = subprocess.run([analyze, "verify", "--man=no", str(bad)], capture_output=True, text=True, timeout=60,
                              env=env, cwd=units)
        self.assertIn("BogusKey", proc.stdout + proc.stderr)


if __name__ == "__main__":
    unittest.main()
