"""Helpers for the randomized live-application test (test_chaos.py): its own servers (campaignkit), the round's
schema (three tables r -> c -> g with integer, composite or VARCHAR keys, with or without database foreign keys, or
the single table r: a job without relations), the application threads and their oracle (the model of every row's
latest committed version), goarchive under SIGKILL (campaignkit), and the closing check.

The model is location-independent: {table: {key: row}} of what the rows *are* (initial data plus every write the
application committed with affected rows >= 1, each row read back inside its own transaction, so the model holds the
exact values the server stores), plus {table: set of deleted keys}. goarchive moving a row is not a write.
"""

import collections
import datetime
import os
import random
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import campaignkit  # noqa: E402
import gatest  # noqa: E402
import pymysql  # noqa: E402

q = gatest.quote_ident

# 29306-29308 are a second chaos instance's (CHAOS_SOURCE_PORT=29306 ...), beside the default 26306-26308.
FORBIDDEN_PORTS = {str(p) for base in (23306, 24306, 25306) for p in range(base, base + 3)} | \
    {str(p) for base in (27306, 28306, 30306) for p in range(base, base + 3)} | \
    {"33306", "33307", "33308"}  # the type-fidelity suite's (test_type_fidelity.py)
OWN = campaignkit.OwnServers("CHAOS", "/tmp/ga-chaos", 26306, forbidden=FORBIDDEN_PORTS,
                             refusal="the chaos test must not run on other suites' ports")
SERVER_ENV = OWN.env
servers = OWN.servers
start = OWN.start  # the servers started, the binary pinned
def run(bin_path, args, env=None, kill_after=None, timeout=180):
    """goarchive ARGS, SIGKILLed KILL_AFTER seconds after its start if still running: (rc, out, err). With CHAOS_LOG
    set, the whole stderr of every run is appended to that file."""
    rc, out, err = campaignkit.run(bin_path, args, env=env, kill_after=kill_after, timeout=timeout)
    if os.environ.get("CHAOS_LOG"):
        with open(os.environ["CHAOS_LOG"], "a") as f:
            f.write(f"==== {' '.join(args)} env={env} kill_after={kill_after} rc={rc}\n{err}")
    return rc, out, err


tail = campaignkit.tail

STATS = collections.Counter()

# Fault points of the Debug build per mode (lib/util/fault.cpp), as the fault campaign uses them.
POINTS = {
    "archive": ["after_locks", "before_copy_commit", "after_copy_commit", "after_verify", "after_mark_deleting",
                "before_delete_commit", "after_delete_commit", "after_batch"],
    "copy-only": ["after_locks", "before_copy_commit", "after_copy_commit", "after_verify", "after_batch"],
    "purge": ["after_locks", "before_delete_commit", "after_delete_commit", "after_batch"],
    # restore (lib/pipeline/restore.cpp): every batch passes these; the archive side's removal is remover.cpp's
    "restore": ["after_locks", "after_read", "after_verify", "after_restore_claim", "before_copy_commit",
                "after_copy_commit", "delete_start", "after_locked_read", "before_delete_commit",
                "after_delete_commit", "after_batch"],
}
# Points a restore passes only when it finishes a batch a killed run left unfinished (Restore::recover).
RESTORE_RECOVERY_POINTS = ["recovery_adopted", "before_adopt_commit"]


# -- the round's schema ---------------------------------------------------------------------------------------------
class Schema:
    """Tables r (root) -> c (child of r) -> g (child of c); KEY is int | composite | varchar; DBFK: whether the
    database declares the foreign keys (ON UPDATE CASCADE) or the relations exist in the config only.

    TABLES=1: the single table r (a job with no relations: the engine's single-table path); c and g do not exist
    (TABLES, PARENT, CHILD name r only), DBFK then declares nothing.

    DIAMOND: g also has a second parent, r itself (columns r2_*, a second relation {g, parent r}): g's primary
    path is r -> c -> g, its second one r -> g. Usually g.r2 is the root of g's c; when it is another root the
    two roots are joined (a cross-root diamond): they move together in one batch or stay (goarchive(1))."""

    TABLES = ["r", "c", "g"]
    PARENT = {"c": "r", "g": "c"}
    CHILD = {"r": "c", "c": "g"}

    def __init__(self, key, dbfk, diamond=False, tables=3):
        if tables not in (1, 3):
            raise ValueError(f"tables={tables}: the chaos schema has 3 tables (r -> c -> g) or 1 (r)")
        if tables == 1 and diamond:
            raise ValueError("a diamond needs the three tables (tables=3)")
        self.key, self.dbfk, self.diamond, self.tables = key, dbfk, diamond, tables
        if tables == 1:  # instance attributes: the class's three-table ones stay for tables=3
            self.TABLES, self.PARENT, self.CHILD = ["r"], {}, {}
        self.cols = {}
        self.pk = {}
        self.fk = {}
        self.fk2 = {}  # diamond: g's columns referencing r (its second parent)
        self._types = {}
        for t in self.TABLES:
            pk = self._keycols("")
            fk = self._keycols(self.PARENT[t] + "_") if t in self.PARENT else []
            fk2 = self._keycols("r2_") if diamond and t == "g" else []
            data = (["cold"] if t == "r" else []) + ["v", "payload", "amt"]
            self.pk[t] = [c for c, _ in pk]
            self.fk[t] = [c for c, _ in fk]
            self.fk2[t] = [c for c, _ in fk2]
            self.cols[t] = [c for c, _ in pk] + [c for c, _ in fk] + [c for c, _ in fk2] + data
            self._types.update({(t, c): ty for c, ty in pk + fk + fk2})
        self.where = "cold = 1"

    def _keycols(self, prefix):
        if self.key == "int":
            return [(prefix + "id", "INT NOT NULL")]
        if self.key == "composite":
            return [(prefix + "ka", "INT NOT NULL"), (prefix + "kb", "INT NOT NULL")]
        return [(prefix + "k", "VARCHAR(40) NOT NULL")]

    def keyval(self, n):
        """The key tuple of number N (unique per table; never reused)."""
        if self.key == "int":
            return (n,)
        if self.key == "composite":
            return (n % 7, n)  # the same first part for many roots: pagination must walk (ka, kb)
        return (f"k{n:06d}'é\\",)

    def ddl(self, t):
        defs = [f"{q(c)} {self._types[(t, c)]}" for c in self.pk[t] + self.fk[t] + self.fk2[t]]
        if t == "r":
            defs.append("cold TINYINT NOT NULL")
        defs += ["v BIGINT NOT NULL", "payload VARCHAR(100) NULL", "amt DECIMAL(12,3) NULL",
                 f"PRIMARY KEY ({', '.join(q(c) for c in self.pk[t])})"]
        if t == "r":
            defs.append("KEY (cold)")
        if self.fk[t]:
            defs.append(f"KEY ({', '.join(q(c) for c in self.fk[t])})")
            if self.dbfk:
                p = self.PARENT[t]
                defs.append(f"FOREIGN KEY ({', '.join(q(c) for c in self.fk[t])}) REFERENCES {q(p)} "
                            f"({', '.join(q(c) for c in self.pk[p])}) ON UPDATE CASCADE")
        if self.fk2[t]:
            defs.append(f"KEY ({', '.join(q(c) for c in self.fk2[t])})")
            if self.dbfk:
                defs.append(f"FOREIGN KEY ({', '.join(q(c) for c in self.fk2[t])}) REFERENCES r "
                            f"({', '.join(q(c) for c in self.pk['r'])}) ON UPDATE CASCADE")
        return f"CREATE TABLE {q(t)} ({', '.join(defs)}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"

    def job(self):
        def one(cols):
            return cols[0] if len(cols) == 1 else cols
        if self.tables == 1:
            return {"root_table": "r", "where": self.where}  # no relations: the single-table job
        rels = [{"table": "c", "foreign_key": one(self.fk["c"])},
                {"table": "g", "parent": "c", "foreign_key": one(self.fk["g"])}]
        if self.diamond:
            rels.append({"table": "g", "parent": "r", "foreign_key": one(self.fk2["g"])})
        return {"root_table": "r", "where": self.where, "relations": rels}

    def relations(self):
        """(child, fk columns, parent, referenced columns) of every relation, the diamond's second one included."""
        out = [(t, self.fk[t], self.PARENT[t], self.pk[self.PARENT[t]]) for t in self.TABLES if t in self.PARENT]
        if self.diamond:
            out.append(("g", self.fk2["g"], "r", self.pk["r"]))
        return out

    def eligible_row(self, row):
        """Whether root ROW (a model row of r) matches the job's `where`."""
        return row[self.cols["r"].index("cold")] == 1

    def key_of(self, t, row):
        return tuple(row[: len(self.pk[t])])

    def parent_of(self, t, row):
        n = len(self.pk[t])
        return tuple(row[n: n + len(self.fk[t])])

    def parent2_of(self, t, row):
        """Diamond: the r key g's second foreign key names (None for other tables)."""
        if not self.fk2[t]:
            return None
        n = len(self.pk[t]) + len(self.fk[t])
        return tuple(row[n: n + len(self.fk2[t])])

    def kwhere(self, t, cols=None):
        return " AND ".join(f"{q(c)} = %s" for c in (cols or self.pk[t]))

    def select(self, t):
        return f"SELECT {', '.join(q(c) for c in self.cols[t])} FROM {q(t)}"


