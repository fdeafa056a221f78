"""Helpers for the fault campaign (test_faults.py): its own servers (campaignkit), the row ledger behind the closing
table, and row-lock blockers that hold goarchive inside a transaction.

The campaign stops and restarts servers, so it never touches the shared test servers: it starts its own source and
destination (GOARCHIVE_TEST_DIR=/tmp/goarchive-faults, ports 25306/25308) and points the harness (gatest reads
GA_SOURCE_PORT/GA_DEST_PORT from os.environ at every call) at them.
"""

import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import campaignkit  # noqa: E402
import gatest  # noqa: E402
import pymysql  # noqa: E402

# 23306-23308: the shared test servers; 22306-22308: the type-fidelity suite's (test_type_fidelity.py).
OWN = campaignkit.OwnServers("FAULT", "/tmp/goarchive-faults", 25306,
                             forbidden={"23306", "23307", "23308", "22306", "22307", "22308"},
                             refusal="the fault campaign must not run on the shared servers' ports")
SERVER_ENV = OWN.env
servers = OWN.servers


def start(path):
    """The campaign's servers started and the binary at PATH pinned (returned), for the whole campaign (scenario.BIN,
    lockkit.BIN too)."""
    import scenario
    import lockkit
    dest = OWN.start(path)
    scenario.BIN = lockkit.BIN = dest
    return dest


# -- the ledger behind the closing table ----------------------------------------------------------------------------
STATS = collections.Counter()
EVENTS = []  # one line per injected fault, printed with the closing table when FAULT_VERBOSE is set


def note(line):
    EVENTS.append(line)
    if os.environ.get("FAULT_VERBOSE"):
        print("  " + line, file=sys.stderr, flush=True)


def closing_table(seed):
    s = STATS
    rows = [
        ("faults injected", s["faults_injected"]),
        ("  SIGKILLs (archive / copy-only / purge)", f"{s['kills_archive']} / {s['kills_copy-only']} / "
                                                      f"{s['kills_purge']}"),
        ("  SIGKILLs at a fault point / after a random delay", f"{s['kills_at_point']} / {s['kills_by_timer']}"),
        ("  server stops, lock-session kills, proxy cuts", f"{s['server_stops']}, {s['lock_kills']}, {s['proxy_cuts']}"),
        ("  lock wait timeouts, conflicting rows", f"{s['lock_wait_timeouts']}, {s['conflicts']}"),
        ("faults survived", s["faults_survived"]),
        ("overlaps tried", s["overlaps_tried"]),
        ("  starts refused with exit 4", s["refused_4"]),
        ("rows lost", s["rows_lost"]),
        ("rows duplicated", s["rows_duplicated"]),
        ("orphans", s["orphans"]),
        ("rows changed", s["rows_changed"]),
        ("rows misplaced (not where the job puts them)", s["rows_misplaced"]),
        ("invariant checks (row checks)", f"{s['checks']} ({s['row_checks']})"),
    ]
    return "\n".join(campaignkit.closing_table(f"closing table (FAULT_SEED={seed})", rows))


# -- rows -------------------------------------------------------------------------------------------------------------
class Tree:
    """A job's tables (parent-first) and relations (child, [fk cols], parent, [referenced cols])."""

    def __init__(self, root, tables, relations):
        self.root = root
        self.tables = list(tables)
        self.relations = list(relations)


def table_rows(server, db, table):
    """{pk tuple: row tuple} of DB.TABLE on SERVER (every column, in table order)."""
    return campaignkit.rows_by_key(server, db, table, gatest.columns(server, db, table),
                                   gatest.primary_key(server, db, table))


def subtree(server, db, tree, snapshot, where):
    """{table: set of keys} of the rows of the trees whose roots match WHERE (in SNAPSHOT, DB on SERVER)."""
    q = gatest.quote_ident
    pk = gatest.primary_key(server, db, tree.root)
    keys = {tuple(r) for r in gatest.sql(server, f"SELECT {', '.join(q(c) for c in pk)} FROM {q(db)}.{q(tree.root)} "
                                                 f"WHERE {where}")}
    out = {t: set() for t in tree.tables}
    out[tree.root] = keys
    for child, fk, parent, refs in tree.relations:
        pcols = gatest.columns(server, db, parent)
        ccols = gatest.columns(server, db, child)
        ref_idx = [pcols.index(r) for r in refs]
        fk_idx = [ccols.index(f) for f in fk]
        values = {tuple(snapshot[parent][k][i] for i in ref_idx) for k in out[parent]}
        out[child] = {k for k, row in snapshot[child].items() if tuple(row[i] for i in fk_idx) in values}
    return out


def expectations(snapshot, **where_to):
    """{table: {key: place}}: every row of SNAPSHOT "src" unless one of the sets in WHERE_TO ({place: {table: keys}})
    names it. Places: src (stays), dst (archived: exactly one destination), both (copied: source and one
    destination), gone (purged: neither)."""
    exp = {t: {k: "src" for k in rows} for t, rows in snapshot.items()}
    for place, sets in where_to.items():
        for t, keys in sets.items():
            for k in keys:
                exp[t][k] = place
    return exp


