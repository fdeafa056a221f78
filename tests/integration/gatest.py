"""Shared helpers for the integration tests.

The servers are the ones scripts/servers.sh starts; their addresses come from
the GA_* variables that `eval "$(scripts/servers.sh env)"` exports. A missing
variable is an error, never a skip: a suite that silently tests nothing is
worse than a red one.
"""

import hashlib
import os

import pymysql
import pymysql.cursors

SERVERS = ("source", "replica", "destination")
# The portable pass (README, tests): every goarchive run takes MySQL's choices wherever MariaDB can run them (no
# DELETE ... RETURNING, no bulk INSERT, SHOW REPLICA STATUS, ...). A test of a MariaDB-only path asserts the
# portable one instead, or is skipped with the reason.
PORTABLE = os.environ.get("GOARCHIVE_TEST_PORTABLE") == "1"
_PORT_VARS = {"source": "GA_SOURCE_PORT", "replica": "GA_REPLICA_PORT", "destination": "GA_DEST_PORT"}


def env(var):
    """The value of the GA_* variable VAR; raises when it is unset."""
    value = os.environ.get(var)
    if not value:
        raise RuntimeError(f'{var} is not set: start the servers and run eval "$(scripts/servers.sh env)"')
    return value


def require_env():
    """Raises unless every variable the helpers need is set."""
    for var in ("GA_USER", "GA_PASSWORD", *_PORT_VARS.values()):
        env(var)


def quote_ident(name):
    """NAME as a backquoted SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def connect(name, db=None, autocommit=True, **kwargs):
    """A new pymysql connection over TCP to server NAME as GA_USER."""
    if name not in _PORT_VARS:
        raise ValueError(f"unknown server {name!r}, expected one of {SERVERS}")
    return pymysql.connect(
        host=os.environ.get("GA_HOST", "127.0.0.1"),
        port=int(env(_PORT_VARS[name])),
        user=env("GA_USER"),
        password=env("GA_PASSWORD"),
        database=db,
        autocommit=autocommit,
        charset="utf8mb4",
        connect_timeout=5,
        **kwargs,
    )


def sql(name, stmt, args=None, db=None):
    """Runs STMT (with %s ARGS) on server NAME in a fresh session; returns all rows as tuples."""
    conn = connect(name, db)
    try:
        with conn.cursor() as cur:
            cur.execute(stmt, args)
            return cur.fetchall()
    finally:
        conn.close()


def wait_replica_caught_up(timeout=30):
    """Waits until the replica has applied everything the source has binlogged so far."""
    pos = sql("source", "SELECT @@gtid_binlog_pos")[0][0]
    if not pos:
        return
    # MASTER_GTID_WAIT: 0 = reached, -1 = timed out.
    if sql("replica", "SELECT MASTER_GTID_WAIT(%s, %s)", (pos, timeout))[0][0] != 0:
        status = replica_status()
        raise AssertionError(
            f"replica did not reach source position {pos} within {timeout}s: "
            f"gtid_slave_pos={sql('replica', 'SELECT @@gtid_slave_pos')[0][0]!r} "
            f"IO={status.get('Slave_IO_Running')} SQL={status.get('Slave_SQL_Running')} "
            f"io_error={status.get('Last_IO_Error')!r} sql_error={status.get('Last_SQL_Error')!r}"
        )


def replica_status():
    """SHOW SLAVE STATUS on the replica as a dict (empty when replication is not configured)."""
    conn = connect("replica", cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            return cur.fetchone() or {}
    finally:
        conn.close()


def parse_gtid_list(value):
    """'1-1-5,2-2-7' -> [(1, 1, 5), (2, 2, 7)] (domain, server_id, seqno)."""
    return [tuple(int(part) for part in entry.strip().split("-")) for entry in value.split(",") if entry.strip()]


def primary_key(name, db, table):
    """The primary key columns of DB.TABLE on server NAME, in key order."""
    rows = sql(
        name,
        "SELECT COLUMN_NAME FROM information_schema.STATISTICS"
        " WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s AND INDEX_NAME='PRIMARY' ORDER BY SEQ_IN_INDEX",
        (db, table),
    )
    return [row[0] for row in rows]


def columns(name, db, table):
    """The columns of DB.TABLE on server NAME, in table order."""
    rows = sql(
        name,
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s ORDER BY ORDINAL_POSITION",
        (db, table),
    )
    return [row[0] for row in rows]


def _encode(value):
    # Length-prefixed so that no two different rows serialize alike.
    if value is None:
        return b"N;"
    data = value if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8")
    return b"%d:" % len(data) + bytes(data) + b";"


def checksum_table(name, db, table):
    """(row count, sha256 hex) of DB.TABLE on server NAME, rows in primary key order.

    Computed in Python from the fetched values, so equal contents on two
    servers give equal checksums whatever the servers' own hash functions do.
    A table without a primary key is ordered by all its columns.
    """
    order = primary_key(name, db, table) or columns(name, db, table)
    if not order:
        raise ValueError(f"table {db}.{table} does not exist on {name}")
    order_sql = ", ".join(quote_ident(c) for c in order)
    digest = hashlib.sha256()
    count = 0
    conn = connect(name, cursorclass=pymysql.cursors.SSCursor)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {quote_ident(db)}.{quote_ident(table)} ORDER BY {order_sql}")
            for row in cur:
                digest.update(b"".join(_encode(v) for v in row) + b"\n")
                count += 1
    finally:
        conn.close()
    return count, digest.hexdigest()


# -- server-side exact row checksums ------------------------------------------------------------------------------
# Each column becomes a text that the server computes from its own stored value, never a value decoded by pymysql:
# FLOAT and DOUBLE as the shortest round-trip text of CAST(col AS DOUBLE) (exact: every FLOAT is a DOUBLE; the
# column's own text rounds a FLOAT to 6 digits), with a mark for -0; integers, DECIMAL, YEAR and the temporal types
# as CAST(col AS CHAR) (the session time_zone is +00:00, so a TIMESTAMP's text is its stored UTC value, bijective);
# ENUM and SET as "index:HEX(bytes)" (an invalid ENUM value has index 0 and reads as ''); everything else (strings in
# any character set, binary strings, BLOB, JSON, BIT, spatial, INET4/INET6/UUID) as HEX(col), the stored bytes.
# Every form is then HEX()ed, so a form is pure [0-9A-F] (or None for NULL) and two servers that store the same
# bytes give the same forms whatever their global time_zone, sql_mode or character sets.
_TEXT_FORM_TYPES = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "year", "date",
                    "datetime", "timestamp", "time"}


def column_form_sql(column, data_type):
    """The SQL expression (a HEX string, NULL for NULL) of COLUMN's stored value for a column of DATA_TYPE
    (information_schema.COLUMNS.DATA_TYPE): see the comment above. Needs a session with time_zone '+00:00'."""
    c = quote_ident(column)
    t = data_type.lower()
    if t in ("float", "double", "real"):
        expr = f"CONCAT(CAST(CAST({c} AS DOUBLE) AS CHAR), IF({c} = 0 AND ATAN2({c}, -1) < 0, '(-0)', ''))"
    elif t in _TEXT_FORM_TYPES:
        expr = f"CAST({c} AS CHAR)"
    elif t in ("enum", "set"):
        expr = f"CONCAT({c} + 0, ':', HEX({c}))"
    else:
        return f"HEX({c})"
    return f"HEX({expr})"


def column_types(name, db, table):
    """[(column, DATA_TYPE, COLUMN_TYPE)] of DB.TABLE on server NAME, in table order (invisible columns too)."""
    return [tuple(r) for r in sql(name, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS"
                                        " WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s ORDER BY ORDINAL_POSITION",
                                  (db, table))]


def _exact_session(name, db=None):
    """A connection whose session reads stored values the same way on every server: UTC, no sql_mode (no
    PAD_CHAR_TO_FULL_LENGTH, no ANSI_QUOTES), utf8mb4, whatever the server's globals say."""
    conn = connect(name, db)
    with conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00', sql_mode = '', character_set_results = 'utf8mb4'")
    return conn