# -- partitioned rounds: the table and its `where` -------------------------------------------------------------------
# The root table r of a partitioned round (test_chaos.py, partition_round) is an events table: PRIMARY KEY (id,
# created), RANGE COLUMNS(created) in monthly partitions p2026_01 .. p2026_08 and pmax (MAXVALUE), no relations, so
# goarchive's partition path takes every partition wholly inside `where` and the row path the rest, in one run
# (goarchive(1) PARTITIONS). `where` is "created < CUTOFF AND cold = 1"; the round moves CUTOFF on through
# PART_CUTOFFS like a nightly job's cutoff (never back: a row archived under an earlier cutoff stays eligible), each
# leaving the partitions before its month whole (unless a row in them has cold = 0) and half of its own month to the
# row path. The archive's r is the same table unpartitioned.
PART_MONTHS = 8
PART_CUTOFFS = ["2026-02-15", "2026-03-15", "2026-04-15", "2026-05-15", "2026-06-15", "2026-07-15", "2026-08-15"]
PART_START = datetime.date(2026, 1, 1)
PART_OLD_END = datetime.date.fromisoformat(PART_CUTOFFS[-1])  # rows before it are "old": inside some cutoff
PART_END = datetime.date(2026, 10, 1)  # the data's dates are before it (September lands in pmax)
PART_POINTS = {  # the partition path's fault points each mode passes (lib/pipeline/partition_path.cpp)
    "archive": ["partition_detaching", "partition_after_detach", "partition_after_prove",
                "partition_before_copy_commit", "partition_after_copy_commit", "partition_copied",
                "partition_after_drop"],
    "purge": ["partition_detaching", "partition_after_detach", "partition_after_prove", "partition_copied",
              "partition_after_drop"],
}


