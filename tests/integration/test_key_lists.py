#!/usr/bin/python3
"""Key lists on the real server: every statement the engine sends with a list of keys (verify reads, the locked
re-read SELECT .. FOR UPDATE, child discovery by foreign key with and without the `c` alias, DELETE by primary
key) is an index read, and the rows it matches are exactly the expected ones.

The statements are taken from the servers' general log of a real run (so this checks the text the engine sends,
not a copy of the builder), then each is EXPLAINed and replayed in a rolled-back transaction:
  * every EXPLAIN row is range/ref/eq_ref/const on PRIMARY or the foreign key's index, and no <subquery>/<derived>
    row appears (MariaDB's IN-to-semi-join rewrite of IN lists of 1000 or more values);
  * Handler_read_rnd_next does not move (no table scan, no temporary table read);
  * a read by primary key on the destination returns one row per key in its list.
Keys cover composite (INT, DATE) and (VARCHAR, INT) primary keys, a CHAR(36) key with more than 1000 keys per
batch, VARBINARY keys with 0x00/0xFF bytes, and 'abc' / 'ABC ' under utf8mb4_general_ci (PAD SPACE).
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
SCHEMA = [
    f"CREATE TABLE emp (emp_no INT PRIMARY KEY, hire_date DATE NOT NULL) {INNODB}",
    f"CREATE TABLE sal (emp_no INT NOT NULL, from_date DATE NOT NULL, salary INT NOT NULL, "
    f"PRIMARY KEY (emp_no, from_date), FOREIGN KEY (emp_no) REFERENCES emp (emp_no)) {INNODB}",
    f"CREATE TABLE sal_note (id INT PRIMARY KEY, emp_no INT NOT NULL, from_date DATE NOT NULL, "
    f"KEY fk_sal (emp_no, from_date), FOREIGN KEY (emp_no, from_date) REFERENCES sal (emp_no, from_date)) {INNODB}",
    f"CREATE TABLE acct (name VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL, n INT NOT NULL, y INT NOT NULL, "
    f"PRIMARY KEY (name, n)) {INNODB}",
    f"CREATE TABLE acct_log (id INT PRIMARY KEY, name VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL, n INT NOT NULL, "
    f"KEY fk_acct (name, n)) {INNODB}",
    f"CREATE TABLE doc (id CHAR(36) PRIMARY KEY, old TINYINT NOT NULL) {INNODB}",
    f"CREATE TABLE doc_part (id INT PRIMARY KEY, doc_id CHAR(36) NOT NULL, KEY fk_doc (doc_id)) {INNODB}",
    f"CREATE TABLE blobkey (b VARBINARY(8) NOT NULL, n INT NOT NULL, old TINYINT NOT NULL, PRIMARY KEY (b, n)) {INNODB}",
    f"CREATE TABLE blob_part (id INT PRIMARY KEY, b VARBINARY(8) NOT NULL, n INT NOT NULL, KEY fk_blob (b, n)) {INNODB}",
]
TABLES = ["emp", "sal", "sal_note", "acct", "acct_log", "doc", "doc_part", "blobkey", "blob_part"]
FK_INDEXES = {"sal": "PRIMARY", "sal_note": "fk_sal", "acct_log": "fk_acct", "doc_part": "fk_doc", "blob_part": "fk_blob"}
INDEX_TYPES = {"range", "ref", "eq_ref", "const"}
# Byte strings that differ only in 0x00/0xFF/space padding: each must match itself and nothing else.
EDGE_BLOBS = [b"\x00", b"\x00\x00", b"\xff", b"\x00\xff", b"\xff\x00", b"", b" ", b"\x00 ", b"\xff\xff\xff\xff"]


class GeneralLog:
    """Turns on the general log (to mysql.general_log) of SERVER for the test and puts it back as it was."""

    def __init__(self, test, server):
        self.server = server
        self.saved = gatest.sql(server, "SELECT @@global.general_log, @@global.log_output")[0]
        self.had_rows = gatest.sql(server, "SELECT COUNT(*) FROM mysql.general_log")[0][0] > 0
        gatest.sql(server, "SET GLOBAL log_output = 'TABLE'")
        gatest.sql(server, "SET GLOBAL general_log = ON")
        test.addCleanup(self.restore)

    def restore(self):
        gatest.sql(self.server, "SET GLOBAL general_log = OFF")
        if not self.had_rows:
            gatest.sql(self.server, "TRUNCATE TABLE mysql.general_log")
        gatest.sql(self.server, f"SET GLOBAL log_output = '{self.saved[1]}'")
        gatest.sql(self.server, f"SET GLOBAL general_log = {int(self.saved[0])}")

    def statements(self, needle):
        rows = gatest.sql(self.server, "SELECT argument FROM mysql.general_log WHERE command_type = 'Query' "
                                       "AND LOCATE(%s, argument) > 0", (needle,))
        return [r[0].decode("utf-8") if isinstance(r[0], (bytes, bytearray)) else r[0] for r in rows]


def shape(stmt):
    if stmt.startswith("DELETE"):
        return "DELETE"
    kind = "SELECT"
    if " JOIN " in stmt:
        kind += " JOIN (alias c)"
    elif re.search(r"WHERE \(?c\.`", stmt):
        kind += " (alias c)"
    if stmt.rstrip().endswith("FOR UPDATE"):
        kind += " FOR UPDATE"
    return kind


def keys_in(stmt):
    """The number of keys in STMT's key lists (the test's key values hold no commas or parentheses)."""
    where = stmt.split(" WHERE ", 1)[1]
    n = 0
    for lst in re.findall(r"\) IN \((.*?\))\)", where):
        n += lst.count("),(") + 1
    for lst in re.findall(r"`\w+` IN \(([^()]*)\)", where):
        n += lst.count(",") + 1
    n += len(re.findall(r"\(`\w+` = [^()]* AND [^()]*\)", where))
    return n


class KeyListTest(unittest.TestCase):
    def setUp(self):
        sc = self.sc = Scenario(self, "keylists")
        for ddl in SCHEMA:
            sc.both(ddl)
        # 20000 employees, the first 1100 archived in one batch; 10 salaries each for the first 3000: 11000
        # archived salaries, lists of 1000 (INT, DATE) keys. Each table keeps many more rows than a list holds, as in production: on a small table a scan is cheaper.
        sc.src("INSERT INTO emp SELECT seq, '1985-01-01' + INTERVAL seq DAY FROM seq_1_to_20000")
        sc.src("INSERT INTO sal SELECT e.emp_no, e.hire_date + INTERVAL s.seq YEAR, 1000 * s.seq FROM emp e "
               "JOIN seq_0_to_9 s WHERE e.emp_no <= 3000")
        sc.src("INSERT INTO sal_note SELECT ROW_NUMBER() OVER (ORDER BY emp_no, from_date), emp_no, from_date "
               "FROM sal")
        # (VARCHAR, INT) keys; children reference ('ABC ', 1) as 'abc', 'ABC ' and 'Abc' (equal under general_ci).
        sc.src("INSERT INTO acct SELECT CONCAT('u', LPAD(seq DIV 2, 5, '0')), seq MOD 2, seq < 1400 FROM seq_0_to_19999")
        sc.src("INSERT INTO acct VALUES ('ABC ', 1, 1), ('abd', 1, 0)")
        sc.src("INSERT INTO acct_log SELECT seq, name, n FROM (SELECT ROW_NUMBER() OVER (ORDER BY name, n) seq, "
               "name, n FROM acct WHERE name LIKE 'u%') a")
        sc.src("INSERT INTO acct_log VALUES (100001, 'abc', 1), (100002, 'ABC ', 1), (100003, 'Abc', 1), "
               "(100004, 'abd', 1)")
        # CHAR(36) keys: 1200 archived roots in one batch, more than one IN list of 999.
        sc.src("INSERT INTO doc SELECT UUID(), seq <= 1200 FROM seq_1_to_20000")
        sc.src("INSERT INTO doc_part SELECT ROW_NUMBER() OVER (ORDER BY d.id), d.id FROM doc d JOIN seq_1_to_2")
        # VARBINARY keys: edge values plus filler; old = 1 for the edge values with n = 0 and for 1000 fillers.
        for i, b in enumerate(EDGE_BLOBS):
            for n in (0, 1):
                sc.src("INSERT INTO blobkey VALUES (%s, %s, %s)", (b, n, 1 if n == 0 else 0))
                sc.src("INSERT INTO blob_part VALUES (%s, %s, %s)", (1000000 + 2 * i + n, b, n))
        sc.src("INSERT INTO blobkey SELECT CONCAT('f', UNHEX(LPAD(HEX(seq), 6, '0'))), seq MOD 3, seq <= 1000 "
               "FROM seq_1_to_20000")
        sc.src("INSERT INTO blob_part SELECT seq, CONCAT('f', UNHEX(LPAD(HEX(seq), 6, '0'))), seq MOD 3 "
               "FROM seq_1_to_20000")
        # The archive already holds older rows (none of the source's keys), as it does after the first runs.
        sc.dst("INSERT INTO emp SELECT 100000 + seq, '1980-01-01' FROM seq_1_to_20000")
        sc.dst("INSERT INTO sal SELECT 100000 + e.seq, '1980-01-01' + INTERVAL s.seq YEAR, 1 FROM seq_1_to_2000 e "
               "JOIN seq_0_to_9 s")
        sc.dst("INSERT INTO sal_note SELECT 1000000 + ROW_NUMBER() OVER (ORDER BY emp_no, from_date), emp_no, from_date "
               "FROM sal")
        sc.dst("INSERT INTO acct SELECT CONCAT('z', seq), 0, 1 FROM seq_1_to_20000")
        sc.dst("INSERT INTO acct_log SELECT 1000000 + seq, CONCAT('z', seq), 0 FROM seq_1_to_20000")
        sc.dst("INSERT INTO doc SELECT CONCAT('old-', seq), 1 FROM seq_1_to_20000")
        sc.dst("INSERT INTO doc_part SELECT 1000000 + seq, CONCAT('old-', seq) FROM seq_1_to_20000")
        sc.dst("INSERT INTO blobkey SELECT CONCAT('g', seq), 0, 1 FROM seq_1_to_20000")
        sc.dst("INSERT INTO blob_part SELECT 2000000 + seq, CONCAT('g', seq), 0 FROM seq_1_to_20000")
        self.prefilled = {t: set(sc.rows("destination", t)) for t in TABLES}
        for t in TABLES:
            sc.src(f"ANALYZE TABLE {t}")
            sc.dst(f"ANALYZE TABLE {t}")
        self.before = sc.snapshot(TABLES)
        self.cfg = sc.config({
            "emp": {"root_table": "emp", "where": "emp_no <= 1100", "relations": [
                {"table": "sal", "foreign_key": "emp_no"},
                {"table": "sal_note", "parent": "sal", "foreign_key": ["emp_no", "from_date"]}]},
            "acct": {"root_table": "acct", "where": "y = 1", "relations": [
                {"table": "acct_log", "foreign_key": ["name", "n"]}]},
            "doc": {"root_table": "doc", "where": "old = 1", "relations": [
                {"table": "doc_part", "foreign_key": "doc_id"}]},
            "blob": {"root_table": "blobkey", "where": "old = 1", "relations": [
                {"table": "blob_part", "foreign_key": ["b", "n"]}]},
        }, processing={"batch_size": 1500})
        self.logs = {s: GeneralLog(self, s) for s in ("source", "destination")}

    def archive_all(self):
        for job in ("emp", "acct", "doc", "blob"):
            r = self.sc.job("archive", self.cfg, job)
            self.assertEqual(r.rc, 0, r)
        self.assertEqual(self.sc.unfinished(), 0)

    def key_list_statements(self, server):
        db = self.sc.src_db if server == "source" else self.sc.dst_db
        out = []
        for logged in self.logs[server].statements(gatest.quote_ident(db) + "."):
            stmt = re.sub(r"^\s*/\*.*?\*/\s*", "", logged)  # the goarchive tag
            if not re.match(r"\s*(SELECT|DELETE)\b", stmt) or "ORDER BY" in stmt or " WHERE " not in stmt:
                continue
            if re.search(r" IN \(|` = ", stmt.split(" WHERE ", 1)[1]):
                out.append(stmt)
        return out

    def test_rows_are_exactly_the_expected_ones(self):
        self.archive_all()
        sc, b = self.sc, self.before
        moved = {
            "emp": [k for k in b["emp"] if k[0] <= 1100],
            "sal": [k for k in b["sal"] if k[0] <= 1100],
            "sal_note": [k for k, row in b["sal_note"].items() if row[1] <= 1100],
            "acct": [k for k, row in b["acct"].items() if row[2] == 1],
            "doc": [k for k, row in b["doc"].items() if row[1] == 1],
            "blobkey": [k for k, row in b["blobkey"].items() if row[2] == 1],
        }
        moved["acct_log"] = [k for k, row in b["acct_log"].items()
                             if (row[1].rstrip().lower(), row[2]) in {(a.rstrip().lower(), n) for a, n in moved["acct"]}]
        moved["doc_part"] = [k for k, row in b["doc_part"].items() if (row[1],) in set(moved["doc"])]
        moved["blob_part"] = [k for k, row in b["blob_part"].items() if (row[1], row[2]) in set(moved["blobkey"])]
        for table, keys in moved.items():
            dst = set(sc.rows("destination", table)) - self.prefilled[table]
            self.assertEqual(dst, set(keys), f"{table}: destination keys")
            self.assertFalse(set(sc.rows("source", table)) & set(keys), f"{table}: archived keys left in the source")
        # The collation edge case: all three spellings followed ('ABC ', 1); 'abd' stayed.
        self.assertEqual(sorted(k[0] for k in moved["acct_log"] if k[0] > 100000), [100001, 100002, 100003])
        # The binary edge case: each edge value with n = 0 moved, its n = 1 twin and every look-alike stayed.
        self.assertEqual(sorted(k for k in moved["blobkey"] if not k[0].startswith(b"f")),
                         sorted((e, 0) for e in EDGE_BLOBS))
        self.assertEqual(len(moved["doc"]), 1200)
        sc.assert_invariant(b, [("sal", ["emp_no"], "emp", ["emp_no"]),
                                ("sal_note", ["emp_no", "from_date"], "sal", ["emp_no", "from_date"]),
                                ("doc_part", ["doc_id"], "doc", ["id"]),
                                ("blob_part", ["b", "n"], "blobkey", ["b", "n"])])

    def test_every_key_list_statement_reads_the_index(self):
        self.archive_all()
        seen = set()
        for server in ("source", "destination"):
            stmts = self.key_list_statements(server)
            self.assertTrue(stmts, f"no key-list statements in the {server}'s general log")
            conn = gatest.connect(server, autocommit=False)
            try:
                with conn.cursor() as cur:
                    for stmt in stmts:
                        table = re.search(r"(?:FROM|JOIN) `[^`]+`\.`(\w+)`", stmt).group(1)
                        seen.add((server, shape(stmt), table))
                        self.check_plan(cur, stmt)
                        self.check_replay(cur, server, stmt)
            finally:
                conn.close()
        shapes = {s for _, s, _ in seen}
        for expected in ("SELECT", "SELECT FOR UPDATE", "SELECT JOIN (alias c)", "SELECT JOIN (alias c) FOR UPDATE",
                         "DELETE"):
            self.assertIn(expected, shapes, f"the run sent no {expected} with a key list: {sorted(seen)}")
        self.assertIn(("source", "DELETE", "sal"), seen)

    def check_plan(self, cur, stmt):
        cur.execute("EXPLAIN " + stmt)
        names = [d[0] for d in cur.description]
        for row in cur.fetchall():
            r = dict(zip(names, row))
            where = f"{stmt[:160]}...: EXPLAIN {r}"
            self.assertNotRegex(str(r["table"]), r"^<(subquery|derived)", where)
            self.assertIn(r["type"], INDEX_TYPES, where)
            alias = r["table"]
            self.assertTrue(r["key"] == "PRIMARY" or r["key"] in FK_INDEXES.values(), where)
            if alias == "c":
                child = re.search(r"FROM `[^`]+`\.`(\w+)` AS c", stmt).group(1)
                self.assertEqual(r["key"], FK_INDEXES[child], where)

    def check_replay(self, cur, server, stmt):
        def rnd_next():
            cur.execute("SHOW SESSION STATUS LIKE 'Handler_read_rnd_next'")
            return int(cur.fetchone()[1])

        # SHOW STATUS reads a temporary table of its own: the same number of rows each time.
        first = rnd_next()
        per_show = rnd_next() - first
        before = first + per_show
        cur.execute("BEGIN")
        cur.execute(stmt)
        got = cur.rowcount if stmt.startswith("DELETE") else len(cur.fetchall())
        cur.execute("ROLLBACK")
        scanned = rnd_next() - before - per_show
        self.assertEqual(scanned, 0, f"{server}: {stmt[:200]}... read {scanned} rows outside an index")
        table = re.search(r"FROM `[^`]+`\.`(\w+)`", stmt).group(1)
        db = self.sc.src_db if server == "source" else self.sc.dst_db
        if server == "destination" and stmt.startswith("SELECT") and "COUNT(" not in stmt and \
                list_columns(stmt) == gatest.primary_key(server, db, table):
            self.assertEqual(got, keys_in(stmt), f"destination: {stmt[:200]}...")


def list_columns(stmt):
    """The columns of STMT's first key list."""
    where = stmt.split(" WHERE ", 1)[1]
    m = re.search(r"\(((?:[c.]*`\w+`(?:, )?)+)\) IN \(\(", where) or re.search(r"([c.]*`\w+`) IN \(", where)
    if m:
        return re.findall(r"`(\w+)`", m.group(1))
    m = re.search(r"\(([^()]*)\)", where)
    return re.findall(r"`(\w+)` = ", m.group(1)) if m else []


if __name__ == "__main__":
    unittest.main()
