"""A throw-away scenario for integration and end-to-end tests: its own source database, destination database
and tracking schema (job_schema) on the shared test servers, a config file, the goarchive binary, and the data
invariant check that every fault test ends with.

    sc = Scenario(self, "single")
    sc.both("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB")
    sc.src("INSERT INTO t VALUES (1,'a'),(2,'b')")
    before = sc.snapshot(["t"])
    cfg = sc.config({"j": {"root_table": "t", "where": "id < 2"}})
    r = sc.run("archive", "-c", cfg, "-j", "j")
    sc.assert_invariant(before, relations=[])
"""

import json
import os
import shutil
import subprocess
import tempfile
import uuid

import gatest

BIN = os.environ.get("GOARCHIVE_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "goarchive"
)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    s = str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{s}"'


class Result:
    def __init__(self, proc_result):
        self.rc = proc_result.returncode
        self.out = proc_result.stdout
        self.err = proc_result.stderr

    def __repr__(self):
        return f"rc={self.rc}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


class Snapshot(dict):
    """{table: {key: row}}, with `stored` ({table: {pk_hex: sha}}) and `columns` ({table: [column]}): see
    Scenario.snapshot."""
    stored = {}
    columns = {}
    taken = {}

    def only(self, *tables):
        """The same snapshot of TABLES alone."""
        part = Snapshot({t: self[t] for t in tables})
        part.stored = {t: self.stored[t] for t in tables}
        part.columns = {t: self.columns[t] for t in tables}
        part.taken = {t: self.taken[t] for t in tables}
        return part