def part_bounds(name):
    """(first day, first day after) of monthly partition NAME (p2026_03); None for pmax."""
    if not re.fullmatch(r"p\d{4}_\d{2}", name):
        return None
    y, m = int(name[1:5]), int(name[6:8])
    return datetime.date(y, m, 1), datetime.date(y + m // 12, m % 12 + 1, 1)


def part_day(rng, lo, hi):
    """A random day D, LO <= D < HI."""
    return lo + datetime.timedelta(days=rng.randrange(max((hi - lo).days, 1)))


class PartSchema(Schema):
    """The partitioned round's single table r (see above); CUTOFF is the job's current `where` cutoff, and the
    oracle's (eligible_row) once the final run is done."""

    def __init__(self, cutoff=PART_CUTOFFS[0]):  # noqa: the three-table layout of Schema does not apply
        self.key, self.dbfk, self.diamond, self.tables = "partitioned", False, False, 1
        self.TABLES, self.PARENT, self.CHILD = ["r"], {}, {}
        self.pk = {"r": ["id", "created"]}
        self.fk, self.fk2 = {"r": []}, {"r": []}
        self.cols = {"r": ["id", "created", "cold", "v", "payload", "amt"]}
        self._types = {("r", "id"): "INT NOT NULL", ("r", "created"): "DATE NOT NULL"}
        self.cutoff = cutoff

    @property
    def where(self):
        return f"created < '{self.cutoff}' AND cold = 1"

    def keyval(self, n):
        return (n,)  # the id only: the application picks each row's date (PartApp)

    def eligible_row(self, row):
        return row[2] == 1 and row[1] < datetime.date.fromisoformat(self.cutoff)

    def ddl(self, t, partitioned=True):
        cols = ("id INT NOT NULL, created DATE NOT NULL, cold TINYINT NOT NULL, v BIGINT NOT NULL, payload "
                "VARCHAR(100) NULL, amt DECIMAL(12,3) NULL, PRIMARY KEY (id, created), KEY (created)")
        text = f"CREATE TABLE r ({cols}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        if not partitioned:
            return text
        parts = []
        for m in range(1, PART_MONTHS + 1):
            lo, hi = part_bounds(f"p2026_{m:02d}")
            parts.append(f"PARTITION p2026_{m:02d} VALUES LESS THAN ('{hi}')")
        return f"{text} PARTITION BY RANGE COLUMNS(created) ({', '.join(parts)}, PARTITION pmax VALUES LESS THAN " \
               "(MAXVALUE))"

    def job(self):
        return {"root_table": "r", "where": self.where}


def payload(rng, tag):
    return f"{tag}-{rng.randrange(10 ** 6)}-" + rng.choice(["", "ü", "😀", "a'b", "x\\y", "日本", " "])


def amount(rng):
    return None if rng.random() < 0.1 else f"{rng.randrange(10 ** 7)}.{rng.randrange(1000):03d}"


# -- the model (oracle) ---------------------------------------------------------------------------------------------
class Groups:
    """Union-find over roots: roots joined by a row (a diamond's g) form one group."""

    def __init__(self):
        self.up = {}

    def find(self, x):
        """The group of x (path halving). Not `x = up[x] = ...`: Python assigns x first and then up[new x], which
        made a grandparent its own root and split groups (a quiet diamond round then reported roots goarchive
        rightly kept as unexplained)."""
        up = self.up
        while up.get(x, x) != x:
            up[x] = up.get(up[x], up[x])
            x = up[x]
        return x

    def join(self, a, b):
        self.up[self.find(a)] = self.find(b)


class Model:
    def __init__(self, schema):
        self.s = schema
        self.rows = {t: {} for t in schema.TABLES}
        self.deleted = {t: set() for t in schema.TABLES}
        self.touched_roots = set()  # root keys (any version) an application write touched, incl. its tree
        self.touches = collections.Counter()  # root key -> application writes that touched it (restore rounds)
        self.lock = threading.Lock()
        self.next = {t: 1 for t in schema.TABLES}
        self.writes = collections.Counter()
        self.last = {}  # (table, key) -> the last application write that changed, created or deleted the row

    def why(self, t, key):
        return f" [last write: {self.last.get((t, key), 'none (initial row)')}]"

    def fresh(self, t):
        with self.lock:
            n = self.next[t]
            self.next[t] += 1
        return self.s.keyval(n)

    def pick(self, rng, t):
        with self.lock:
            keys = self.rows[t]
            if not keys:
                return None
            return rng.choice(list(keys))

    def root_of(self, t, key):
        """The root key of row KEY of T in the model (None when a parent is missing in the model)."""
        while t != "r":
            row = self.rows[t].get(key)
            if row is None:
                return None
            key, t = self.s.parent_of(t, row), self.s.PARENT[t]
        return key if key in self.rows["r"] else None

    def roots_of(self, t, key):
        """Every root row KEY of T belongs to: its primary-path root and, for a diamond g, its second parent."""
        out = {self.root_of(t, key)}
        row = self.rows[t].get(key)
        if row is not None and self.s.parent2_of(t, row) is not None:
            out.add(self.s.parent2_of(t, row))
        return {r for r in out if r is not None and r in self.rows["r"]}

    def blocked(self):
        """Diamond: {eligible root: reason} of the eligible roots the rule keeps in the source. Roots joined by a g
        (its c under one root, its second parent another) form groups; a group holding a root that is not eligible
        (or a g whose parent is missing in the model) stays whole: its eligible roots are blocked. A final run whose
        batch holds every eligible root lets every other group meet, so nothing else may stay."""
        if not self.s.diamond:
            return {}
        cold = self.s.cols["r"].index("cold")
        groups = Groups()
        find = groups.find

        bad = {}  # group member -> the reason the group stays
        for gk, row in self.rows["g"].items():
            a, b = self.root_of("g", gk), self.s.parent2_of("g", row)
            b = b if b in self.rows["r"] else None
            if a is None or b is None:
                for r in (a, b):
                    if r is not None:
                        bad.setdefault(r, f"g {gk} has a parent missing in the model")
                continue
            if a != b:
                groups.join(a, b)
                for x, y in ((a, b), (b, a)):
                    if self.rows["r"][y][cold] != 1:
                        bad.setdefault(x, f"g {gk} joins it to root {y}, which is not eligible")
        stay = {}
        for r, why in bad.items():
            stay.setdefault(find(r), f"root {r}: {why}")
        out = {}
        for r, row in self.rows["r"].items():
            if row[cold] == 1 and find(r) in stay:
                out[r] = stay[find(r)]
        return out


# -- the application ------------------------------------------------------------------------------------------------
class Skip(Exception):
    """The write does not apply (its row or its parent is gone): rolled back, not logged."""


class App:
    """Application threads writing to the source database; each write its own transaction; the model learns only
    writes that committed with affected rows >= 1."""

    OPS = {"upd_root": 6, "upd_child": 5, "upd_grandchild": 3, "ins_child": 5, "ins_grandchild": 3, "del_child": 3,
           "del_grandchild": 2, "move_child": 4, "move_grandchild": 2, "new_root_cold": 2, "new_root_hot": 2,
           "flip_where": 4, "rekey_root": 2, "rekey_child": 2}
    # The single-table shape (Schema.tables == 1): only what makes sense for r, and roots deleted too.
    OPS_SINGLE = {"upd_root": 6, "new_root_cold": 2, "new_root_hot": 2, "flip_where": 4, "rekey_root": 2,
                  "del_root": 3}

    def __init__(self, model, db, seed, threads=3, pause=0.01):
        self.m, self.s, self.db = model, model.s, db
        self.ops = self.OPS_SINGLE if self.s.tables == 1 else self.OPS
        self.seed, self.nthreads, self.pause = seed, threads, pause
        self.stop = threading.Event()
        self.threads = []
        self.errors = collections.Counter()
        self.crash = []
        self.held = threading.Event()  # set: the threads finish their write and wait (hold / resume)
        self.idle = 0  # threads waiting while held
        self.idle_cv = threading.Condition()

    def start(self):
        for i in range(self.nthreads):
            th = threading.Thread(target=self._loop, args=(i,), daemon=True)
            th.start()
            self.threads.append(th)

    def hold(self, timeout=30):
        """Every thread finishes the write it is in (its commit, or its rollback) and waits: no commit is in flight,
        so a source restart cannot make one ambiguous (committed on the server, an error to the application, and
        so missing from the model). Writes resume with resume(); each thread then reconnects."""
        self.held.set()
        deadline = time.monotonic() + timeout
        with self.idle_cv:
            while self.idle < sum(th.is_alive() for th in self.threads):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the application did not stop writing within {timeout}s "
                                         f"({self.idle} of {self.nthreads} threads idle)")
                self.idle_cv.wait(min(left, 0.1))

    def resume(self):
        self.held.clear()

    def finish(self):
        self.stop.set()
        self.held.clear()
        for th in self.threads:
            th.join(60)
        if self.crash:
            raise AssertionError("application thread crashed:\n" + "\n".join(self.crash))

    def _connect(self):
        conn = gatest.connect("source", self.db, autocommit=False)
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            cur.execute("SET SESSION innodb_lock_wait_timeout = 3")
        return conn

    def _loop(self, i):
        import traceback
        rng = random.Random(f"{self.seed}:app:{i}")
        ops, weights = list(self.ops), list(self.ops.values())
        conn = None
        try:
            while not self.stop.is_set():
                if self.held.is_set():
                    with self.idle_cv:
                        self.idle += 1
                        self.idle_cv.notify_all()
                    while self.held.is_set() and not self.stop.is_set():
                        time.sleep(0.01)
                    with self.idle_cv:
                        self.idle -= 1
                    if conn is not None:  # the server may have restarted meanwhile: a fresh session
                        try:
                            conn.close()
                        except Exception:
                            pass
                        conn = None
                    continue
                if conn is None:
                    try:
                        conn = self._connect()
                    except pymysql.err.MySQLError as e:  # the source is restarting: try again
                        self.errors[f"connect {e.args[0] if e.args else None}"] += 1
                        time.sleep(0.1)
                        continue
                op = rng.choices(ops, weights)[0]
                try:
                    with conn.cursor() as cur:
                        changes = getattr(self, op)(cur, rng)
                    with self.m.lock:  # commit and model update in commit order (row locks order the writers)
                        conn.commit()
                        self._apply(op, changes)
                except Skip:
                    conn.rollback()
                    self.errors["skipped"] += 1
                except pymysql.err.MySQLError as e:
                    code = e.args[0] if e.args else None
                    self.errors[f"error {code}"] += 1
                    try:
                        conn.rollback()
                    except pymysql.err.MySQLError:
                        conn = None
                    if code in (2006, 2013, 0):
                        conn = None
                if self.pause:
                    time.sleep(rng.uniform(0, self.pause))
        except Exception:
            self.crash.append(traceback.format_exc())
        finally:
            if conn is not None:
                try:
                    conn.rollback()
                    conn.close()
                except Exception:
                    pass

    def _apply(self, op, changes):
        m = self.m
        upserts, deletes, roots = changes
        for t, key, row in upserts:
            m.rows[t][key] = row
            m.last[(t, key)] = op
        for t, key in deletes:
            m.rows[t].pop(key, None)
            m.deleted[t].add(key)
            m.last[(t, key)] = op
        m.touched_roots.update(roots)
        m.touches.update(roots)
        m.writes[op] += 1

    # helpers inside the open transaction ------------------------------------------------------------------------
    def _read(self, cur, t, key):
        cur.execute(f"{self.s.select(t)} WHERE {self.s.kwhere(t)}", key)
        r = cur.fetchone()
        if r is None:
            raise AssertionError(f"{t} {key} vanished inside its own transaction")
        return tuple(r)

    def _lock(self, cur, t, key, mode):
        cur.execute(f"SELECT 1 FROM {q(t)} WHERE {self.s.kwhere(t)} {mode}", key)
        if cur.fetchone() is None:
            raise Skip()

    def _root_tag(self, t, key):
        with self.m.lock:
            return self.m.roots_of(t, key)

    def _root_of_c(self, cur, ckey):
        """Diamond: locks c CKEY in share mode and returns the r key it hangs under now (Skip when gone)."""
        cur.execute(f"SELECT {', '.join(q(c) for c in self.s.fk['c'])} FROM c WHERE {self.s.kwhere('c')} "
                    f"LOCK IN SHARE MODE", ckey)
        r = cur.fetchone()
        if r is None:
            raise Skip()
        return tuple(r)

    def _second_parent(self, cur, rng, ckey):
        """Diamond: the root a g under c CKEY names as its second parent, locked in share mode like the application
        locks every parent it writes a reference to: usually the c's own root, sometimes another root (a
        cross-root diamond, which must block unless both roots go in one batch)."""
        own = self._root_of_c(cur, ckey)
        rkey = own if rng.random() < 0.8 else (self.m.pick(rng, "r") or own)
        self._lock(cur, "r", rkey, "LOCK IN SHARE MODE")
        return rkey

    def _update(self, cur, rng, t, extra=""):
        key = self.m.pick(rng, t)
        if key is None:
            raise Skip()
        n = cur.execute(f"UPDATE {q(t)} SET v = v + 1, payload = %s, amt = %s {extra} WHERE {self.s.kwhere(t)}",
                        (payload(rng, "u"), amount(rng), *key))
        if n < 1:
            raise Skip()
        return [(t, key, self._read(cur, t, key))], [], self._root_tag(t, key)

    def _insert(self, cur, rng, t):
        p = self.s.PARENT[t]
        pkey = self.m.pick(rng, p)
        if pkey is None:
            raise Skip()
        self._lock(cur, p, pkey, "LOCK IN SHARE MODE")  # a well-behaved application: the parent must exist
        second = self._second_parent(cur, rng, pkey) if self.s.fk2[t] else ()  # and the diamond's other parent
        key = self.m.fresh(t)
        cols = self.s.pk[t] + self.s.fk[t] + self.s.fk2[t] + ["v", "payload", "amt"]
        cur.execute(f"INSERT INTO {q(t)} ({', '.join(q(c) for c in cols)}) VALUES ({', '.join(['%s'] * len(cols))})",
                    (*key, *pkey, *second, 1, payload(rng, "i"), amount(rng)))
        return [(t, key, self._read(cur, t, key))], [], self._root_tag(p, pkey) | ({second} if second else set())

    def _delete(self, cur, rng, t):
        key = self.m.pick(rng, t)
        if key is None:
            raise Skip()
        tags = self._root_tag(t, key)
        self._lock(cur, t, key, "FOR UPDATE")
        deletes = []
        child = self.s.CHILD.get(t)
        if child:
            cur.execute(f"SELECT {', '.join(q(c) for c in self.s.pk[child])} FROM {q(child)} WHERE "
                        f"{self.s.kwhere(child, self.s.fk[child])} FOR UPDATE", key)
            for ck in [tuple(r) for r in cur.fetchall()]:
                if cur.execute(f"DELETE FROM {q(child)} WHERE {self.s.kwhere(child)}", ck) == 1:
                    deletes.append((child, ck))
        if cur.execute(f"DELETE FROM {q(t)} WHERE {self.s.kwhere(t)}", key) != 1:
            raise Skip()
        deletes.append((t, key))
        return [], deletes, tags

    def _move(self, cur, rng, t):
        key = self.m.pick(rng, t)
        p = self.s.PARENT[t]
        pkey = self.m.pick(rng, p)
        if key is None or pkey is None:
            raise Skip()
        tags = self._root_tag(t, key) | self._root_tag(p, pkey)
        cols, vals = list(self.s.fk[t]), list(pkey)
        if self.s.fk2[t] and rng.random() < 0.4:
            # the diamond's other parent only: g names another root (locked like any parent)
            rkey = self.m.pick(rng, "r")
            if rkey is None:
                raise Skip()
            self._lock(cur, "r", rkey, "LOCK IN SHARE MODE")
            cols, vals, tags = list(self.s.fk2[t]), list(rkey), self._root_tag(t, key) | {rkey}
        else:
            self._lock(cur, p, pkey, "LOCK IN SHARE MODE")
            if self.s.fk2[t] and rng.random() < 0.7:  # usually the second parent follows: the new c's root
                rkey = self._root_of_c(cur, pkey)
                self._lock(cur, "r", rkey, "LOCK IN SHARE MODE")
                cols, vals, tags = cols + self.s.fk2[t], vals + list(rkey), tags | {rkey}
        if self.s.diamond and t == "c" and rng.random() < 0.6:
            # a c moving to another root usually takes its g's second parent along
            cur.execute(f"SELECT {', '.join(q(c) for c in self.s.pk['g'])} FROM g WHERE "
                        f"{self.s.kwhere('g', self.s.fk['g'])} FOR UPDATE", key)
            kids = [tuple(r) for r in cur.fetchall()]
            sets2 = ", ".join(f"{q(c)} = %s" for c in self.s.fk2["g"])
            for gk in kids:
                cur.execute(f"UPDATE g SET {sets2}, v = v + 1 WHERE {self.s.kwhere('g')}", (*pkey, *gk))
            upserts_g = kids
        else:
            upserts_g = []
        sets = ", ".join(f"{q(c)} = %s" for c in cols)
        n = cur.execute(f"UPDATE {q(t)} SET {sets}, v = v + 1 WHERE {self.s.kwhere(t)}", (*vals, *key))
        if n < 1:
            raise Skip()
        upserts = [(t, key, self._read(cur, t, key))] + [("g", gk, self._read(cur, "g", gk)) for gk in upserts_g]
        return upserts, [], tags

    def _rekey(self, cur, rng, t):
        """Changes the primary key of a row of T; its children follow (ON UPDATE CASCADE, or the application
        updates them in the same transaction when the database declares no foreign key)."""
        key = self.m.pick(rng, t)
        if key is None:
            raise Skip()
        tags = self._root_tag(t, key)
        self._lock(cur, t, key, "FOR UPDATE")  # blocks children being added or moved to it meanwhile
        child = self.s.CHILD.get(t)  # None: the single-table shape, no children to follow
        kids = []
        if child:
            cur.execute(f"SELECT {', '.join(q(c) for c in self.s.pk[child])} FROM {q(child)} WHERE "
                        f"{self.s.kwhere(child, self.s.fk[child])} FOR UPDATE", key)
            kids = [tuple(r) for r in cur.fetchall()]
        new = self.m.fresh(t)
        sets_pk = ", ".join(f"{q(c)} = %s" for c in self.s.pk[t])
        if child and not self.s.dbfk:
            sets_fk = ", ".join(f"{q(c)} = %s" for c in self.s.fk[child])
            for ck in kids:
                cur.execute(f"UPDATE {q(child)} SET {sets_fk} WHERE {self.s.kwhere(child)}", (*new, *ck))
        kids2 = []  # diamond: the g rows naming this root as their second parent follow too
        if self.s.diamond and t == "r":
            cur.execute(f"SELECT {', '.join(q(c) for c in self.s.pk['g'])} FROM g WHERE "
                        f"{self.s.kwhere('g', self.s.fk2['g'])} FOR UPDATE", key)
            kids2 = [tuple(r) for r in cur.fetchall()]
            if not self.s.dbfk:
                sets2 = ", ".join(f"{q(c)} = %s" for c in self.s.fk2["g"])
                for gk in kids2:
                    cur.execute(f"UPDATE g SET {sets2} WHERE {self.s.kwhere('g')}", (*new, *gk))
        if cur.execute(f"UPDATE {q(t)} SET {sets_pk}, v = v + 1 WHERE {self.s.kwhere(t)}", (*new, *key)) != 1:
            raise Skip()
        upserts = [(t, new, self._read(cur, t, new))] + [(child, ck, self._read(cur, child, ck)) for ck in kids] + \
            [("g", gk, self._read(cur, "g", gk)) for gk in kids2]
        if t == "r":
            tags |= {new}
        return upserts, [(t, key)], tags

    def _new_root(self, cur, rng, cold):
        key = self.m.fresh("r")
        cols = self.s.pk["r"] + ["cold", "v", "payload", "amt"]
        cur.execute(f"INSERT INTO r ({', '.join(q(c) for c in cols)}) VALUES ({', '.join(['%s'] * len(cols))})",
                    (*key, cold, 1, payload(rng, "n"), amount(rng)))
        return [("r", key, self._read(cur, "r", key))], [], set()

    # the operations -------------------------------------------------------------------------------------------------
    def upd_root(self, cur, rng):
        return self._update(cur, rng, "r")

    def upd_child(self, cur, rng):
        return self._update(cur, rng, "c")

    def upd_grandchild(self, cur, rng):
        return self._update(cur, rng, "g")

    def ins_child(self, cur, rng):
        return self._insert(cur, rng, "c")

    def ins_grandchild(self, cur, rng):
        return self._insert(cur, rng, "g")

    def del_child(self, cur, rng):
        return self._delete(cur, rng, "c")

    def del_grandchild(self, cur, rng):
        return self._delete(cur, rng, "g")

    def move_child(self, cur, rng):
        return self._move(cur, rng, "c")

    def move_grandchild(self, cur, rng):
        return self._move(cur, rng, "g")

    def new_root_cold(self, cur, rng):
        return self._new_root(cur, rng, 1)

    def new_root_hot(self, cur, rng):
        return self._new_root(cur, rng, 0)

    def flip_where(self, cur, rng):
        return self._update(cur, rng, "r", extra=", cold = 1 - cold")

    def rekey_root(self, cur, rng):
        return self._rekey(cur, rng, "r")

    def del_root(self, cur, rng):
        """The single-table shape only (OPS_SINGLE): a root row deleted. (With children, _delete would follow one
        level only, which leaves g orphaned: the three-table mix deletes no roots.)"""
        if self.s.CHILD:
            raise AssertionError("del_root is an operation of the single-table shape (tables=1)")
        return self._delete(cur, rng, "r")

    def rekey_child(self, cur, rng):
        return self._rekey(cur, rng, "c")