def check(test, src_db, dst_dbs, tree, snapshot, expect, final, what=""):
    """The invariant, counted into STATS: every original row where its job puts it (FINAL) or somewhere it may be
    in the middle of that job (not FINAL), unchanged; no duplicate key in any destination; no orphan anywhere.
    Asserts that nothing was lost, duplicated, orphaned, changed or misplaced."""
    q = gatest.quote_ident
    # An empty snapshot (taken before the data was loaded, or of the wrong tables) would check nothing.
    test.assertTrue(any(snapshot.get(t) for t in tree.tables), f"the snapshot holds no row of {tree.tables}")
    bad = collections.Counter()
    samples = []

    def fail(kind, msg):
        bad[kind] += 1
        if len(samples) < 8:
            samples.append(f"{kind}: {msg}")

    for t in tree.tables:
        src = table_rows("source", src_db, t)
        dsts = [table_rows("destination", d, t) for d in dst_dbs]
        for key, row in snapshot[t].items():
            STATS["row_checks"] += 1
            place = expect[t][key]
            in_src = key in src
            n_dst = sum(key in d for d in dsts)
            for here in [src] + dsts:
                if key in here and here[key] != row:
                    fail("rows_changed", f"{t} {key}: {here[key]} != {row}")
            if place in ("src", "dst", "both") and not in_src and n_dst == 0:
                fail("rows_lost", f"{t} {key} (expected {place}) is in neither server")
                continue
            if n_dst > 1:
                fail("rows_duplicated", f"{t} {key} is in {n_dst} destinations")
            if place == "src":
                if n_dst:
                    fail("rows_misplaced", f"{t} {key} was copied though its job leaves it in the source")
                elif not in_src:
                    fail("rows_lost", f"{t} {key} left the source")
            elif place == "gone":
                if n_dst:
                    fail("rows_misplaced", f"{t} {key} purged row is in a destination")
                elif final and in_src:
                    fail("rows_misplaced", f"{t} {key} was not purged")
            elif place == "both":
                if not in_src:
                    fail("rows_lost", f"{t} {key} left the source (copy-only)")
                elif final and n_dst == 0:
                    fail("rows_misplaced", f"{t} {key} was not copied")
            elif place == "dst" and final:
                if in_src and n_dst:
                    fail("rows_duplicated", f"{t} {key} is in the source and a destination")
                elif in_src:
                    fail("rows_misplaced", f"{t} {key} was not archived")
        for i, here in enumerate([src] + dsts):
            for key in here:
                if key not in snapshot[t]:
                    fail("rows_misplaced", f"{t} {key} appeared on {'source' if i == 0 else dst_dbs[i - 1]}")
        pk = gatest.primary_key("destination", dst_dbs[0], t)
        for d in dst_dbs:
            n, distinct = gatest.sql("destination", f"SELECT COUNT(*), COUNT(DISTINCT {', '.join(q(c) for c in pk)}) "
                                                    f"FROM {q(d)}.{q(t)}")[0]
            if n != distinct:
                fail("rows_duplicated", f"{d}.{t}: {n - distinct} duplicate keys")
    for child, fk, parent, refs in tree.relations:
        for server, db in [("source", src_db)] + [("destination", d) for d in dst_dbs]:
            n = len(campaignkit.orphans(server, db, child, fk, parent, refs, fk))
            if n:
                for _ in range(n):
                    fail("orphans", f"{n} {child} rows without their {parent} in {db}")
    STATS["checks"] += 1
    for k in ("rows_lost", "rows_duplicated", "orphans", "rows_changed", "rows_misplaced"):
        STATS[k] += bad[k]
    test.assertFalse(bad, f"invariant broken {what}: {dict(bad)}\n  " + "\n  ".join(samples))


# -- blockers: hold goarchive inside a transaction ------------------------------------------------------------------
class Blocker:
    """A session on SERVER with an open transaction that ran STATEMENTS ((sql, args) pairs: row locks that a goarchive statement will
    wait for); release() rolls it back."""

    def __init__(self, server, statements, db=None):
        self.conn = gatest.connect(server, db, autocommit=False)
        with self.conn.cursor() as cur:
            for stmt, args in statements:
                cur.execute(stmt, args)

    def release(self):
        try:
            self.conn.rollback()
        except Exception:
            pass
        try:
            self.conn.close()
        except Exception:
            pass


def lock_waits(server):
    """Number of goarchive transactions waiting for a row lock on SERVER. Poll it at most every ~0.3 s: the server
    refreshes INNODB_TRX only when it was not read for 0.1 s, so a faster poll keeps reading a stale copy."""
    return gatest.sql(server, "SELECT COUNT(*) FROM information_schema.INNODB_TRX t JOIN "
                              "information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id "
                              "WHERE t.trx_state = 'LOCK WAIT' AND p.INFO NOT LIKE '%information_schema%'")[0][0]


def server_up(server):
    try:
        gatest.sql(server, "SELECT 1")
        return True
    except pymysql.err.MySQLError:
        return False