class Scenario:
    def __init__(self, test, tag):
        gatest.require_env()
        self.test = test
        self.id = f"{tag}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.src_db = f"s_{self.id}"
        self.dst_db = f"d_{self.id}"
        self.job_schema = f"ga_{self.id}"
        self.tmp = tempfile.mkdtemp(prefix="goarchive-test-")
        gatest.sql("source", f"CREATE DATABASE {gatest.quote_ident(self.src_db)}")
        gatest.sql("destination", f"CREATE DATABASE {gatest.quote_ident(self.dst_db)}")
        test.addCleanup(self.cleanup)

    # -- SQL ---------------------------------------------------------------------------------------------------
    def src(self, stmt, args=None):
        return gatest.sql("source", stmt, args, db=self.src_db)

    def dst(self, stmt, args=None):
        return gatest.sql("destination", stmt, args, db=self.dst_db)

    def both(self, stmt):
        """Runs a DDL statement on the source and the destination databases."""
        self.src(stmt)
        self.dst(stmt)

    def count(self, server, table):
        db = self.src_db if server == "source" else self.dst_db
        return gatest.sql(server, f"SELECT COUNT(*) FROM {gatest.quote_ident(db)}.{gatest.quote_ident(table)}")[0][0]

    # -- config and binary -------------------------------------------------------------------------------------
    def config(self, jobs, processing=None, verification="sha256", destination=None, source=None, extra=""):
        """Writes a config file for JOBS ({name: {key: value, "relations": [ {..}, ..]}}); returns its path."""
        host = os.environ.get("GA_HOST", "127.0.0.1")
        lines = ["[source]", f'host = "{host}"', f"port = {gatest.env('GA_SOURCE_PORT')}",
                 f'user = "{gatest.env("GA_USER")}"', 'password_env = "GA_PASSWORD"', f'database = "{self.src_db}"']
        for k, v in (source or {}).items():
            lines.append(f"{k} = {toml_value(v)}")
        lines += ["", "[destination]", f'host = "{host}"', f"port = {gatest.env('GA_DEST_PORT')}",
                  f'user = "{gatest.env("GA_USER")}"', 'password_env = "GA_PASSWORD"', f'database = "{self.dst_db}"',
                  f'job_schema = "{self.job_schema}"']
        for k, v in (destination or {}).items():
            lines.append(f"{k} = {toml_value(v)}")
        lines += ["", "[processing]"]
        for k, v in (processing or {}).items():
            lines.append(f"{k} = {toml_value(v)}")
        lines += ["", "[verification]", f'method = "{verification}"', ""]
        for name, job in jobs.items():
            lines.append(f"[jobs.{name}]")
            for k, v in job.items():
                if k != "relations":
                    lines.append(f"{k} = {toml_value(v)}")
            for rel in job.get("relations", []):
                lines += ["", f"[[jobs.{name}.relations]]"]
                for k, v in rel.items():
                    lines.append(f"{k} = {toml_value(v)}")
            lines.append("")
        path = os.path.join(self.tmp, f"{uuid.uuid4().hex[:8]}.toml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n" + extra)
        return path

    def run(self, *args, env=None, timeout=300, input=None):
        e = dict(os.environ)
        e.update(env or {})
        return Result(subprocess.run([BIN, *args], capture_output=True, text=True, env=e, timeout=timeout,
                                     input=input))

    def job(self, command, cfg, job="j", *args, env=None):
        """`goarchive COMMAND -c CFG -j JOB --no-progress ARGS...`."""
        return self.run(command, "-c", cfg, "-j", job, "--no-progress", *args, env=env)

    def jobs_json(self, cfg):
        """`goarchive jobs -c CFG --format json`, parsed: {job name: job object}."""
        r = self.run("jobs", "-c", cfg, "--format", "json")
        self.test.assertEqual(r.rc, 0, r)
        return {j["job"]: j for j in json.loads(r.out)["jobs"]}

    def start(self, *args, env=None):
        """Starts goarchive in the background; returns the Popen (text pipes)."""
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)

    # -- the data invariant ------------------------------------------------------------------------------------
    def rows(self, server, table):
        """{primary key tuple: full row tuple} of TABLE on SERVER."""
        db = self.src_db if server == "source" else self.dst_db
        pk = gatest.primary_key(server, db, table)
        cols = gatest.columns(server, db, table)
        idx = [cols.index(c) for c in pk]
        # An explicit column list: SELECT * leaves out INVISIBLE columns (MariaDB).
        cols_sql = ", ".join(gatest.quote_ident(c) for c in cols)
        out = {}
        for row in gatest.sql(server, f"SELECT {cols_sql} FROM {gatest.quote_ident(db)}.{gatest.quote_ident(table)}"):
            out[tuple(row[i] for i in idx)] = tuple(row)
        return out

    def raw_rows(self, server, table):
        """{primary key tuple: row} of TABLE on SERVER with every column (invisible and generated ones too) as the
        exact bytes the server sends for it (CAST(.. AS BINARY), session time_zone +00:00), NULL as None."""
        db = self.src_db if server == "source" else self.dst_db
        q = gatest.quote_ident
        pk = gatest.primary_key(server, db, table)
        cols = gatest.columns(server, db, table)
        idx = [cols.index(c) for c in pk]
        conn = gatest.connect(server, db)
        try:
            with conn.cursor() as cur:
                cur.execute("SET time_zone = '+00:00'")
                cur.execute(f"SELECT {', '.join(f'CAST({q(c)} AS BINARY)' for c in cols)} FROM {q(db)}.{q(table)}")
                return {tuple(r[i] for i in idx): tuple(r) for r in cur.fetchall()}
        finally:
            conn.close()

    def state(self):
        """A fingerprint of everything this scenario owns on both servers: (row count, checksum) of every table of
        the source and destination databases, and whether the job_schema database exists."""
        out = {}
        for server, db in (("source", self.src_db), ("destination", self.dst_db)):
            tables = [r[0] for r in gatest.sql(server, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE "
                                                       "TABLE_SCHEMA=%s AND TABLE_TYPE='BASE TABLE' ORDER BY 1", (db,))]
            for t in tables:
                out[(server, t)] = gatest.checksum_table(server, db, t)
        out["job_schema exists"] = self.job_schema_exists()
        return out

    def job_schema_exists(self):
        return bool(gatest.sql("destination", "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=%s",
                               (self.job_schema,))[0][0])

    def snapshot(self, tables):
        """The source's rows of every table, to compare against after a run: {table: {key: row}} as pymysql reads
        them, and (attribute `stored`) each row's checksum as the source computes it on its stored bytes
        (gatest.stored_checksums), with the column list it covers (attribute `columns`)."""
        snap = Snapshot({t: self.rows("source", t) for t in tables})
        snap.columns = {t: [c for c, _, _ in gatest.column_types("source", self.src_db, t)] for t in tables}
        snap.stored = {t: gatest.stored_checksums("source", self.src_db, t) for t in tables}
        snap.taken = {t: dict(rows) for t, rows in snap.items()}
        return snap

    def assert_invariant(self, original, relations=(), allow_changed=()):
        """Every original row is in exactly one of source or destination, unchanged; no child is orphaned.

        RELATIONS: (child, [fk cols], parent, [referenced cols]) tuples for the orphan check.
        """
        t = self.test
        # A snapshot whose tables are all empty (taken before the data was loaded) would check nothing; {} asks
        # for the orphan check alone.
        if original:
            t.assertTrue(any(original.values()), f"the snapshot of {sorted(original)} holds no row: nothing to check")
        for table, before in original.items():
            src = self.rows("source", table)
            dst = self.rows("destination", table)
            for key, row in before.items():
                in_src, in_dst = key in src, key in dst
                t.assertTrue(in_src != in_dst,
                             f"{table} row {key}: in source={in_src}, in destination={in_dst} (must be exactly one)")
                now = src.get(key) if in_src else dst.get(key)
                if table not in allow_changed:
                    t.assertEqual(now, row, f"{table} row {key} changed")
        self.assert_stored_invariant(original, allow_changed)
        for child, fk, parent, refs in relations:
            for server in ("source", "destination"):
                db = self.src_db if server == "source" else self.dst_db
                q = gatest.quote_ident
                on = " AND ".join(f"p.{q(r)} = c.{q(f)}" for f, r in zip(fk, refs))
                notnull = " AND ".join(f"c.{q(f)} IS NOT NULL" for f in fk)
                n = gatest.sql(server, f"SELECT COUNT(*) FROM {q(db)}.{q(child)} c WHERE {notnull} AND NOT EXISTS "
                                       f"(SELECT 1 FROM {q(db)}.{q(parent)} p WHERE {on})")[0][0]
                t.assertEqual(n, 0, f"{n} orphaned {child} rows (no {parent}) on the {server}")

    def assert_nothing_lost(self, original, relations=()):
        """For runs that copy without deleting too (copy-only beside archive): every original row is in the source,
        the destination or both, each version there unchanged (on the servers' own stored bytes for a snapshot);
        no child is orphaned."""
        t = self.test
        t.assertTrue(any(original.values()), f"the snapshot of {sorted(original)} holds no row: nothing to check")
        for table, before in original.items():
            src, dst = self.rows("source", table), self.rows("destination", table)
            for key, row in before.items():
                t.assertTrue(key in src or key in dst, f"{table} row {key} is in neither server")
                for side in (src, dst):
                    if key in side:
                        t.assertEqual(side[key], row, f"{table} row {key} changed")
            if isinstance(original, Snapshot):
                cols = original.columns[table]
                s_src = gatest.stored_checksums("source", self.src_db, table, columns=cols)
                s_dst = gatest.stored_checksums("destination", self.dst_db, table, columns=cols)
                for key, sha in original.stored[table].items():
                    for side in (s_src, s_dst):
                        if key in side:
                            t.assertEqual(side[key], sha, f"{table} row {key}: its stored bytes changed")
        self.assert_invariant({}, relations)

    def assert_stored_invariant(self, original, allow_changed=()):
        """The invariant on the servers' own stored bytes (a snapshot's `stored` checksums): every original row in
        exactly one of source or destination with the checksum it had, each server computing its own, so that a
        value both sides read through the same lossy conversion (FLOAT digits, a character set) is still seen."""
        if not isinstance(original, Snapshot):
            return
        t = self.test
        for table, before in original.stored.items():
            cols = original.columns[table]
            src = gatest.stored_checksums("source", self.src_db, table, columns=cols)
            dst = gatest.stored_checksums("destination", self.dst_db, table, columns=cols)
            # A table where the test replaced a row in the snapshot (the version an application write made) has
            # its values checked above; the stored checksums are of the old versions: only placement is checked.
            replaced = original[table] != original.taken[table]
            for key, sha in before.items():
                in_src, in_dst = key in src, key in dst
                t.assertTrue(in_src != in_dst, f"{table} row {key} (stored): in source={in_src}, "
                                               f"in destination={in_dst} (must be exactly one)")
                if table not in allow_changed and not replaced:
                    t.assertEqual(src.get(key, dst.get(key)), sha, f"{table} row {key}: its stored bytes changed")

    def unfinished(self):
        """Unfinished roots (copied or deleting) in this scenario's registry; 0 when no run created the registry
        (its job_schema does not exist). Any other error raises: 0 is the passing value of most callers, so a server
        error, a missing table or a renamed column must not read as "nothing unfinished"."""
        if not self.job_schema_exists():
            return 0
        return int(gatest.sql("destination", f"SELECT IFNULL(SUM(roots), 0) FROM "
                                             f"{gatest.quote_ident(self.job_schema)}.batches "
                                             "WHERE state IN ('copied','deleting')")[0][0])

    def cleanup(self):
        if os.environ.get("GA_KEEP_DBS"):  # debugging: leave the databases for a look by hand
            return
        for server, db in (("source", self.src_db), ("destination", self.dst_db), ("destination", self.job_schema)):
            try:
                gatest.sql(server, f"DROP DATABASE IF EXISTS {gatest.quote_ident(db)}")
            except Exception:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