class PartApp(App):
    """The application of a partitioned round (PartSchema): it updates rows, inserts current events (recent dates)
    and late ones (old dates, landing in a partition being detached, or in the next one once it is gone), makes rows
    stop matching `where` (cold = 0) and match again, moves rows to another date (a primary key change that moves
    them across partitions), re-keys and deletes them: all the time, each write its own transaction."""

    OPS_PART = {"upd_root": 6, "new_recent": 3, "late_insert": 2, "unmatch": 1, "rematch": 3, "move_date": 1,
                "rekey_root": 1, "del_root": 3}

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.ops = self.OPS_PART
        # Keys the threads leave alone but for upd_root (which keeps whether a row matches): the rows the harness
        # wrote into a partition while goarchive waited before its detach (write_now), until that run ended.
        self.reserved = set()

    def _pick_where(self, rng, pred):
        with self.m.lock:
            keys = [k for k, row in self.m.rows["r"].items() if k not in self.reserved and pred(row)]
        if not keys:
            raise Skip()
        return rng.choice(keys)

    def _insert_at(self, cur, rng, created, cold):
        (n,) = self.m.fresh("r")
        key = (n, created)
        cur.execute("INSERT INTO r (id, created, cold, v, payload, amt) VALUES (%s, %s, %s, 1, %s, %s)",
                    (n, created, cold, payload(rng, "n"), amount(rng)))
        return [("r", key, self._read(cur, "r", key))], [], set()

    def _set(self, cur, rng, key, sets="", params=()):
        n = cur.execute(f"UPDATE r SET v = v + 1, payload = %s{sets} WHERE {self.s.kwhere('r')}",
                        (payload(rng, "u"), *params, *key))
        if n < 1:
            raise Skip()
        return [("r", key, self._read(cur, "r", key))], [], self._root_tag("r", key)

    def new_recent(self, cur, rng):
        return self._insert_at(cur, rng, part_day(rng, PART_OLD_END, PART_END), int(rng.random() < 0.7))

    def late_insert(self, cur, rng):
        return self._insert_at(cur, rng, part_day(rng, PART_START, PART_OLD_END), int(rng.random() < 0.8))

    def unmatch(self, cur, rng):
        key = self._pick_where(rng, lambda row: row[2] == 1 and row[1] < PART_OLD_END)
        return self._set(cur, rng, key, ", cold = 0")

    def rematch(self, cur, rng):
        key = self._pick_where(rng, lambda row: row[2] == 0 and row[1] < PART_OLD_END)
        return self._set(cur, rng, key, ", cold = 1")

    def del_root(self, cur, rng):
        key = self._pick_where(rng, lambda row: True)
        tags = self._root_tag("r", key)
        if cur.execute(f"DELETE FROM r WHERE {self.s.kwhere('r')}", key) != 1:
            raise Skip()
        return [], [("r", key)], tags

    def move_date(self, cur, rng):
        """A row's date changed (old to recent: it stops matching; recent to old: a late row): its key changes."""
        key = self._pick_where(rng, lambda row: True)
        new = part_day(rng, PART_OLD_END, PART_END) if key[1] < PART_OLD_END else \
            part_day(rng, PART_START, PART_OLD_END)
        return self._rekey_to(cur, key, (key[0], new), "created = %s", (new,))

    def rekey_root(self, cur, rng):
        key = self._pick_where(rng, lambda row: True)
        (n,) = self.m.fresh("r")
        return self._rekey_to(cur, key, (n, key[1]), "id = %s", (n,))

    def _rekey_to(self, cur, key, new, sets, params):
        tags = self._root_tag("r", key)
        if cur.execute(f"UPDATE r SET {sets}, v = v + 1 WHERE {self.s.kwhere('r')}", (*params, *key)) != 1:
            raise Skip()
        return [("r", new, self._read(cur, "r", new))], [("r", key)], tags | {new}

    # writes the harness makes while goarchive waits at partition_detaching (the plan made, the DDL not yet run)
    def unmatch_in(self, cur, rng, lo, hi):
        key = self._pick_where(rng, lambda row: row[2] == 1 and lo <= row[1] < hi)
        return self._set(cur, rng, key, ", cold = 0")

    def late_in(self, cur, rng, lo, hi, cold):
        return self._insert_at(cur, rng, part_day(rng, lo, hi), cold)

    def write_now(self, name, fn):
        """FN(cursor) as one application write on a connection of its own (the threads keep writing), learnt by
        the model if it committed, its rows reserved (left alone by the threads until reserved is cleared);
        returns whether it committed."""
        conn = self._connect()
        try:
            try:
                with conn.cursor() as cur:
                    changes = fn(cur)
                with self.m.lock:
                    conn.commit()
                    self._apply(name, changes)
                    self.reserved.update(key for _, key, _ in changes[0])
                return True
            except Skip:
                conn.rollback()
                return False
            except pymysql.err.MySQLError as e:
                self.errors[f"error {e.args[0] if e.args else None}"] += 1
                conn.rollback()
                return False
        finally:
            conn.close()


