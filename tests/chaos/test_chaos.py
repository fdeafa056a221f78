#!/usr/bin/python3
"""The randomized live-application ("chaos") test: application threads make real, committed writes to the source
(updates of old and new rows, new children under old roots, deleted children, children moved to another parent, new
roots eligible or not, the root's `where` column flipped both ways, primary key updates with their children following)
while goarchive archive / copy-only / purge runs and is SIGKILLed at random moments (after a random delay or at a
fault point of the Debug build) and rerun. Then the application stops, a final clean run finishes the work, and the
end state is checked against the application's log of committed writes (chaoskit.check):

  every row's latest committed version is in exactly one of source and destination, byte-equal (purge: eligible trees
  gone, the others in the source); rows the application deleted are in neither server; no orphans on either side;
  every eligible root is archived (purged) and no non-eligible one is.

A copy-only round runs copy-only under load, checks that the source still holds every row's latest version, then runs
a clean `archive` and checks the full invariant.

A copy-only round's final clean copy-only run is checked against the model on both sides (the source holds every
row's latest version, the destination exactly the eligible trees at their latest version), then a clean `archive`
runs and the full invariant is checked.

Rounds vary: archive / copy-only / purge, the relation kind (database foreign keys with ON UPDATE CASCADE,
config-only relations, the single table, a diamond), integer, composite and VARCHAR keys, sha256, count or no
verification, small or large batches. DIAMOND rounds give g a second parent, r itself: the application locks both
parents of every g it writes, usually names the c's own root, sometimes another (a cross-root diamond), and moves g
under either parent; the final clean runs take every root in one batch, and the oracle exempts only the eligible roots
joined (through such g rows, transitively) to a root that is not eligible: reported as "blocked", allowed. Diamonds
are archive or purge rounds (copy-only refuses them) with integer or composite keys.
SINGLE-TABLE rounds (tables=1) have the root table r only, a job without relations (the engine's single-table path):
the application updates, inserts, deletes, re-keys roots and flips their `where` column; never a diamond.

The first rounds (COVER) are fixed shapes that cover every pair of mode x key x relation kind x verification that
can exist (pairwise; 12 rounds), with data from the fixed seed 20261201; the rounds after them draw their shape at
random from CHAOS_SEED. In CI (CHAOS_ROUNDS unset) two random rounds follow the cover, and CHAOS_SEED defaults to a
number taken from the git commit, so the random part rotates with every commit (printed, to rerun a failure).

The test proves that the chaos happened: every round must commit at least MIN_WRITES_PER_SECOND application writes per
second of load (and fewer failed writes than committed ones), SIGKILL goarchive at least twice (rc -9), of which its
first run at a fault point (GOARCHIVE_FAULT=<point>:1, which must kill), and leave the registry in order after the
final clean run (no unfinished batch, no job or run marked running, no conflict unless allowed). The suite refuses a
binary without the fault hooks (campaignkit.require_fault_hooks).

Environment: CHAOS_SEED (default: from the git commit), CHAOS_ROUNDS (default: the 12 cover rounds + 2 random ones),
CHAOS_SECONDS (seconds of load per round, default 6), CHAOS_KEEP=1 keeps a failed round's databases (CHAOS_KEEP_SERVERS=1 leaves the servers running),
CHAOS_ONLY=3,5 runs only those rounds (same parameters as in the full run), CHAOS_VERBOSE=1 prints every goarchive run,
CHAOS_LOG=file appends the whole log of every goarchive run to FILE, CHAOS_NO_PROOF=1 runs without the commit proof,
CHAOS_FORCE=mode=archive,key=composite,dbfk=1,batch_size=4 gives every round that shape (to stress one kind;
tables=1 forces the single-table shape, tables=3 the three tables).
It starts its own servers (scripts/servers.sh, GOARCHIVE_TEST_DIR=/tmp/ga-chaos, ports 26306-26308) and stops them at
the end. Needs the Debug build (fault hooks).
"""

import collections
import json
import os
import random
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaoskit  # noqa: E402  (puts tests/integration on sys.path)
import campaignkit  # noqa: E402
from chaoskit import (ALLOWED, CATEGORIES, POINTS, STATS, App, Model, Schema, check, conflict_roots,  # noqa: E402
                      load, registry_failures, report, run, servers, tail)

import gatest  # noqa: E402
from scenario import BIN, Scenario  # noqa: E402

q = gatest.quote_ident