# -- the demo shop tree (examples/shop_schema.sql, examples/shop_data.sql) --------------------------------------
SHOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def statements(path):
    """The statements of an SQL file, without comment lines."""
    text = "\n".join(line for line in _read(path).splitlines() if not line.strip().startswith("--"))
    for stmt in text.split(";"):
        if stmt.strip():
            yield stmt.strip()


def load_shop(sc, orders=300):
    """The demo shop schema on both sides and ORDERS orders (half older than two years) on the source."""
    for stmt in statements(os.path.join(SHOP, "shop_schema.sql")):
        sc.both(stmt)
    for stmt in statements(os.path.join(SHOP, "shop_data.sql")):
        if not stmt.startswith("SET @orders"):
            sc.src(stmt.replace("@orders", str(orders)))


SHOP_TABLES = ["orders", "order_items", "payments", "shipments", "shipment_items"]
SHOP_RELATIONS = [("order_items", ["order_id"], "orders", ["id"]), ("payments", ["order_id"], "orders", ["id"]),
                  ("shipments", ["order_id"], "orders", ["id"]), ("shipment_items", ["shipment_id"], "shipments", ["id"])]
SHOP_JOB = {"root_table": "orders", "where": "created_at < NOW() - INTERVAL 2 YEAR", "relations": [
    {"table": "order_items", "foreign_key": "order_id"},
    {"table": "payments", "foreign_key": "order_id"},
    {"table": "shipments", "foreign_key": "order_id"},
    {"table": "shipment_items", "parent": "shipments", "foreign_key": "shipment_id"}]}




def _read(path):
    with open(path) as f:
        return f.read()