def load_partitioned(schema, model, db, rng, n):
    """N rows over PART_START .. PART_END: the old ones (before the last cutoff) all matching `where` (cold = 1)
    but a few in one month between the first and the last cutoff, which starts out on the row path; the recent ones
    cold or not. Fills the model from what the source stores."""
    blocked = rng.randint(3, 7)
    rows = []
    for _ in range(n):
        (i,) = model.fresh("r")
        d = part_day(rng, PART_START, PART_END)
        cold = int(rng.random() < (0.9 if d.month == blocked else 1.0)) if d < PART_OLD_END else \
            int(rng.random() < 0.5)
        rows.append((i, d, cold, 1, payload(rng, "r"), amount(rng)))
    (i,) = model.fresh("r")
    rows.append((i, datetime.date(2026, blocked, 10), 0, 1, payload(rng, "r"), amount(rng)))
    conn = gatest.connect("source", db, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO r (id, created, cold, v, payload, amt) VALUES (%s, %s, %s, %s, %s, %s)",
                            rows)
        conn.commit()
    finally:
        conn.close()
    model.rows["r"] = table_rows(schema, "source", db, "r")
    return blocked


def side_tables(db):
    """The side tables (ga_%) in source database DB."""
    return [r[0] for r in gatest.sql("source", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE "
                                               "TABLE_SCHEMA = %s AND TABLE_NAME LIKE 'ga\\_%%' ORDER BY 1", (db,))]


def unfinished_steps(job_schema):
    """(partition, command, state) of the partition steps a run left unfinished."""
    try:
        return [tuple(r) for r in gatest.sql("destination", f"SELECT partition_name, command, state FROM "
                                                            f"{q(job_schema)}.`partition_steps` WHERE state NOT IN "
                                                            "('dropped', 'left') ORDER BY 1")]
    except pymysql.err.ProgrammingError:  # no registry yet
        return []


def session_ids():
    """{server: set of session ids} on the source and the destination now."""
    return {server: {r[0] for r in gatest.sql(server, "SELECT ID FROM information_schema.PROCESSLIST")}
            for server in ("source", "destination")}


def wait_sessions_gone(before, timeout=10):
    """Waits until every session of this harness's account opened since BEFORE (session_ids(): a goarchive run's,
    SIGKILLed since) has ended on both servers: the server ends such a session once the statement it was running
    finishes. Sessions the application opened meanwhile stay: after TIMEOUT seconds it returns all the same."""
    if before is None:
        return
    deadline = time.monotonic() + timeout
    for server in ("source", "destination"):
        while time.monotonic() < deadline:
            rows = gatest.sql(server, "SELECT ID, COMMAND FROM information_schema.PROCESSLIST WHERE "
                                      "USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AND ID <> CONNECTION_ID()")
            if not [i for i, command in rows if i not in before[server] and command != "Sleep"]:
                break
            time.sleep(0.05)


def quiesce(timeout=20):
    """Waits until no statement runs on either server but this harness's own (a killed goarchive's server session
    may finish a statement after the SIGKILL: a DDL completing between two reads of the check would look like a lost
    row); its idle sessions end at once (the kernel closed their sockets). The application must be held."""
    deadline = time.monotonic() + timeout
    for server in ("source", "destination"):
        while True:
            busy = gatest.sql(server, "SELECT ID, COMMAND, LEFT(INFO, 80) FROM information_schema.PROCESSLIST WHERE "
                                      "COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump') AND USER <> 'system user' "
                                      "AND ID <> CONNECTION_ID()")
            if not busy:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"statements still running on the {server} {timeout}s after a kill: {busy}")
            time.sleep(0.05)


def check_midway(schema, model, src_db, dst_db, job_schema, mode):
    """Failures {category: [lines]} of a partitioned round while a killed run's work is unfinished (the application
    held): every row of the model is in the source (the table r or a side table ga_%, never both, at its latest
    version: the application cannot reach a side table) or in the archive. A row in a side table and the archive
    is allowed when the archive's copy is the row (its chunk's copy committed, the side table not dropped yet). A
    row in r and the archive, a stale archive copy, or a row the application deleted still in the archive is
    allowed only while the row path has an unfinished batch (copied or deleting: between its copy and its
    delete); no unknown row anywhere. Purge (MODE): a row in no place is allowed when it matches `where` (the
    schema's current cutoff, which only grows: purged under an earlier one, it matches this one too)."""
    bad = collections.defaultdict(list)
    sides = {name: campaignkit.rows_by_key("source", src_db, name, schema.cols["r"], schema.pk["r"])
             for name in side_tables(src_db)}
    src = table_rows(schema, "source", src_db, "r")
    dst = table_rows(schema, "destination", dst_db, "r")
    open_batch = int(gatest.sql("destination", f"SELECT COUNT(*) FROM {q(job_schema)}.`batches` WHERE state IN "
                                               "('copied', 'deleting')")[0][0]) > 0
    steps = unfinished_steps(job_schema)
    tag = f" (side tables {sorted(sides)}, unfinished steps {steps}, open row batch {open_batch})"
    for key, row in model.rows["r"].items():
        STATS["row_checks"] += 1
        why = model.why("r", key)
        places = [(n, rows[key]) for n, rows in [("r", src)] + sorted(sides.items()) if key in rows]
        d = dst.get(key)
        for where, got in places:
            if got != row:
                bad["stale"].append(f"r {key}: the source's {where} has {got}, latest version {row}{why}{tag}")
        if len(places) > 1:
            bad["duplicated"].append(f"r {key}: in the source's {[p for p, _ in places]}{why}{tag}")
        if not places and d is None and mode == "purge" and schema.eligible_row(row):
            continue  # purged
        if not places and d is None:
            bad["lost"].append(f"r {key}: in neither the source (r, side tables) nor the archive; latest version "
                               f"{row}{why}{tag}")
        elif not places and d != row:
            bad["stale"].append(f"r {key}: the archive has {d}, latest version {row}{why}{tag}")
        elif places and d is not None:
            in_side = any(p != "r" for p, _ in places)
            if in_side and d != row:
                bad["stale"].append(f"r {key}: a side table holds it and the archive has {d}, latest {row}{why}{tag}")
            elif not in_side and not open_batch:
                bad["duplicated"].append(f"r {key}: in the source's r and the archive, no batch open{why}{tag}")
    for where, rows in [("source r", src), ("archive", dst)] + [(f"source {n}", r) for n, r in sides.items()]:
        for key, got in rows.items():
            if key in model.rows["r"]:
                continue
            if key in model.deleted["r"] and where == "archive" and open_batch:
                continue
            state = "deleted by the application" if key in model.deleted["r"] else "unknown"
            bad["stale"].append(f"r {key}: {state}, in the {where}: {got}{model.why('r', key)}{tag}")
    return bad


def stored_rows(src_db, dst_db):
    """{pk form: [(place, sha256)]} over the source's r and side tables and the archive's r: each row's checksum
    computed by its server on its stored bytes (gatest.stored_checksums)."""
    out = collections.defaultdict(list)
    for t in ["r"] + side_tables(src_db):
        for k, sha in gatest.stored_checksums("source", src_db, t).items():
            out[k].append((f"source {t}", sha))
    for k, sha in gatest.stored_checksums("destination", dst_db, "r").items():
        out[k].append(("archive r", sha))
    return out


def check_stored(before, after, mode):
    """Failures {category: [lines]} of a final run on the servers' checksums: BEFORE and AFTER are stored_rows()
    with the application stopped, before and after it. Every row the source held before is after it in exactly one
    place (archive mode: source or archive; purge: the source, or gone), byte-equal to the source's row before; no
    row after it that was not there before; nothing in two places."""
    bad = collections.defaultdict(list)
    expect = {}
    for k, places in before.items():
        src = [(p, sha) for p, sha in places if p.startswith("source")]
        if len(src) > 1:
            bad["duplicated"].append(f"(checksums) key {k}: in {[p for p, _ in src]} before the final run")
        expect[k] = (src or places)[0][1]
        if not src and mode == "purge":
            expect[k] = None  # an archive row in a purge round: none may be there (the model check names it)
    for k, places in after.items():
        if len(places) > 1:
            bad["duplicated"].append(f"(checksums) key {k}: in {[p for p, _ in places]} after the final run")
        if k not in expect:
            bad["stale"].append(f"(checksums) key {k}: in {[p for p, _ in places]} after the final run, nowhere before")
        elif any(sha != expect[k] for _, sha in places) and expect[k] is not None:
            bad["stale"].append(f"(checksums) key {k}: {places} after the final run, {expect[k]} before")
    if mode == "archive":
        for k, places in before.items():
            if k not in after and any(p.startswith("source") for p, _ in places):
                bad["lost"].append(f"(checksums) key {k}: in {[p for p, _ in places]} before the final run, nowhere "
                                   "after it")
    return bad


# -- initial data ---------------------------------------------------------------------------------------------------
def load(schema, model, db, rng, roots):
    """ROOTS roots (about half eligible), 0-4 children each, 0-2 grandchildren per child (the single-table shape:
    the roots only); fills the model from what the source stores."""
    conn = gatest.connect("source", db, autocommit=False)
    try:
        with conn.cursor() as cur:
            rows = {t: [] for t in schema.TABLES}
            for _ in range(roots):
                rk = model.fresh("r")
                rows["r"].append((*rk, int(rng.random() < 0.5), 1, payload(rng, "r"), amount(rng)))
                if schema.tables == 1:
                    continue
                for _ in range(rng.randint(0, 4)):
                    ck = model.fresh("c")
                    rows["c"].append((*ck, *rk, 1, payload(rng, "c"), amount(rng)))
                    for _ in range(rng.randint(0, 2)):
                        gk = model.fresh("g")
                        second = ()
                        if schema.diamond:  # usually its own root, sometimes an earlier one (cross-root)
                            second = rk if rng.random() < 0.85 else schema.keyval(rng.randint(1, len(rows["r"])))
                        rows["g"].append((*gk, *ck, *second, 1, payload(rng, "g"), amount(rng)))
            for t in schema.TABLES:
                cols = schema.cols[t]
                if rows[t]:
                    cur.executemany(f"INSERT INTO {q(t)} ({', '.join(q(c) for c in cols)}) VALUES "
                                    f"({', '.join(['%s'] * len(cols))})", rows[t])
        conn.commit()
    finally:
        conn.close()
    for t in schema.TABLES:
        model.rows[t] = table_rows(schema, "source", db, t)


