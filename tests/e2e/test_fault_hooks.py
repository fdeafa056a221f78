#!/usr/bin/python3
"""The test-only fault hooks cannot pass silently (lib/util/fault.h): goarchive refuses, before it does anything
(exit 2), a GOARCHIVE_FAULT or GOARCHIVE_PAUSE that names an unknown point (naming it and listing the known ones) or
is malformed, and, in a build without the hooks, either variable at all ("this build has no fault hooks"), so that no
test takes a run its fault never reached for a clean one. No server is needed.

The binary is $GOARCHIVE_BIN (set by ctest), else build/goarchive of this checkout.
"""
import os
import subprocess
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("GOARCHIVE_BIN") or str(ROOT / "build" / "goarchive")


def goarchive(*args, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("GOARCHIVE_FAULT", "GOARCHIVE_PAUSE")}
    e.update(env)
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30, env=e)


class FaultHooks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BIN, os.X_OK):
            raise AssertionError(f"no goarchive binary at {BIN}; build it or set GOARCHIVE_BIN")
        # A valid spec that the run never reaches: `version` passes no point. With hooks it runs (exit 0); without
        # them it is refused, which is what this build is then tested for.
        cls.valid = goarchive("version", GOARCHIVE_FAULT="after_batch:1")
        cls.hooks = cls.valid.returncode == 0

    def test_without_a_variable_the_run_is_unchanged(self):
        r = goarchive("version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("goarchive "), r.stdout)

    def test_a_build_with_hooks_refuses_an_unknown_or_malformed_point(self):
        if not self.hooks:
            self.skipTest("this binary has no fault hooks (see the other test)")
        for var, value in (("GOARCHIVE_FAULT", "after_batches"), ("GOARCHIVE_FAULT", "after_batches:2"),
                           ("GOARCHIVE_PAUSE", "after_batches:1:/tmp/p")):
            r = goarchive("version", **{var: value})
            self.assertEqual(r.returncode, 2, f"{var}={value}: {r.stderr}")
            self.assertIn(f'{var}={value} names an unknown fault point "after_batches"', r.stderr)
            for point in ("creating_schema", "after_copy_commit", "after_mark_deleting", "after_batch"):
                self.assertIn(point, r.stderr.split("the known points:", 1)[1])
            self.assertEqual(r.stdout, "")
        for var, value in (("GOARCHIVE_FAULT", "after_batch:0"), ("GOARCHIVE_PAUSE", "after_batch:1"),
                           ("GOARCHIVE_PAUSE", "after_batch:/tmp/p")):
            r = goarchive("version", **{var: value})
            self.assertEqual(r.returncode, 2, f"{var}={value}: {r.stderr}")
            self.assertIn(f"{var}={value}", r.stderr)

    def test_a_build_without_hooks_refuses_either_variable(self):
        if self.hooks:
            self.skipTest("this binary has the fault hooks (see the other test)")
        for var, value in (("GOARCHIVE_FAULT", "after_batch:1"), ("GOARCHIVE_PAUSE", "after_batch:1:/tmp/p"),
                           ("GOARCHIVE_FAULT", "no_such_point")):
            r = goarchive("version", **{var: value})
            self.assertEqual(r.returncode, 2, f"{var}={value}: {r.stderr}")
            self.assertIn(f"{var} is set, but this build has no fault hooks", r.stderr)


if __name__ == "__main__":
    unittest.main()