MODES = ["archive", "copy-only", "purge"]
KEYS = ["int", "composite", "varchar"]
VERIFICATIONS = ["sha256", "count", "none"]
# The fixed rounds: every pair of (mode, key, relation kind, verification) values that can exist appears in at least
# one of them (a diamond is never copy-only nor VARCHAR-keyed). Relation kinds: dbfk (database foreign keys), config
# (config-only relations), single (the single table r), diamond (config-only relations, g under c and under r).
COVER = [
    ("archive", "int", "dbfk", "sha256"), ("copy-only", "varchar", "dbfk", "count"),
    ("purge", "composite", "dbfk", "none"), ("purge", "varchar", "config", "sha256"),
    ("archive", "composite", "config", "count"), ("copy-only", "int", "config", "none"),
    ("copy-only", "composite", "single", "sha256"), ("purge", "int", "single", "count"),
    ("archive", "varchar", "single", "none"), ("archive", "int", "diamond", "sha256"),
    ("purge", "composite", "diamond", "count"), ("archive", "composite", "diamond", "none"),
]
COVER_SEED = 20261201  # the cover rounds' data in CI: the same every run
RANDOM_IN_CI = 2  # random rounds after the cover when CHAOS_ROUNDS is unset


def commit_seed():
    """A seed from the git commit under test (its first 8 hex digits), so that CI's random rounds rotate."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=os.path.dirname(os.path.abspath(__file__)),
                              capture_output=True, text=True, timeout=30).stdout.strip()
        return int(head[:8], 16)
    except (OSError, ValueError, subprocess.SubprocessError):
        return int(time.time())  # no git: still a fresh seed, printed like any other


SEED = int(os.environ.get("CHAOS_SEED") or commit_seed())
CI = not os.environ.get("CHAOS_ROUNDS")
ROUNDS = len(COVER) + RANDOM_IN_CI if CI else int(os.environ["CHAOS_ROUNDS"])
SECONDS = float(os.environ.get("CHAOS_SECONDS") or 6)
VERBOSE = bool(os.environ.get("CHAOS_VERBOSE"))
# What every round must show it exercised (a round that exercised nothing fails): committed application writes per
# second of load (3 threads commit 250 to 500 per second on a quiet machine), SIGKILLs that killed.
MIN_WRITES_PER_SECOND = 50
MIN_KILLS = 2
POINTS_FIRED = collections.Counter()  # fault point -> SIGKILLs it gave, over the whole run
RESULTS = []  # one dict per round
RC1 = []  # the last log line of the first runs that ended rc 1 under load


def setUpModule():
    global BIN
    BIN = chaoskit.start(BIN)
    campaignkit.require_fault_hooks(BIN, {p for points in POINTS.values() for p in points})
    seeds = f"the random rounds; the cover rounds use {COVER_SEED}" if CI else "every round"
    print(f"\nchaos: CHAOS_SEED={SEED} ({seeds}) CHAOS_ROUNDS={ROUNDS} CHAOS_SECONDS={SECONDS}, binary {BIN}, servers "
          f"127.0.0.1:{os.environ['GA_SOURCE_PORT']} / :{os.environ['GA_DEST_PORT']}", file=sys.stderr, flush=True)


def tearDownModule():
    try:
        if not os.environ.get("CHAOS_KEEP_SERVERS"):
            servers("stop", "source", "destination")
    finally:
        print("\n" + closing_table(), file=sys.stderr, flush=True)
        path = os.environ.get("CHAOS_STATS_FILE")
        if path:
            with open(path, "w") as f:
                json.dump({"seed": SEED, "stats": dict(STATS), "rounds": RESULTS}, f, indent=1, default=str)


def closing_table():
    s = STATS
    rows = [("rounds (failed)", f"{s['rounds']} ({s['rounds_failed']})"),
            ("  single-table rounds", s["rounds_single"]),
            ("application writes committed", s["writes"]),
            ("  skipped (row or parent gone) / failed (errors)", f"{s['skipped']} / {s['app_errors']}"),
            ("goarchive runs under load", s["runs"]),
            ("SIGKILLs (timer / fault point)", f"{s['kills']} ({s['kills_timer']} / {s['kills_point']})"),
            ("fault points that killed", len(POINTS_FIRED)),
            ("runs ending rc 1 under load / rc 4", f"{s['rc1']} / {s['rc4']}"),
            ("final clean runs failed", s["final_failed"])]
    rows += [(k, s[k]) for k in CATEGORIES]
    rows.append(("conflict rows / kept copies (failures)", f"{s['conflicts']} / {s['kept']}"))
    rows.append(("unarchived in diamond rounds (failures)", s["unarchived_diamond"]))
    rows.append(("allowed: blocked diamond roots", s["blocked"]))
    rows.append(("allowed: copy-only copies of deleted roots kept", s["only_version"]))
    rows.append(("row checks", s["row_checks"]))
    out = campaignkit.closing_table(f"chaos closing table (CHAOS_SEED={SEED})", rows)
    out.append("SIGKILLs per fault point: " + ", ".join(f"{p} {n}" for p, n in sorted(POINTS_FIRED.items())))
    if RC1:
        out.append("runs ending rc 1 under load (first ones):")
        out += [f"  {line}" for line in RC1]
    fails = [r for r in RESULTS if r["failed"]]
    if fails:
        out.append("failed rounds:")
        out += [f"  round {r['round']}: {r['kind']}: {r['summary']}" for r in fails]
    return "\n".join(out)


def round_seed(i):
    """The seed of round I's draws and data: the fixed one for CI's cover rounds, CHAOS_SEED otherwise."""
    return COVER_SEED if CI and i < len(COVER) else SEED


def round_params(i, rng):
    """Round I's kind: the first rounds are COVER's fixed shapes; later rounds draw at random, a third of the archive
    and purge ones diamonds (integer or composite keys), a quarter of the others single-table."""
    diamond, tables = False, 3
    if i < len(COVER):
        mode, key, kind, verification = COVER[i]
        dbfk = kind == "dbfk"
        diamond = kind == "diamond"
        tables = 1 if kind == "single" else 3
    else:
        mode, key = rng.choice(MODES), rng.choice(KEYS)
        dbfk, verification = rng.random() < 0.5, rng.choice(VERIFICATIONS)
        # copy-only refuses a diamond (goarchive(1)): diamond rounds archive or purge.
        if rng.random() < 1 / 3 and mode != "copy-only":
            diamond, key = True, rng.choice(["int", "composite"])
    large = rng.random() < 0.35
    batch = rng.randint(100, 400) if large else rng.randint(2, 8)
    p = {"mode": mode, "key": key, "dbfk": dbfk, "verification": verification, "batch_size": batch,
         "delete_batch_size": rng.randint(50, 300) if large else rng.randint(1, 6),
         "roots": rng.randint(150, 260), "diamond": diamond, "tables": tables}
    # Single-table rounds: drawn after every other draw, among the random rounds that are no diamond.
    if i >= len(COVER) and not diamond and rng.random() < 9 / 28:
        p["tables"] = 1
    # CHAOS_FORCE="mode=archive,key=composite,dbfk=1,batch_size=4": every round of that shape (to stress one kind).
    forced = set()
    for item in filter(None, os.environ.get("CHAOS_FORCE", "").split(",")):
        k, v = item.split("=", 1)
        if k not in p:
            raise ValueError(f"CHAOS_FORCE: unknown round parameter {k!r} (one of {', '.join(p)})")
        p[k] = v if isinstance(p[k], str) else bool(int(v)) if isinstance(p[k], bool) else int(v)
        forced.add(k)
    if p["tables"] not in (1, 3):
        raise ValueError(f"CHAOS_FORCE: tables={p['tables']}: 3 (r -> c -> g) or 1 (r only)")
    if p["tables"] == 1 and p["diamond"]:
        if "diamond" in forced and "tables" in forced:
            raise ValueError("CHAOS_FORCE: a diamond needs the three tables (tables=3)")
        if "diamond" in forced:  # the diamond forced: the round keeps its three tables
            p["tables"] = 3
        else:  # single table forced: a drawn diamond round is an ordinary one
            p["diamond"] = False
    return p


def kind_of(p):
    if p["tables"] == 1:  # no relations: dbfk declares nothing
        shape = "single table, "
        rels = ""
    else:
        shape = "DIAMOND " if p["diamond"] else ""
        rels = f"{'DB foreign keys' if p['dbfk'] else 'config-only relations'}, "
    return (f"{shape}{p['mode']}, {p['key']} keys, {rels}"
            f"{p['verification']}, batch {p['batch_size']}/{p['delete_batch_size']}")


class Chaos(unittest.TestCase):
    maxDiff = None

    def goarchive(self, sc, mode, cfg, env=None, kill_after=None):
        rc, out, err = run(BIN, [mode, "-c", cfg, "-j", "j", "--no-progress"], env=env, kill_after=kill_after)
        if VERBOSE:
            print(f"    {mode} env={env} kill_after={kill_after}: rc={rc}\n{tail(err, 4)}", file=sys.stderr,
                  flush=True)
        return rc, out, err

    def clean_run(self, sc, mode, cfg, log):
        """MODE to its end with the application stopped (rc 4: a killed run's locks are still being released)."""
        deadline = time.monotonic() + 60
        while True:
            rc, out, err = self.goarchive(sc, mode, cfg)
            log.append(f"final {mode}: rc={rc}")
            if rc != 4 or time.monotonic() > deadline:
                return rc, out, err
            time.sleep(1)

    def one_round(self, i):
        seed = round_seed(i)
        rng = random.Random(f"{seed}:{i}")
        p = round_params(i, rng)
        kind = kind_of(p)
        t0 = time.monotonic()
        schema = Schema(p["key"], p["dbfk"], p["diamond"], p["tables"])
        sc = Scenario(self, f"chaos{i}")
        for t in schema.TABLES:
            sc.both(schema.ddl(t))
        if os.environ.get("CHAOS_NO_PROOF"):  # a table of that name goarchive cannot use: no commit proof
            sc.src("CREATE TABLE goarchive_commits (not_a_token INT)")
        model = Model(schema)
        load(schema, model, sc.src_db, rng, p["roots"])
        cfg = sc.config({"j": schema.job()}, verification=p["verification"],
                        processing={"batch_size": p["batch_size"], "delete_batch_size": p["delete_batch_size"]})
        # Diamond rounds: the final clean runs take every root in one batch, so that roots joined by a cross-root g
        # meet (with small batches they may stay blocked for good, goarchive.toml(5)); the oracle then expects every
        # eligible root archived except those joined to a root that is not eligible (Model.blocked).
        final_cfg = cfg if not p["diamond"] else sc.config(
            {"j": schema.job()}, verification=p["verification"],
            processing={"batch_size": 100000, "delete_batch_size": p["delete_batch_size"]})
        app = App(model, sc.src_db, f"{seed}:{i}", threads=3)
        log = []
        first_conflict = []  # the runs up to the first that reported a conflict, with that run's log tail
        load_mode = p["mode"]
        app.start()
        kills = 0
        fired = collections.Counter()  # fault point -> SIGKILLs it gave in this round
        failures = []
        try:
            end = time.monotonic() + SECONDS
            durations = [0.5]  # seconds the uninterrupted runs took: the range of the timer kills
            first = True
            while first or time.monotonic() < end:
                if first:
                    # The first run dies at a fault point it must reach (its first pass: every eligible root is
                    # still there), the one of this mode that has killed least so far: over a run every point fires.
                    point = min(POINTS[load_mode], key=lambda x: POINTS_FIRED[x])
                    env, kill_after, how = {"GOARCHIVE_FAULT": f"{point}:1"}, None, f"{point}:1"
                elif rng.random() < 0.4:
                    point = rng.choice(POINTS[load_mode])
                    n = 1 if point == "after_locks" else rng.randint(1, 6)
                    env, kill_after, how = {"GOARCHIVE_FAULT": f"{point}:{n}"}, None, f"{point}:{n}"
                elif rng.random() < 0.85:
                    kill_after = round(rng.uniform(0.02, sorted(durations)[len(durations) // 2] * 1.1), 3)
                    env, how = None, f"SIGKILL after {kill_after}s"
                else:
                    env, kill_after, how = None, None, "no kill"
                t1 = time.monotonic()
                rc, out, err = self.goarchive(sc, load_mode, cfg, env=env, kill_after=kill_after)
                STATS["runs"] += 1
                log.append(f"{load_mode} ({how}): rc={rc}")
                if not first_conflict and "root(s) are in conflict" in out + err:
                    first_conflict = log[-8:] + ["  its last log lines:"]
                    first_conflict += ["    " + line for line in tail(err, 25).splitlines()]
                if first and rc != -9:
                    failures.append(f"GOARCHIVE_FAULT={how} did not kill the first {load_mode} run (rc={rc}): the "
                                    f"point was never reached\n{tail(err, 3)}")
                first = False
                if rc == -9:
                    kills += 1
                    STATS["kills"] += 1
                    STATS["kills_point" if env else "kills_timer"] += 1
                    if env:
                        fired[env["GOARCHIVE_FAULT"].split(":")[0]] += 1
                elif rc == 4:
                    STATS["rc4"] += 1
                    time.sleep(0.5)
                elif rc == 0:
                    durations.append(time.monotonic() - t1)
                    time.sleep(rng.uniform(0, 0.5))
                else:
                    STATS["rc1"] += 1
                    log.append("  " + tail(err, 1))
                    if len(RC1) < 5:
                        RC1.append(f"round {i}: {tail(err, 1)[:300]}")
        finally:
            app.finish()
        writes = sum(model.writes.values())
        app_errors = sum(v for k, v in app.errors.items() if k != "skipped")
        STATS["writes"] += writes
        STATS["skipped"] += app.errors["skipped"]
        STATS["app_errors"] += app_errors
        POINTS_FIRED.update(fired)
        # The round must have exercised what it claims: live writes, and kills that killed.
        min_writes = int(MIN_WRITES_PER_SECOND * SECONDS)
        if writes < min_writes:
            failures.append(f"only {writes} application writes committed in {SECONDS}s of load (at least {min_writes}"
                            f" expected; errors: {dict(app.errors)})")
        if app_errors >= max(writes, 1):
            failures.append(f"{app_errors} application writes failed and only {writes} committed: "
                            f"{dict(app.errors)}")
        if kills < MIN_KILLS or not fired:
            failures.append(f"{kills} SIGKILLs ({sum(fired.values())} at fault points): at least {MIN_KILLS}, one at "
                            "a fault point, expected")

        bad = collections.defaultdict(list)
        if p["mode"] == "copy-only":
            rc, out, err = self.clean_run(sc, "copy-only", final_cfg, log)
            # copy-only never deletes, so the source always holds the current version: a conflict is a failure.
            if rc != 0:
                failures.append(f"the final clean copy-only run ended rc={rc}:\n{tail(err, 3)}")
            b = check(schema, model, sc.src_db, sc.dst_db, "copy-only", kind, copy_only_round=True)
            b["registry"] += registry_failures(sc.job_schema)
            for k, v in b.items():
                bad[k] += [f"(after copy-only) {line}" for line in v]
            final_mode = "archive"
        else:
            final_mode = p["mode"]
        rc, out, err = self.clean_run(sc, final_mode, final_cfg, log)
        conflicts = conflict_roots(schema, sc.job_schema) if final_mode == "archive" else set()
        if rc != 0 and not (rc == 1 and conflicts and "are in conflict" in out):
            failures.append(f"the final clean {final_mode} run ended rc={rc}:\n{tail(err, 3)}")
            STATS["final_failed"] += 1
        # A kill between the delete's recorded decision and its source commit (the fault points there).
        ambiguous = any(("after_mark_deleting" in line or "before_delete_commit" in line) and "rc=-9" in line
                        for line in log)
        b = check(schema, model, sc.src_db, sc.dst_db, final_mode, kind, conflicts, ambiguous,
                  copy_only_round=p["mode"] == "copy-only")
        b["registry"] += registry_failures(sc.job_schema)
        for k, v in b.items():
            bad[k] += v
        for k in CATEGORIES + ("conflicts", "kept", "blocked", "only_version", "unarchived_diamond"):
            STATS[k] += len(bad.get(k, []))
        allowed = {k: bad.pop(k) for k in ALLOWED if k in bad}
        STATS["rounds"] += 1
        STATS["rounds_single"] += schema.tables == 1
        what = f"[CHAOS_SEED={seed} round {i}: {kind}]"
        summary = ", ".join(f"{k} {len(v)}" for k, v in bad.items() if v) or ("failed" if failures else "ok")
        if allowed:
            summary += " (" + ", ".join(f"{k} {len(v)}" for k, v in allowed.items()) + ": allowed, reported)"
        if failures:
            summary += "; " + "; ".join(f.splitlines()[0] for f in failures)
        res = {"round": i, "kind": kind, "writes": writes, "ops": dict(model.writes), "kills": kills,
               "points": dict(fired), "app_errors": app_errors,
               "failed": bool(failures or any(bad.values())), "summary": summary,
               "seconds": round(time.monotonic() - t0, 1)}
        RESULTS.append(res)
        print(f"  round {i}: {kind}: {writes} writes ({app_errors} failed), {kills} kills ({sum(fired.values())} at "
              f"{', '.join(sorted(fired)) or 'no fault point'}), {res['seconds']}s: {summary}", file=sys.stderr,
              flush=True)
        if res["failed"]:
            STATS["rounds_failed"] += 1
            text = "\n".join(failures)
            if any(bad.values()):
                text += "\n" + report(bad, what)
            text += "\n  goarchive runs (last 12): " + "\n    ".join([""] + log[-12:])
            if first_conflict:
                text += "\n  up to the first run that reported a conflict: " + "\n    ".join([""] + first_conflict)
            if os.environ.get("CHAOS_KEEP"):
                sc.cleanup = lambda: None  # keep the databases for a look
                text += f"\n  kept: source {sc.src_db}, destination {sc.dst_db}, registry {sc.job_schema}"
            return f"{what}\n{text}"
        sc.cleanup()
        return None

    def test_chaos(self):
        errors = []
        only = {int(x) for x in os.environ.get("CHAOS_ONLY", "").split(",") if x.strip()}
        for i in range(ROUNDS):
            if only and i not in only:
                continue
            e = self.one_round(i)
            if e:
                print(e, file=sys.stderr, flush=True)
                errors.append(e)
        self.assertFalse(errors, f"{len(errors)} of {ROUNDS} chaos rounds failed (CHAOS_SEED={SEED}):\n\n" +
                         "\n\n".join(errors))


class OracleSanity(unittest.TestCase):
    """The check is not blind: quiet archive, purge and copy-only rounds, then rows corrupted by hand in every table
    (lost, changed, duplicated or misplaced, orphaned), each reported."""

    def test_groups_join_through_a_chain(self):
        """The oracle's union-find keeps a chain of joins one group, also after a find halves the path."""
        groups = chaoskit.Groups()
        for a, b in ((1, 2), (2, 3), (3, 4), (7, 8)):
            groups.join(a, b)
        self.assertEqual({groups.find(x) for x in (1, 2, 3, 4)}, {groups.find(4)})
        self.assertEqual({groups.find(x) for x in (4, 3, 2, 1)}, {groups.find(1)})
        self.assertNotEqual(groups.find(1), groups.find(7))

    def test_corruption_is_reported(self):
        rng = random.Random(f"{SEED}:sanity")
        schema = Schema("composite", True)
        sc = Scenario(self, "chaossanity")
        for t in schema.TABLES:
            sc.both(schema.ddl(t))
        model = Model(schema)
        load(schema, model, sc.src_db, rng, 60)
        cfg = sc.config({"j": schema.job()}, processing={"batch_size": 7, "delete_batch_size": 3})
        app = App(model, sc.src_db, f"{SEED}:sanity", threads=2)
        app.start()
        time.sleep(1.5)
        app.finish()
        rc, out, err = run(BIN, ["archive", "-c", cfg, "-j", "j", "--no-progress"])
        self.assertEqual(rc, 0, err)
        clean = check(schema, model, sc.src_db, sc.dst_db, "archive", "sanity")
        self.assertFalse(any(clean.values()), report(clean, "a quiet archive"))
        cold = schema.cols["r"].index("cold")
        parents = {schema.parent_of("c", row) for row in model.rows["c"].values()}
        archived = sorted((k for k, row in model.rows["r"].items() if row[cold] == 1), key=lambda k: k not in parents)
        kept = [k for k, row in model.rows["r"].items() if row[cold] == 0]
        self.assertTrue(archived and kept)
        w = schema.kwhere("r")
        sc.dst(f"DELETE FROM g WHERE ({', '.join(schema.fk['g'])}) IN (SELECT {', '.join(schema.pk['c'])} FROM c "
               f"WHERE ({', '.join(schema.fk['c'])}) = ({', '.join(['%s'] * len(archived[0]))}))", archived[0])
        conn = gatest.connect("destination", sc.dst_db)
        with conn.cursor() as cur:
            cur.execute("SET foreign_key_checks = 0")
            cur.execute(f"DELETE FROM r WHERE {w}", archived[1])  # lost root, orphaned children in the destination
        conn.close()
        sc.dst(f"UPDATE r SET payload = 'corrupt' WHERE {w}", archived[2])  # stale
        row = model.rows["r"][kept[0]]
        sc.dst(f"INSERT INTO r ({', '.join(schema.cols['r'])}) VALUES ({', '.join(['%s'] * len(row))})", row)  # dup
        each = self.corrupt_each_table(sc, "destination", schema, {"r": set(archived[:3]) | {kept[0]}})
        bad = check(schema, model, sc.src_db, sc.dst_db, "archive", "sanity")
        print("\n" + report(bad, "hand-corrupted destination (expected findings)", limit=3), file=sys.stderr)
        for k in ("lost", "stale", "duplicated", "orphans"):
            self.assertTrue(bad.get(k), f"the check missed the {k} row: {dict(bad)}")
        self.assertTrue(any(str(archived[1]) in line for line in bad["lost"]), bad["lost"])
        self.assertTrue(any(str(kept[0]) in line for line in bad["duplicated"]), bad["duplicated"])
        self.assert_each_table_reported(bad, each)

    def quiet_round(self, tag, mode, key):
        """A short burst of application writes, then one clean MODE run; asserts the oracle finds nothing. Returns
        (schema, model, scenario, eligible root keys, root keys that are not eligible)."""
        rng = random.Random(f"{SEED}:sanity-{tag}")
        schema = Schema(key, False)
        sc = Scenario(self, f"chaossanity{tag}")
        for t in schema.TABLES:
            sc.both(schema.ddl(t))
        model = Model(schema)
        load(schema, model, sc.src_db, rng, 60)
        cfg = sc.config({"j": schema.job()}, processing={"batch_size": 7, "delete_batch_size": 3})
        app = App(model, sc.src_db, f"{SEED}:sanity-{tag}", threads=2)
        app.start()
        time.sleep(1.5)
        app.finish()
        self.assertGreater(sum(model.writes.values()), 0, "the application wrote nothing")
        rc, out, err = run(BIN, [mode, "-c", cfg, "-j", "j", "--no-progress"])
        self.assertEqual(rc, 0, err)
        clean = check(schema, model, sc.src_db, sc.dst_db, mode, "sanity")
        self.assertFalse(any(clean.values()), report(clean, f"a quiet {mode}"))
        self.assertEqual(registry_failures(sc.job_schema), [])
        cold = schema.cols["r"].index("cold")
        # eligible roots with children first: their c rows are the ones corrupted below
        parents = {schema.parent_of("c", row) for row in model.rows["c"].values()}
        eligible = sorted((k for k, row in model.rows["r"].items() if row[cold] == 1), key=lambda k: k not in parents)
        kept = sorted((k for k, row in model.rows["r"].items() if row[cold] == 0), key=lambda k: k not in parents)
        self.assertTrue(len(eligible) >= 3 and len(kept) >= 3)
        return schema, model, sc, eligible, kept

    def corrupt_each_table(self, sc, server, schema, avoid):
        """One row of every table on SERVER (none of AVOID's {table: keys}) changed by hand: the oracle must report
        each as stale, so it cannot skip a table. Returns {table: key}."""
        out = {}
        db, sql = (sc.src_db, sc.src) if server == "source" else (sc.dst_db, sc.dst)
        for t in schema.TABLES:
            pk = ", ".join(q(c) for c in schema.pk[t])
            keys = [tuple(r) for r in gatest.sql(server, f"SELECT {pk} FROM {q(db)}.{q(t)} ORDER BY {pk}")]
            out[t] = next(k for k in reversed(keys) if k not in avoid.get(t, ()))
            sql(f"UPDATE {q(t)} SET payload = %s WHERE {schema.kwhere(t)}", (f"corrupt-{t}", *out[t]))
        return out

    def assert_each_table_reported(self, bad, corrupted):
        for t, key in corrupted.items():
            self.assertTrue(any(line.startswith(f"{t} {key}:") and f"corrupt-{t}" in line for line in bad["stale"]),
                            f"the check missed the changed {t} row {key}: {dict(bad)}")

    def insert(self, sc, server, schema, t, row):
        sql = sc.src if server == "source" else sc.dst
        sql(f"INSERT INTO {t} ({', '.join(schema.cols[t])}) VALUES ({', '.join(['%s'] * len(row))})", row)

    def child_of(self, schema, model, rk):
        return next(k for k, row in sorted(model.rows["c"].items()) if schema.parent_of("c", row) == rk)

    def test_purge_corruption_is_reported(self):
        """Purge: a row that must stay lost from the source, a kept row changed there, an eligible root back in the
        source, a kept row copied to the destination: each reported."""
        schema, model, sc, eligible, kept = self.quiet_round("purge", "purge", "int")
        w = schema.kwhere
        lost = self.child_of(schema, model, kept[0])
        sc.src(f"DELETE FROM c WHERE {w('c')}", lost)  # lost (its g rows go along: no database foreign keys)
        sc.src(f"DELETE FROM g WHERE ({', '.join(schema.fk['g'])}) = ({', '.join(['%s'] * len(lost))})", lost)
        sc.src(f"UPDATE r SET payload = 'corrupt' WHERE {w('r')}", kept[1])  # stale
        self.insert(sc, "source", schema, "r", model.rows["r"][eligible[0]])  # not purged
        self.insert(sc, "destination", schema, "r", model.rows["r"][kept[2]])  # a second copy, in the destination
        each = self.corrupt_each_table(sc, "source", schema, {"r": {kept[1], eligible[0], kept[2]}, "c": {lost}})
        bad = check(schema, model, sc.src_db, sc.dst_db, "purge", "sanity")
        print("\n" + report(bad, "hand-corrupted purge (expected findings)", limit=3), file=sys.stderr)
        self.assertTrue(any(str(lost) in line for line in bad["lost"]), dict(bad))
        self.assertTrue(any(str(kept[1]) in line and "corrupt" in line for line in bad["stale"]), dict(bad))
        self.assertTrue(any(str(eligible[0]) in line for line in bad["unarchived"]), dict(bad))
        self.assertTrue(any(str(kept[2]) in line for line in bad["misplaced"]), dict(bad))
        self.assert_each_table_reported(bad, each)

    def test_copy_only_corruption_is_reported(self):
        """Copy-only: a source row lost, an archived copy lost, an archived copy gone stale, a row that is not
        eligible copied, a row the application deleted still archived, and an orphaned copy: each reported."""
        schema, model, sc, eligible, kept = self.quiet_round("copy", "copy-only", "composite")
        w = schema.kwhere
        sc.src(f"DELETE FROM r WHERE {w('r')}", eligible[0])  # lost from the source (its copy stays)
        gone = self.child_of(schema, model, eligible[1])
        sc.dst(f"DELETE FROM c WHERE {w('c')}", gone)  # an archived copy lost (its g copies orphaned)
        sc.dst(f"UPDATE r SET payload = 'corrupt' WHERE {w('r')}", eligible[2])  # stale copy
        self.insert(sc, "destination", schema, "r", model.rows["r"][kept[0]])  # not eligible, copied
        deleted = next(iter(model.deleted["c"]), None)
        each = self.corrupt_each_table(sc, "destination", schema, {"r": {eligible[0], eligible[2], kept[0]},
                                                                   "c": {gone}})
        bad = check(schema, model, sc.src_db, sc.dst_db, "copy-only", "sanity")
        print("\n" + report(bad, "hand-corrupted copy-only (expected findings)", limit=3), file=sys.stderr)
        self.assertTrue(any(str(eligible[0]) in line for line in bad["lost"]), dict(bad))
        self.assertTrue(any(str(gone) in line for line in bad["uncopied"]), dict(bad))
        self.assertTrue(any(str(eligible[2]) in line and "corrupt" in line for line in bad["stale"]), dict(bad))
        self.assertTrue(any(str(kept[0]) in line for line in bad["misplaced"]), dict(bad))
        self.assert_each_table_reported(bad, each)
        if model.rows["g"] and any(schema.parent_of("g", row) == gone for row in model.rows["g"].values()):
            self.assertTrue(bad["orphans"], dict(bad))
        if deleted is not None:  # a stale copy of a deleted row: put one back and it is reported
            row = next(iter(model.rows["c"].values()))
            self.insert(sc, "destination", schema, "c", (*deleted, *row[len(deleted):]))
            bad = check(schema, model, sc.src_db, sc.dst_db, "copy-only", "sanity")
            self.assertTrue(any(str(deleted) in line and "deleted by the application" in line
                                for line in bad["stale"]), dict(bad))

    def test_diamond_corruption_is_reported(self):
        """Diamond: a quiet archive round holds blocked roots (joined to a root that is not eligible), which the
        check exempts; a blocked root archived by hand and a g orphaned by its second foreign key are reported."""
        rng = random.Random(f"{SEED}:sanity-diamond")
        schema = Schema("int", False, diamond=True)
        sc = Scenario(self, "chaossanityd")
        for t in schema.TABLES:
            sc.both(schema.ddl(t))
        model = Model(schema)
        load(schema, model, sc.src_db, rng, 80)
        cfg = sc.config({"j": schema.job()}, processing={"batch_size": 100000, "delete_batch_size": 5})
        rc, out, err = run(BIN, ["archive", "-c", cfg, "-j", "j", "--no-progress"])
        self.assertEqual(rc, 0, err)
        clean = check(schema, model, sc.src_db, sc.dst_db, "archive", "sanity")
        blocked = clean.pop("blocked", [])
        self.assertTrue(blocked, "the seed made no root joined to a root that is not eligible")
        self.assertFalse(any(clean.values()), report(clean, "a quiet diamond archive"))
        # a blocked root moved to the destination by hand: misplaced
        rk = sorted(model.blocked())[0]
        row = model.rows["r"][rk]
        sc.dst(f"INSERT INTO r ({', '.join(schema.cols['r'])}) VALUES ({', '.join(['%s'] * len(row))})", row)
        sc.src(f"DELETE FROM r WHERE {schema.kwhere('r')}", rk)
        # an archived g whose second parent is gone from the destination: an orphan by the second foreign key
        gk, grow = next((k, v) for k, v in sorted(dst_rows(schema, sc).items()))
        sc.dst("UPDATE g SET r2_id = 999999 WHERE id = %s", gk)
        bad = check(schema, model, sc.src_db, sc.dst_db, "archive", "sanity")
        print("\n" + report(bad, "hand-corrupted diamond (expected findings)", limit=3), file=sys.stderr)
        self.assertTrue(any(str(rk) in line for line in bad["misplaced"]), dict(bad))
        self.assertTrue(any("without its r" in line and str(gk) in line for line in bad["orphans"]), dict(bad))


def dst_rows(schema, sc):
    return chaoskit.table_rows(schema, "destination", sc.dst_db, "g")


if __name__ == "__main__":
    unittest.main()