def _key_sql(name, db, table, types):
    pk = primary_key(name, db, table)
    if not pk:
        raise ValueError(f"table {db}.{table} on {name} has no primary key (or does not exist)")
    dt = {c: t for c, t, _ in types}
    return "CONCAT_WS(',', " + ", ".join(column_form_sql(c, dt[c]) for c in pk) + ")"


def _stored_rows(name, db, table, where, columns, select):
    """Rows of DB.TABLE on server NAME (those matching WHERE) as an exact session reads them: the key's forms, then
    what SELECT(types) makes of the column types [(column, DATA_TYPE, COLUMN_TYPE)] (all columns, or COLUMNS in
    that order). Returns (types, rows)."""
    types = column_types(name, db, table)
    if columns is not None:
        by_name = {c.lower(): (c, t, ct) for c, t, ct in types}
        missing = [c for c in columns if c.lower() not in by_name]
        if missing:
            raise AssertionError(f"{db}.{table} on {name} has no column {', '.join(missing)}")
        types = [by_name[c.lower()] for c in columns]
    stmt = f"SELECT {_key_sql(name, db, table, types)}, {select(types)} FROM {quote_ident(db)}.{quote_ident(table)}"
    if where:
        stmt += f" WHERE {where}"
    conn = _exact_session(name)
    try:
        with conn.cursor() as cur:
            cur.execute(stmt)
            return types, cur.fetchall()
    finally:
        conn.close()


def stored_checksums(name, db, table, where=None, columns=None):
    """{pk_hex: sha256 hex} of every row of DB.TABLE (or those matching WHERE) on server NAME, computed by that
    server: pk_hex is the key columns' forms (column_form_sql) joined by ','; the checksum is
    SHA2(CONCAT_WS(',', form or 'N' of every column in table order), 256). Equal checksums on two servers mean
    byte-identical stored rows (same column list assumed: compare tables of the same definition, or name the
    COLUMNS to take, e.g. the source's, where the archive has more)."""
    def select(types):
        return "SHA2(CONCAT_WS(',', " + ", ".join(f"COALESCE({column_form_sql(c, t)}, 'N')" for c, t, _ in types) + \
            "), 256)"
    _, rows = _stored_rows(name, db, table, where, columns, select)
    return {k: s for k, s in rows}


def stored_forms(name, db, table, where=None):
    """{pk_hex: {column: form}} of DB.TABLE (or the rows matching WHERE) on server NAME: each column's form
    (column_form_sql, computed by the server; None for NULL), to show which column differs when
    stored_checksums disagree. pk_hex as in stored_checksums."""
    types, rows = _stored_rows(name, db, table, where, None,
                               lambda types: ", ".join(column_form_sql(c, t) for c, t, _ in types))
    return {r[0]: {c: v for (c, _, _), v in zip(types, r[1:])} for r in rows}


def form_text(form):
    """A form (column_form_sql) shown for a person: its hex and, when the bytes are printable ASCII (the text
    forms of numbers and dates), that text too."""
    if form is None:
        return "NULL"
    try:
        text = bytes.fromhex(form).decode("ascii")
        if text.isprintable():
            return f"{form} ({text!r})"
    except (ValueError, UnicodeDecodeError):
        pass
    return form