def table_rows(schema, server, db, t):
    """{key: row} of DB.T on SERVER."""
    return campaignkit.rows_by_key(server, db, t, schema.cols[t], schema.pk[t])


# -- the closing check ----------------------------------------------------------------------------------------------
CATEGORIES = ("lost", "duplicated", "stale", "orphans", "unarchived", "uncopied", "misplaced", "registry")
# Outcomes the design allows and reports (counted, never a failure), in diamond rounds only: the eligible roots
# joined (by a g whose two parents are under different roots) to a root that is not eligible, which stay in the
# source, reported as blocked (goarchive.toml(5), "Diamonds"). Every other eligible root still in the source after
# the final run is a failure, in diamond rounds too ("unarchived_diamond": the model's groups explain every root
# goarchive keeps; 0 in 260 rounds once the model's union-find was fixed). The safety categories (lost,
# duplicated, stale, orphans, misplaced) stay strict in every round.
# Conflicts and copies kept after a kill in the delete's commit window are failures: the application never reuses
# a key, and the source's commit proof (goarchive(1), THE PIPELINE) tells whether an interrupted delete committed.
# Set CHAOS_NO_PROOF=1 to run the rounds without the proof (a goarchive_commits table goarchive cannot use), where
# both are the documented outcomes and allowed again.
# In copy-only rounds the copy of a tree whose root the application deleted (or re-keyed: its old key is deleted)
# stays in the archive as the only version of its rows (goarchive(1), "One owner per archived row": the copy-only
# sweep never removes a copy whose root is gone from the source): "only_version", allowed and reported. Only rows
# the application deleted qualify; a kept copy of a row that still exists (a child that followed its re-keyed root)
# is stale, a failure.
# A --keep-archive restore round's archived copies of rows that went back ("kept_archive", chaoskit.check) are allowed.
ALLOWED = ("blocked", "only_version", "kept_archive") + \
    (("conflicts", "kept") if os.environ.get("CHAOS_NO_PROOF") else ()) + \
    (("held_parent", "wedged") if os.environ.get("CHAOS_ALLOW_HELD_PARENT") else ())  # HELD_PARENT_ALLOWED


def conflict_roots(schema, job_schema):
    """Root keys (tuples as the model has them) that goarchive recorded as conflicts. An error raises: an empty
    set is the passing answer (a missing registry after a final run is a failure, not "no conflicts")."""
    out = set()
    rows = gatest.sql("destination", f"SELECT root_key FROM {q(job_schema)}.`conflicts`")
    types = [int if "INT" in schema._types[("r", c)].upper() else datetime.date.fromisoformat
             if schema._types[("r", c)].upper().startswith("DATE") else str for c in schema.pk["r"]]
    for (blob,) in rows:
        blob, vals, i = bytes(blob), [], 0
        while i + 4 <= len(blob):
            n = int.from_bytes(blob[i:i + 4], "big")
            vals.append(blob[i + 4:i + 4 + n].decode("utf8"))
            i += 4 + n
        out.add(tuple(typ(v) for typ, v in zip(types, vals)))
    return out


def registry_failures(job_schema, job="j", jobs=None):
    """What is wrong with the registry after a final clean run: an unfinished batch (copied or deleting), the job
    (each of JOBS, in a shared-archive round) not recorded or still marked running, a run still marked running, or a
    conflict recorded where the round allows none (ALLOWED). A list of lines, empty when the registry is in order."""
    out = []
    unfinished = gatest.sql("destination", f"SELECT COUNT(*), IFNULL(SUM(roots), 0) FROM {q(job_schema)}.`batches` "
                                           "WHERE state IN ('copied', 'deleting')")[0]
    if unfinished[0]:
        out.append(f"{unfinished[0]} unfinished batch(es) ({unfinished[1]} roots) after the final clean run")
    for job in jobs or [job]:
        status = gatest.sql("destination", f"SELECT status FROM {q(job_schema)}.`jobs` WHERE name = %s", (job,))
        if not status:
            out.append(f"job {job} is not in the registry")
        elif status[0][0] == "running":
            out.append(f"job {job} is still marked running after the final clean run")
    running = gatest.sql("destination", f"SELECT COUNT(*) FROM {q(job_schema)}.`runs` WHERE status = 'running'")[0][0]
    if running:
        out.append(f"{running} run(s) still marked running after the final clean run")
    if "conflicts" not in ALLOWED:
        n = gatest.sql("destination", f"SELECT COUNT(*) FROM {q(job_schema)}.`conflicts`")[0][0]
        if n:
            out.append(f"{n} conflict(s) recorded, and this round allows none")
    return out


