#!/usr/bin/python3
"""Index use whatever the statistics say (issue 34): every statement goarchive sends with a key list or a key
range stays on the index it was written for when the table's statistics say it is nearly empty.

A freshly filled archive table keeps the statistics of its first rows (mariadb-facts C9: `Rows = 61` after 120k
rows), and MariaDB 10.11 then plans `(id, created) IN ((..), ..)` as a full scan: a run that reads every batch
back that way is quadratic. Here both servers' tables (composite key (id INT, created DATE), a child by foreign
key) are filled after ANALYZE with STATS_PERSISTENT=1 and STATS_AUTO_RECALC=0, then reopened (RENAME TABLE ..
TO .., .. TO ..) so that SHOW TABLE STATUS says a few rows. Runs of archive (the one-pass DELETE .. RETURNING
path and the portable path with the locked re-read and the key-list DELETE), a recovery after a crash between
copy and delete, a copy-only run and its sweep send the statements; the servers' general logs give their exact
text, and each is EXPLAINed on the stale tables:
  * every row of the plan on one of the job's tables is range/ref/eq_ref/const on PRIMARY or the foreign key's
    index (never ALL, never `index`, a scan of the whole index);
  * the statement kinds the issue names were all seen: the verification read-back, the locked re-read, the
    key-list DELETE, the removal of archived copies, recovery's reads and the copy sweep's; and the locked count
    of the rows of a table outside the job (ev_ref) that reference the batch's roots, which keep those roots.
MariaDB's single-table DELETE .. RETURNING takes no index hint and has no join form: the run EXPLAINs each
table's first one and, where it would scan a table of 10,000 rows or more (counted), sends none and deletes
through the join after the locked re-read; any it does send is checked like the rest.
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402
from test_key_lists import GeneralLog  # noqa: E402

STALE = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 STATS_PERSISTENT=1 STATS_AUTO_RECALC=0"
SCHEMA = [
    f"CREATE TABLE ev (id INT NOT NULL, created DATE NOT NULL, payload VARCHAR(40) NOT NULL, "
    f"PRIMARY KEY (id, created), KEY by_created (created)) {STALE}",
    f"CREATE TABLE ev_note (id INT NOT NULL PRIMARY KEY, ev_id INT NOT NULL, ev_created DATE NOT NULL, "
    f"note VARCHAR(20) NOT NULL, KEY fk_ev (ev_id, ev_created), "
    f"FOREIGN KEY (ev_id, ev_created) REFERENCES ev (id, created)) {STALE}",
    # A table outside the job whose rows reference ev: the roots they reference stay (holds), read by its index.
    f"CREATE TABLE ev_ref (id INT NOT NULL PRIMARY KEY, ev_id INT NOT NULL, ev_created DATE NOT NULL, "
    f"KEY fk_ev (ev_id, ev_created), FOREIGN KEY (ev_id, ev_created) REFERENCES ev (id, created)) {STALE}",
    # A one-column key with gaps (every third id): its batches go by key list in one DELETE .. RETURNING.
    f"CREATE TABLE lg (id INT NOT NULL PRIMARY KEY, at DATETIME NOT NULL, msg VARCHAR(40) NOT NULL, KEY by_at (at)) "
    f"{STALE}",
    # The events table of issue 34: key (id, DATE), an index on the DATE, no child. Its batches go by ranges of
    # the leading id in one DELETE .. RETURNING each, EXPLAINed: they must stay on PRIMARY.
    f"CREATE TABLE ev_day (id INT NOT NULL, created DATE NOT NULL, payload VARCHAR(40) NOT NULL, "
    f"PRIMARY KEY (id, created), KEY by_created (created)) {STALE}",
]
TABLES = ["ev", "ev_note", "ev_ref", "lg", "ev_day"]
INDEX_TYPES = {"range", "ref", "eq_ref", "const", "system", "unique_subquery", "index_subquery"}
ROWS = 60000  # both tables above 10,000 rows: a scan of a smaller table may be the right plan


def fill(sc, server, first, last):
    run = sc.src if server == "source" else sc.dst
    run(f"INSERT INTO ev SELECT seq, '2020-01-01' + INTERVAL (seq DIV 50) DAY, REPEAT('p', 30) "
        f"FROM seq_{first}_to_{last}")
    run(f"INSERT INTO ev_note SELECT seq, seq, '2020-01-01' + INTERVAL (seq DIV 50) DAY, 'n' "
        f"FROM seq_{first}_to_{last} WHERE seq MOD 3 = 0")
    run(f"INSERT INTO ev_ref SELECT seq, seq, '2020-01-01' + INTERVAL (seq DIV 50) DAY "
        f"FROM seq_{first}_to_{last} WHERE seq MOD 997 = 0")
    run(f"INSERT INTO lg SELECT 3 * seq, '2020-01-01' + INTERVAL seq MINUTE, 'm' FROM seq_{first}_to_{last}")
    run(f"INSERT INTO ev_day SELECT seq, '2020-01-01' + INTERVAL (seq DIV 50) DAY, REPEAT('d', 30) "
        f"FROM seq_{first}_to_{last}")


def make_stale(sc, server):
    """Statistics of a 40-row table on a table of many more: ANALYZE, fill, reopen (no recalculation)."""
    run = sc.src if server == "source" else sc.dst
    for t in TABLES:
        run(f"RENAME TABLE {t} TO {t}_x, {t}_x TO {t}")


class IndexUseTest(unittest.TestCase):
    def setUp(self):
        sc = self.sc = Scenario(self, "indexuse")
        for ddl in SCHEMA:
            sc.both(ddl)
        fill(sc, "source", 1, 40)
        fill(sc, "destination", 1000001, 1000040)
        for t in TABLES:
            sc.src(f"ANALYZE TABLE {t}")
            sc.dst(f"ANALYZE TABLE {t}")
        fill(sc, "source", 41, ROWS)
        # The archive already holds many older rows (none of the source's keys).
        fill(sc, "destination", 1000041, 1000000 + ROWS)
        make_stale(sc, "source")
        make_stale(sc, "destination")
        for server in ("source", "destination"):
            db = sc.src_db if server == "source" else sc.dst_db
            rows = gatest.sql(server, f"SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                                      f"AND TABLE_NAME = 'ev'", (db,))[0][0]
            self.assertLess(rows, 1000, f"{server}: the statistics of ev are not stale ({rows} rows)")
        self.before = sc.snapshot(TABLES)
        self.logs = {s: GeneralLog(self, s) for s in ("source", "destination")}

    def config(self, where):
        return self.sc.config({"j": {"root_table": "ev", "where": where, "relations": [
            {"table": "ev_note", "foreign_key": ["ev_id", "ev_created"]}]}},
            processing={"batch_size": 1000})

    def statements(self, server):
        db = self.sc.src_db if server == "source" else self.sc.dst_db
        out = []
        for logged in self.logs[server].statements(gatest.quote_ident(db) + ".`ev"):
            stmt = re.sub(r"^\s*/\*.*?\*/\s*", "", logged).strip()
            if not re.match(r"(SELECT|DELETE)\b", stmt) or "information_schema" in stmt:
                continue
            if " NOT EXISTS " in stmt:
                continue  # a whole-table check (orphans), a scan by design
            # By key: a key list, a key range, the join on the key, the keyset walk, an equality on a column.
            if re.search(r" IN \(|BETWEEN| STRAIGHT_JOIN |` = |` > |` >= ", stmt):
                out.append(stmt)
        return out

    def explain(self, server, stmt):
        conn = gatest.connect(server)
        try:
            with conn.cursor() as cur:
                cur.execute("EXPLAIN " + stmt)
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row)) for row in cur.fetchall()]
        finally:
            conn.close()

    def kind(self, stmt):
        if stmt.startswith("DELETE") and " RETURNING " in stmt:
            return "DELETE RETURNING"
        if stmt.startswith("DELETE") and " STRAIGHT_JOIN " in stmt:
            return "DELETE (join)"
        if stmt.startswith("DELETE"):
            return "DELETE"
        kind = "SELECT"
        if " STRAIGHT_JOIN " in stmt:
            kind += " (join)"
        if stmt.endswith("FOR UPDATE"):
            kind += " FOR UPDATE"
        if stmt.endswith("LOCK IN SHARE MODE"):
            kind += " LOCK IN SHARE MODE"  # the count of rows outside the job that reference the batch (holds)
        return kind

    def check(self, server, stmt, seen):
        kind = self.kind(stmt)
        seen.add((server, kind))
        plan = self.explain(server, stmt)
        if os.environ.get("GA_SHOW_PLANS"):
            print(server, kind, stmt[:60], stmt[-120:], [(r["table"], r["type"], r["key"]) for r in plan], file=sys.stderr)
        where = f"{server}: {stmt[:220]}...: EXPLAIN {plan}"
        for row in plan:
            if row["table"] is None:
                continue  # nothing read ("Impossible WHERE", "Zero limit")
            table = str(row["table"])
            if table.startswith("<derived") or row["select_type"] in ("DERIVED", "UNION", "UNION RESULT"):
                continue  # the join's list of keys
            self.assertIn(row["type"], INDEX_TYPES, where)
            self.assertIn(row["key"], ("PRIMARY", "fk_ev"), where)

    def run_all_forms(self):
        sc = self.sc
        cfg = self.config("created < '2020-06-01'")
        # A crash between the copy's commit and the delete: the rerun's recovery reads both sides by key.
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_copy_commit:2"})
        self.assertNotEqual(r.rc, 0, r)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        # MariaDB's one-pass DELETE .. RETURNING takes no hint: EXPLAINed first, it would scan the stale table,
        # and the run deletes through the key's index after the locked re-read instead. (ev, whose key has a
        # DATE column with an index of its own, takes the locked re-read from the start.)
        lg = sc.config({"lg": {"root_table": "lg", "where": "at < '2020-01-20'"}}, processing={"batch_size": 1000})
        r = sc.job("archive", lg, "lg")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("would have DELETE ... RETURNING read all of lg", r.err, r)
        # A key (id, DATE) with an index on the DATE: by ranges of the leading id, DELETE .. RETURNING.
        dd = sc.config({"d": {"root_table": "ev_day", "where": "created < '2020-03-01'"}},
                       processing={"batch_size": 1000})
        r = sc.job("archive", dd, "d")
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("would have DELETE ... RETURNING read", r.err, r)
        self.assertEqual(sc.count("destination", "ev_day") - ROWS, 2999)  # ids 1 .. 2999: created before March
        # The portable path: the locked re-read and the key-list DELETE.
        cfg2 = self.config("created < '2020-09-01'")
        r = sc.job("archive", cfg2, env={"GOARCHIVE_TEST_PORTABLE": "1"})
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(self.before, [("ev_note", ["ev_id", "ev_created"], "ev", ["id", "created"])])
        self.assertEqual(sc.count("destination", "lg") - ROWS, 27359)  # 2020-01-01 00:01 .. 2020-01-19 23:59

    def test_every_keyed_statement_uses_its_index(self):
        self.run_all_forms()
        seen = set()
        for server in ("source", "destination"):
            stmts = self.statements(server)
            self.assertTrue(stmts, f"no keyed statements in the {server}'s general log")
            for stmt in stmts:
                self.check(server, stmt, seen)
        # The verification read-back, the locked re-read, the key-list DELETE and the removal of the copies the
        # interrupted batch left (recovery).
        for expected in (("destination", "SELECT"), ("source", "SELECT FOR UPDATE"), ("source", "DELETE (join)"),
                         ("destination", "DELETE (join)"), ("source", "DELETE RETURNING"),
                         ("source", "SELECT LOCK IN SHARE MODE")):
            self.assertIn(expected, seen, f"the runs sent no {expected}: {sorted(seen)}")

    def test_copy_sweep_and_removal_of_copies(self):
        """copy-only, then the rows change in the source: the sweep reads the source by key and removes the stale
        copies from the archive (DELETE through the join)."""
        sc = self.sc
        cfg = self.config("created < '2020-03-01'")
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        sc.src("DELETE FROM ev_note WHERE ev_id <= 200")
        sc.src("DELETE FROM ev WHERE id <= 200")
        r = sc.job("copy-only", cfg)
        self.assertIn(r.rc, (0, 1), r)
        seen = set()
        for server in ("source", "destination"):
            for stmt in self.statements(server):
                self.check(server, stmt, seen)
        self.assertIn(("destination", "SELECT"), seen, sorted(seen))
        self.assertIn(("source", "SELECT (join)"), seen, sorted(seen))  # the sweep's key-only read


if __name__ == "__main__":
    unittest.main()