def check(schema, model, src_db, dst_db, mode, what, conflicts=frozenset(), ambiguous_kill=False,
          copy_only_round=False, wedged=None, kept=None, kept_conflicts=frozenset()):
    """Failures {category: [example lines]} of the round's end state against the model.

    MODE is the mode of the final clean run: archive (eligible trees in the destination, the others in the source,
    nothing in both), purge (eligible trees gone, the others in the source, nothing in the destination),
    copy-only (every row in the source, and in the destination exactly the eligible trees, all at their latest
    version: the copy sweep has removed every copy that went stale or left `where`). COPY_ONLY_ROUND: the round ran
    copy-only, so copies of trees whose root the application deleted are allowed (ALLOWED, "only_version").

    KEPT (a --keep-archive restore round, archive mode): the archive's rows before that restore. The roots whose tree
    holds such a row, or that goarchive recorded as conflicts (KEPT_CONFLICTS), stay in the source (kept_roots); the
    archive's copy of a KEPT row, exactly as it was, is allowed beside the source's row ("kept_archive")."""
    bad = collections.defaultdict(list)
    kept = kept or {}
    # Since 7a08fd2 the roots a --keep-archive restore put back are the job's copies (copy-only's mark): the final
    # archive replaces a copy whose root still matches `where` and the sweep removes the others, so only the roots
    # goarchive reported as conflicts stay in the source.
    pinned = set(kept_conflicts or ()) if kept else set()
    src = {t: table_rows(schema, "source", src_db, t) for t in schema.TABLES}
    dst = {t: table_rows(schema, "destination", dst_db, t) for t in schema.TABLES}

    def dest_root(t, key):  # the root a destination row hangs under in the destination
        while t != "r":
            row = dst[t].get(key)
            if row is None:
                return None
            key, t = schema.parent_of(t, row), schema.PARENT[t]
        return key

    # Diamond: roots joined by a g (its c under one root, its second parent another), in the model or in the
    # destination, stay together: a conflict root's whole group keeps both versions.
    groups = Groups()
    find = groups.find
    if schema.diamond:
        for gk, row in model.rows["g"].items():
            a, b = model.root_of("g", gk), schema.parent2_of("g", row)
            if a is not None and b is not None:
                groups.join(a, b)
        for gk, row in dst["g"].items():
            a, b = dest_root("g", gk), schema.parent2_of("g", row)
            if a is not None and b is not None:
                groups.join(a, b)
    conflict_groups = {find(r) for r in conflicts}
    # Copy-only rounds: the sweep's held parents (HELD_PARENT_ALLOWED) and the roots they wedge (added to WEDGED).
    held = held_parents(schema, src, dst) if copy_only_round else set()
    wedged = set() if wedged is None else wedged
    for t, key in sorted(held):
        # its current root, and the gone root it is kept under (a conflict recorded on that root cannot resolve
        # either: the held row is on both sides)
        wedged |= {model.root_of(t, key), dest_root(t, key)}
        bad["held_parent"].append(f"{t} {key}: the destination holds {dst[t][key]} under a root gone from the "
                                  f"source, as the parent of a kept only-version row; the source holds "
                                  f"{src[t].get(key)} (its root now {model.root_of(t, key)})")

    def in_conflict(t, key):
        if mode != "archive" or not conflicts:
            return False
        roots = {model.root_of(t, key), dest_root(t, key)}
        if schema.diamond and t == "g":
            roots |= {schema.parent2_of("g", r) for r in (model.rows["g"].get(key), dst["g"].get(key)) if r}
        return any(r is not None and find(r) in conflict_groups for r in roots)

    blocked = model.blocked() if mode in ("archive", "purge") else {}
    for r, why in sorted(blocked.items()):
        bad["blocked"].append(f"r {r} stays in the source: {why}")

    def eligible(t, key):  # whether the row's tree is to leave the source (a blocked root's is not)
        r = model.root_of(t, key)
        if r is None:
            return None
        if model.roots_of(t, key) & pinned:
            return False  # --keep-archive: its tree meets a row the archive kept, so it stays in the source
        return schema.eligible_row(model.rows["r"][r]) and r not in blocked

    for t in schema.TABLES:
        for key, row in model.rows[t].items():
            STATS["row_checks"] += 1
            if in_conflict(t, key):
                if model.root_of(t, key) in wedged:
                    bad["wedged"].append(f"{t} {key}: under a root in conflict with a held parent")
                else:
                    bad["conflicts"].append(f"{t} {key}: under a root goarchive reported as a conflict")
                continue
            s, d = src[t].get(key), dst[t].get(key)
            if d is not None and s is not None and key in kept.get(t, {}) and d == kept[t][key]:
                bad["kept_archive"].append(f"{t} {key}: in the source, and its archive copy from before the "
                                           "--keep-archive restore stays")
                d = None
            if (t, key) in held:
                if s != row:
                    bad["stale"].append(f"{t} {key}: source has {s}, latest committed version is {row}"
                                        + model.why(t, key))
                continue
            for where, got in (("source", s), ("destination", d)):
                if got is not None and got != row:
                    bad["stale"].append(f"{t} {key}: {where} has {got}, latest committed version is {row}"
                                        + model.why(t, key))
            el = eligible(t, key)
            tag = "touched" if model.root_of(t, key) in model.touched_roots else "untouched"
            if mode == "copy-only":
                if s is None:
                    bad["lost"].append(f"{t} {key} (eligible={el}) left the source in a copy-only round "
                                       f"(destination has {d})" + model.why(t, key))
                if el and d is None and model.root_of(t, key) in wedged:
                    bad["wedged"].append(f"{t} {key}: eligible, not copied: its root is wedged by a held parent")
                elif el and d is None:
                    bad["uncopied"].append(f"{t} {key}: eligible ({tag}), not in the destination after the final "
                                           "clean copy-only run" + model.why(t, key))
                elif el is False and d is not None:
                    bad["misplaced"].append(f"{t} {key}: not eligible ({tag}), in the destination after the final "
                                            "clean copy-only run" + model.why(t, key))
                continue
            if mode == "purge":
                if d is not None:
                    bad["misplaced"].append(f"{t} {key}: purge put it in the destination" + model.why(t, key))
                if el is False and s is None:
                    bad["lost"].append(f"{t} {key}: not eligible ({tag}), gone from the source: {row}" + model.why(t, key))
                elif el and s is not None:
                    bad["unarchived_diamond" if schema.diamond else "unarchived"].append(
                        f"{t} {key}: eligible ({tag}), not purged after the final clean run")
                continue
            if s is None and d is None:
                bad["lost"].append(f"{t} {key} (eligible={el}, {tag}) is in neither server; latest version {row}"
                                   + model.why(t, key))
            elif s is not None and d is not None:
                bad["duplicated"].append(f"{t} {key} (eligible={el}, {tag}) is in the source and the destination"
                                         + model.why(t, key))
            elif el is False and d is not None:
                bad["misplaced"].append(f"{t} {key}: not eligible ({tag}), in the destination only" + model.why(t, key))
            elif el and s is not None:
                bad["unarchived_diamond" if schema.diamond else "unarchived"].append(
                    f"{t} {key}: eligible ({tag}), still in the source after the final clean archive run")
        for where, rows in (("source", src[t]), ("destination", dst[t])):
            for key in rows:
                if key in model.deleted[t] and key not in model.rows[t]:
                    if where == "destination" and key in kept.get(t, {}) and rows[key] == kept[t][key]:
                        bad["kept_archive"].append(f"{t} {key}: deleted by the application after the "
                                                   "--keep-archive restore, its archive copy stays")
                        continue
                    if where == "destination" and in_conflict(t, key) and dest_root(t, key) in wedged:
                        bad["wedged"].append(f"{t} {key}: deleted by the application, kept under a root in conflict "
                                             "with a held parent")
                        continue
                    if where == "destination" and in_conflict(t, key):
                        bad["conflicts"].append(f"{t} {key}: deleted by the application, archived under a conflict")
                        continue
                    if where == "destination" and ambiguous_kill and mode == "archive":
                        bad["kept"].append(f"{t} {key}: deleted by the application, its archived copy kept")
                        continue
                    gone_root = dest_root(t, key)
                    if where == "destination" and copy_only_round and gone_root not in model.rows["r"]:
                        bad["only_version"].append(f"{t} {key}: deleted by the application with its root "
                                                   f"{gone_root}, its copy-only copy kept as the only version")
                        continue
                    bad["stale"].append(f"{t} {key}: deleted by the application, still in the {where}: {rows[key]}"
                                        + model.why(t, key))
                elif key not in model.rows[t]:
                    bad["stale"].append(f"{t} {key}: unknown row in the {where}: {rows[key]}")
    for child, fk, parent, refs in schema.relations():
        for server, db in (("source", src_db), ("destination", dst_db)):
            for r in campaignkit.orphans(server, db, child, fk, parent, refs, schema.pk[child] + fk):
                n = len(schema.pk[child])
                bad["orphans"].append(f"{child} {tuple(r[:n])} in the {server} without its {parent} {tuple(r[n:])}")
    return bad


# -- restore rounds -------------------------------------------------------------------------------------------------
# A restore round (test_chaos.py, restore_round) archives, restores the archived roots a random `--where` matches
# while the application writes (restored rows are the application's again: it updates them, deletes their children,
# adds children under them, moves children to and from them, re-keys them), then archives again. KEPT is, in a
# --keep-archive round, the archive's rows before the restore ({table: {key: row}}): --keep-archive copies back and
# leaves the archive as it was, so a row may be in both servers when the archive's copy is exactly that row.


def kept_roots(schema, model, kept, extra=()):
    """--keep-archive rounds: the roots (in the model now) whose tree holds a row of KEPT, plus EXTRA (roots
    goarchive recorded as conflicts). The archive holds a copy of such a row that no run of this job wrote since
    the restore: an archive run finds it and leaves the root in the source (goarchive(1): an equal row "written by
    another run" keeps its root in the source; a different one is a conflict)."""
    out = set(extra)
    for t in schema.TABLES:
        for key in model.rows[t]:
            if key in kept.get(t, ()):
                out |= model.roots_of(t, key)
    return out


def check_restore(schema, model, src_db, dst_db, kept=None):
    """Failures {category: [example lines]} right after a restore phase (its final run finished, the application
    held): every row of the model is at its latest committed version in exactly one of source and archive (a
    --keep-archive round: in both when the archive's copy is exactly its row of KEPT, the archive before the
    restore); a row the application deleted is in neither (or, --keep-archive, in the archive as its KEPT row); no
    unknown rows; no orphans on either side."""
    bad = collections.defaultdict(list)
    kept = kept or {}
    src = {t: table_rows(schema, "source", src_db, t) for t in schema.TABLES}
    dst = {t: table_rows(schema, "destination", dst_db, t) for t in schema.TABLES}
    for t in schema.TABLES:
        old = kept.get(t, {})
        for key, row in model.rows[t].items():
            STATS["row_checks"] += 1
            s, d = src[t].get(key), dst[t].get(key)
            why = model.why(t, key)
            if s is not None and s != row:
                bad["stale"].append(f"{t} {key}: after the restore the source has {s}, latest version {row}{why}")
            if d is not None and d != row and not (key in old and d == old[key] and s is not None):
                bad["stale"].append(f"{t} {key}: after the restore the archive has {d}, latest version {row}{why}")
            if s is None and d is None:
                bad["lost"].append(f"{t} {key}: after the restore in neither server; latest version {row}{why}")
            elif s is not None and d is not None and not (key in old and d == old[key]):
                bad["duplicated"].append(f"{t} {key}: after the restore in the source and the archive{why}")
        for where, rows in (("source", src[t]), ("archive", dst[t])):
            for key, got in rows.items():
                if key in model.rows[t]:
                    continue
                if where == "archive" and key in old and got == old[key] and key in model.deleted[t]:
                    continue  # --keep-archive: the archive's copy of a row the application deleted once it was back
                state = "deleted by the application" if key in model.deleted[t] else "unknown"
                bad["stale"].append(f"{t} {key}: {state}, in the {where} after the restore: {got}{model.why(t, key)}")
    for child, fk, parent, refs in schema.relations():
        for server, db in (("source", src_db), ("destination", dst_db)):
            for r in campaignkit.orphans(server, db, child, fk, parent, refs, schema.pk[child] + fk):
                n = len(schema.pk[child])
                bad["orphans"].append(f"{child} {tuple(r[:n])} in the {server} after the restore without its "
                                      f"{parent} {tuple(r[n:])}")
    return bad


# -- shared-archive rounds --------------------------------------------------------------------------------------------
# Several jobs of every mode over the same tables, one destination database and one registry (test_chaos.py,
# SharedRound). Their `where`s overlap by design: jc (copy-only) with ja (archive) and with jp (purge), ja with jb
# (another archive job); archive and purge never overlap, so that a row the destination holds under a purged root
# can only be a copy-only copy (kept, possibly of an older version: "rows copy-only copied before stay in the
# archive"), never an archive's. v changes with every application update of a root, so roots move between the jobs.
# Over the cold roots, by v % 6: 0 jc + jp, 1 jc only, 2 jc + ja, 3 ja + jb, 4 jb only, 5 jp only; hot roots: no job.
SHARED_JOBS = {"jc": ("copy-only", (0, 1, 2)), "ja": ("archive", (2, 3)), "jb": ("archive", (3, 4)),
               "jp": ("purge", (0, 5))}
SHARED_MOD = 6


def shared_where(job):
    return f"cold = 1 AND v % {SHARED_MOD} IN ({', '.join(str(x) for x in SHARED_JOBS[job][1])})"


def shared_eligible(schema, job, root_row):
    cols = schema.cols["r"]
    return root_row[cols.index("cold")] == 1 and root_row[cols.index("v")] % SHARED_MOD in SHARED_JOBS[job][1]


# The copy-only sweep keeps, in the copy of a root gone from the source, a row the source still holds when a kept
# only-version row hangs under it (a child the application deleted): the archive then holds an old version of that
# row under the gone root, and every archive (or copy-only) run of the row's current root meets it as a conflict, exit
# 1, on every run ("held_parent", found by the shared rounds; tests/chaos/repro_held_parent.py). Fixed in bf74b08:
# a failure; CHAOS_ALLOW_HELD_PARENT=1 allows (and reports) it, to judge a binary from before the fix.
HELD_PARENT_ALLOWED = bool(os.environ.get("CHAOS_ALLOW_HELD_PARENT"))


def held_root(schema, dst, t, key):
    """The root row KEY of T hangs under in the destination (None when a parent is missing there)."""
    while t != "r":
        row = dst[t].get(key)
        if row is None:
            return None
        key, t = schema.parent_of(t, row), schema.PARENT[t]
    return key


def held_parents(schema, src, dst):
    """{(table, key)} of destination rows the source still holds, under a destination root that is gone from the
    source, kept there as the parent of a destination row the source no longer holds (directly or through another
    such row): the copy-only sweep's "held parent" (HELD_PARENT_ALLOWED)."""
    def dest_root(t, key):
        while t != "r":
            row = dst[t].get(key)
            if row is None:
                return None
            key, t = schema.parent_of(t, row), schema.PARENT[t]
        return key

    held = set()
    for t in reversed(schema.TABLES):  # children first: a held c can make its own parent held
        child = schema.CHILD.get(t)
        if child is None or t == "r":
            continue
        kept_children = {schema.parent_of(child, row) for k, row in dst[child].items()
                         if k not in src[child] or (child, k) in held}
        for key in dst[t]:
            if key in src[t] and key in kept_children:
                root = dest_root(t, key)
                if root is not None and root not in src["r"]:
                    held.add((t, key))
    return held


def wedged_roots(schema, model, src_db, dst_db):
    """The roots the copy-only sweep's held parents wedge now (HELD_PARENT_ALLOWED): each held row's current root in
    the model and the gone root it is kept under. Taken before a purge too: a purge that takes the current root
    ends the wedge, but not the conflicts the archive runs recorded meanwhile."""
    src = {t: table_rows(schema, "source", src_db, t) for t in schema.TABLES}
    dst = {t: table_rows(schema, "destination", dst_db, t) for t in schema.TABLES}
    out = set()
    for t, key in held_parents(schema, src, dst):
        out |= {model.root_of(t, key), held_root(schema, dst, t, key)}
    return out


def check_shared(schema, model, src_db, dst_db, wedged=None):
    """Failures {category: [example lines]} of a shared-archive round's end state against the model, after the final
    clean runs jc, ja, jb, jp, jc (the application stopped). With C, A and P the final root version's eligibility for
    copy-only (jc), archive (ja or jb) and purge (jp), every row of the model (latest committed version R):

      P: gone from the source (purged; in neither server is no loss); a destination row is allowed at any version
         (a copy-only copy made before the purge, the only version: "only_version"), never in the source;
      A: in the destination at R; in the source too (at R) only when C: the archive found jc's copy and left the
         root in the source ("blocked", allowed and reported), else it must have left the source;
      neither: in the source at R; in the destination at R exactly when C (jc's copy), else not at all.

    Rows the application deleted: in neither server, except in the destination under a root that is gone from the
    source (deleted or re-keyed by the application, or purged): a copy-only copy's only version, allowed. No
    orphans on either side; no unknown rows.

    A row the copy-only sweep kept as a held parent (held_parents) is reported as "held_parent", and the rows of the
    root it belongs to now (added to the set WEDGED) as "wedged" instead of unarchived or uncopied: archive and
    copy-only runs meet the held row as a conflict."""
    bad = collections.defaultdict(list)
    src = {t: table_rows(schema, "source", src_db, t) for t in schema.TABLES}
    dst = {t: table_rows(schema, "destination", dst_db, t) for t in schema.TABLES}
    held = held_parents(schema, src, dst)
    wedged = set() if wedged is None else wedged
    for t, key in sorted(held):
        root = model.root_of(t, key)
        wedged |= {root, held_root(schema, dst, t, key)}  # the gone root it is kept under: on both sides too
        bad["held_parent"].append(f"{t} {key}: the destination holds {dst[t][key]} under a root gone from the "
                                  f"source, as the parent of a kept only-version row; the source holds "
                                  f"{src[t][key]} (its root now {root})")

    def dest_root(t, key):
        while t != "r":
            row = dst[t].get(key)
            if row is None:
                return None
            key, t = schema.parent_of(t, row), schema.PARENT[t]
        return key

    def el(job, root):
        return shared_eligible(schema, job, model.rows["r"][root])

    def purged(root):
        return root in model.rows["r"] and el("jp", root)

    for t in schema.TABLES:
        for key, row in model.rows[t].items():
            STATS["row_checks"] += 1
            s, d = src[t].get(key), dst[t].get(key)
            root = model.root_of(t, key)
            why = model.why(t, key)
            if s is not None and s != row:
                bad["stale"].append(f"{t} {key}: the source has {s}, latest committed version is {row}{why}")
            if root is None:
                if s is None:
                    bad["lost"].append(f"{t} {key}: its root is missing in the model and it left the source{why}")
                continue
            c, a, p = el("jc", root), el("ja", root) or el("jb", root), el("jp", root)
            tag = f"root {root}: copy-only {int(c)}, archive {int(a)}, purge {int(p)}"
            if (t, key) in held:
                continue  # reported above; its source side was checked
            if root in wedged and s == row and d is None and (a or c) and not p:
                bad["wedged"].append(f"{t} {key} ({tag}): stays in the source, its root is wedged by a held parent")
                continue
            if d is not None and d != row:
                if s is None and p:
                    bad["only_version"].append(f"{t} {key} ({tag}): purged, an older copy-only copy kept: {d}")
                else:
                    bad["stale"].append(f"{t} {key} ({tag}): the destination has {d}, latest committed version is "
                                        f"{row}{why}")
            if p:
                if s is not None:
                    bad["unarchived"].append(f"{t} {key} ({tag}): not purged after the final clean purge run")
            elif a:
                if d is None:
                    bad["lost" if s is None else "unarchived"].append(
                        f"{t} {key} ({tag}): not in the destination (source has {s}){why}")
                elif s is not None:
                    if c:
                        if t == "r":
                            bad["blocked"].append(f"r {key} ({tag}): stays in the source, its copy-only copy is in "
                                                  "the destination")
                    else:
                        bad["duplicated"].append(f"{t} {key} ({tag}): in the source and the destination{why}")
            else:
                if s is None:
                    bad["lost"].append(f"{t} {key} ({tag}): gone from the source (destination has {d}){why}")
                if c and s is not None and d is None:
                    bad["uncopied"].append(f"{t} {key} ({tag}): not in the destination after the final copy-only "
                                           f"run{why}")
                elif not c and d is not None:
                    bad["misplaced"].append(f"{t} {key} ({tag}): in the destination, no job puts it there{why}")
        for where, rows in (("source", src[t]), ("destination", dst[t])):
            for key in rows:
                if key in model.rows[t]:
                    continue
                if key not in model.deleted[t]:
                    bad["stale"].append(f"{t} {key}: unknown row in the {where}: {rows[key]}")
                    continue
                gone_root = dest_root(t, key) if where == "destination" else None
                if where == "destination" and gone_root is not None and gone_root not in src["r"] and \
                        (gone_root not in model.rows["r"] or purged(gone_root)):
                    bad["only_version"].append(f"{t} {key}: deleted by the application, its copy under root "
                                               f"{gone_root} (gone from the source) kept as the only version")
                    continue
                bad["stale"].append(f"{t} {key}: deleted by the application, still in the {where}: {rows[key]}"
                                    + model.why(t, key))
    for child, fk, parent, refs in schema.relations():
        for server, db in (("source", src_db), ("destination", dst_db)):
            for r in campaignkit.orphans(server, db, child, fk, parent, refs, schema.pk[child] + fk):
                n = len(schema.pk[child])
                bad["orphans"].append(f"{child} {tuple(r[:n])} in the {server} without its {parent} {tuple(r[n:])}")
    return bad


def destination_state(schema, dst_db, job_schema):
    """What a run that moves anything changes on the destination (the application writes the source only): the
    checksum of every archived table and the registry's batches."""
    out = {t: gatest.checksum_table("destination", dst_db, t) for t in schema.TABLES}
    out["batches"] = gatest.sql("destination", f"SELECT id, job_id, state, roots FROM {q(job_schema)}.`batches` "
                                               "ORDER BY id")
    return out


def unfinished_of(job_schema, job):
    """Roots in JOB's unfinished batches (copied or deleting)."""
    return int(gatest.sql("destination", f"SELECT IFNULL(SUM(b.roots), 0) FROM {q(job_schema)}.`batches` b JOIN "
                                         f"{q(job_schema)}.`jobs` j ON j.id = b.job_id WHERE j.name = %s AND "
                                         "b.state IN ('copied', 'deleting')", (job,))[0][0])


def server_pid(name):
    """The pid of this suite's server NAME (source, destination), from its pid file; None when it has none."""
    path = os.path.join(OWN.env["GOARCHIVE_TEST_DIR"], name, "mariadbd.pid")
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def report(bad, what, limit=8):
    lines = [f"{what}: " + ", ".join(f"{k} {len(v)}" for k, v in bad.items() if v)]
    for k, v in bad.items():
        for line in v[:limit]:
            lines.append(f"  [{k}] {line}")
        if len(v) > limit:
            lines.append(f"  [{k}] ... {len(v) - limit} more")
    return "\n".join(lines)
