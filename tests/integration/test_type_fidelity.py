#!/usr/bin/python3
"""The type-fidelity suite (issue 31, item 4): the archive holds exactly what the source held, for every column type
MariaDB 10.11 has, with extreme and odd values, whatever the option files and the servers' globals say.

Every run archives rows of one category of types (numeric, temporal, strings and character sets, bytes of 8-bit
character sets that have no Unicode character, misc (ENUM, SET, JSON, INET4/INET6/UUID, COMPRESSED columns),
spatial, stored values strict mode refuses, keys of odd types, composite keys and foreign keys with latin1 and sjis
strings) and then checks the data invariant with checksums each server computes
on its own stored bytes (gatest.stored_checksums / stored_forms: HEX of the bytes, the shortest round-trip text
of a FLOAT as a DOUBLE, ENUM index and bytes, ...), never with values decoded by pymysql: every original row is
in exactly one of source or destination, byte-identical, and the rows the job matches are in the destination.
A failure names the table, the row, the column, and both servers' HEX.

The categories run in five settings, each in sha256 and count verification:
  plain          the servers as scripts/servers.sh starts them
  defaults_file  [source] and [destination] defaults_file = a [client] group that fights ours:
                 default-character-set = utf8 and an init-command that sets time_zone, sql_mode
                 (PAD_CHAR_TO_FULL_LENGTH, NO_BACKSLASH_ESCAPES, ANSI_QUOTES), character_set_results and
                 collation_connection
  globals_a      source: GLOBAL time_zone '+05:00', strict sql_mode with NO_ZERO_DATE, PAD_CHAR_TO_FULL_LENGTH ...;
                 destination: 'America/New_York', sql_mode ''
  globals_b      the other way round: source 'America/New_York' and ''; destination '-03:00' and the strict one
  copy_only      the plain servers, `copy-only` instead of `archive`: the source keeps every row, unchanged
plus one named test per finding of issue 31 item 1 (TestFindings), and TestJudge: the hostile defaults_file does
reach a Connector/C session, and the server-side forms tell apart every pair of values a lossy copy makes alike.

It changes server globals, so it starts its own servers (scripts/servers.sh, GOARCHIVE_TEST_DIR=/tmp/ga-types, ports
22306-22308, below the kernel's ephemeral ports; TYPES_SERVERS_DIR / TYPES_SOURCE_PORT / TYPES_DEST_PORT override), restores every global it changes,
and stops the servers at the end (TYPES_KEEP_SERVERS=1 keeps them). EXPECTED_FAILURES lists the tests that fail on
today's engine (registered with unittest.expectedFailure); remove an entry when its fix lands. TYPES_NO_XFAIL=1
runs every test without the marker, to see each failure's message.
"""

import os
import re
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import campaignkit  # noqa: E402
import gatest  # noqa: E402
import scenario  # noqa: E402
from scenario import Scenario  # noqa: E402

q = gatest.quote_ident

FORBIDDEN_PORTS = {str(p) for base in (23306, 24306, 25306, 26306, 27306, 28306, 29306, 30306, 31306, 32306)
                   for p in range(base, base + 3)}
OWN = campaignkit.OwnServers("TYPES", "/tmp/ga-types", 22306, forbidden=FORBIDDEN_PORTS,
                             refusal="the type-fidelity suite changes server globals: it must not run on another "
                                     "suite's ports")

# The tests that fail on today's engine (main at 370c9ae): (class name, test name). Remove an entry when its fix
# lands (an unexpected success fails the suite, so a stale entry is noticed).
# Every finding of issue 31 items 1.1-1.4 is fixed; a new one goes here, (class name, test name), with its reason.
EXPECTED_FAILURES = set()
if os.environ.get("TYPES_NO_XFAIL"):  # every test plain: what passes and what fails on this binary, with the reasons
    EXPECTED_FAILURES = set()

HOSTILE_SQL_MODE = ("STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
                    "PAD_CHAR_TO_FULL_LENGTH,NO_BACKSLASH_ESCAPES,ANSI_QUOTES,TIME_ROUND_FRACTIONAL")
# A [client] group Connector/C reads (MYSQL_READ_DEFAULT_FILE): every line changes the session goarchive gets.
HOSTILE_DEFAULTS = (
    "[client]\n"
    "default-character-set = utf8\n"
    "init-command = SET SESSION time_zone='+09:00', sql_mode='PAD_CHAR_TO_FULL_LENGTH,NO_BACKSLASH_ESCAPES,"
    "ANSI_QUOTES,TIME_ROUND_FRACTIONAL', character_set_results='latin1', collation_connection='latin1_swedish_ci', "
    "div_precision_increment=0\n"
)
# The common ~/.my.cnf line of issue 31 item 1.2, alone.
UTF8_DEFAULTS = "[client]\ndefault-character-set = utf8\n"


def setUpModule():
    if os.path.dirname(os.path.abspath(scenario.BIN)) == os.path.join(OWN.env["GOARCHIVE_TEST_DIR"], "bin"):
        OWN.use()  # pinned already (a second call, e.g. a runner after a script's own call): servers only
        OWN.servers("start", "source", "destination")
    else:
        scenario.BIN = OWN.start(scenario.BIN)
    for server in ("source", "destination"):
        load_time_zone(server, "America/New_York")
        # servers left running by an interrupted run may still hold a setting's globals
        gatest.sql(server, "SET GLOBAL time_zone = DEFAULT, GLOBAL sql_mode = DEFAULT")
    print(f"\ntype fidelity: binary {scenario.BIN}, servers 127.0.0.1:{os.environ['GA_SOURCE_PORT']} (source) / "
          f":{os.environ['GA_DEST_PORT']} (destination)", file=sys.stderr, flush=True)


def tearDownModule():
    if not os.environ.get("TYPES_KEEP_SERVERS"):
        OWN.servers("stop", "source", "destination")


def load_time_zone(server, zone):
    """The server's time zone tables get ZONE (mariadb-tzinfo-to-sql), unless they have it already. Without the
    zone's file (no tzdata) the settings use the fixed offset -05:00 instead (Matrix.setUpClass)."""
    if gatest.sql(server, "SELECT COUNT(*) FROM mysql.time_zone_name WHERE Name=%s", (zone,))[0][0]:
        return
    if not os.path.exists(f"/usr/share/zoneinfo/{zone}"):
        print(f"type fidelity: no /usr/share/zoneinfo/{zone}: the settings use -05:00 instead", file=sys.stderr)
        return
    tz = subprocess.run(["mariadb-tzinfo-to-sql", f"/usr/share/zoneinfo/{zone}", zone], capture_output=True,
                        check=True)
    port = gatest.env("GA_SOURCE_PORT" if server == "source" else "GA_DEST_PORT")
    subprocess.run(["mariadb", "--no-defaults", "-h127.0.0.1", f"-P{port}", f"-u{gatest.env('GA_USER')}", "mysql"],
                   input=tz.stdout, capture_output=True, check=True,
                   env=dict(os.environ, MYSQL_PWD=gatest.env("GA_PASSWORD")))


# -- literals and sessions --------------------------------------------------------------------------------------------
def u(text):
    """TEXT as a utf8mb4 literal (hex: no escaping, whatever sql_mode says); the server converts it to the column's
    character set."""
    return f"_utf8mb4 X'{text.encode('utf-8').hex()}'" if text else "_utf8mb4 ''"


def b(data):
    """DATA (bytes) as a binary literal: stored as these bytes in any column."""
    return f"X'{bytes(data).hex()}'"


ALL_BYTES = bytes(range(256))
CP1251_MAPPED = bytes(x for x in range(256) if x != 0x98)  # cp1251 without 0x98, the one byte Unicode lacks


def session_sql(server, db, stmts, sql_mode="STRICT_ALL_TABLES", time_zone="+00:00"):
    """STMTS on SERVER in one session with our own sql_mode and time_zone (never the globals a test set); returns
    the warnings of the last statement."""
    conn = gatest.connect(server, db)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SET SESSION sql_mode = '{sql_mode}', time_zone = '{time_zone}', "
                        "character_set_results = 'utf8mb4'")
            warnings = ()
            for stmt in stmts:
                cur.execute(stmt)
                cur.execute("SHOW WARNINGS")
                warnings = cur.fetchall()
            return warnings
    finally:
        conn.close()


def insert_sql(table, rows):
    """INSERT of ROWS (dicts column -> SQL literal; absent columns get their default) into TABLE, one per row."""
    return [f"INSERT INTO {q(table)} ({', '.join(q(c) for c in row)}) "
            f"VALUES ({', '.join(str(v) for v in row.values())})" for row in rows]


# -- the categories ---------------------------------------------------------------------------------------------------
class Category:
    """Tables (parent first: (name, DDL body)), their rows, the job and, per table, the rows the job moves (an SQL
    condition on that table). SQL_MODE is the session mode the rows are inserted with."""

    def __init__(self, name, tables, rows, job, moves, sql_mode="STRICT_ALL_TABLES", exact=None, relations=()):
        self.name, self.tables, self.rows, self.job, self.moves = name, tables, rows, job, moves
        self.sql_mode = sql_mode
        self.exact = exact or {}  # {(table, id, column): expected HEX after the insert}: a check of the test itself
        self.relations = relations


NUMERIC_COLS = """id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, zf INT(8) UNSIGNED ZEROFILL, bo BOOLEAN,
  f FLOAT, d DOUBLE, fu FLOAT UNSIGNED, f74 FLOAT(7,4), d2010 DOUBLE(20,10), r REAL,
  dc DECIMAL(65,30), dc0 DECIMAL(65,0), dcu DECIMAL(10,5) UNSIGNED,
  b1 BIT(1), b7 BIT(7), b64 BIT(64)"""
# (FLOAT, DOUBLE) pairs: signed zeros, denormals, min normals, max, values at and around 2^24 and 2^53, and values
# whose 6-digit FLOAT text or 15-digit DOUBLE text is not the stored value.
FLOATS = [
    ("16777216", "16777216"), ("1.2345678", "1.2345678901234567"), ("-0e0", "-0e0"), ("0e0", "0e0"),
    ("1.4e-45", "4.9e-324"), ("-1.4e-45", "-4.9e-324"), ("1.1754942e-38", "2.225073858507201e-308"),
    ("1.17549435e-38", "2.2250738585072014e-308"), ("3.4028234e38", "1.7976931348623157e308"),
    ("-3.4028234e38", "-1.7976931348623157e308"), ("16777215", "9007199254740991"),
    ("16777217", "9007199254740992"), ("16777218", "9007199254740993"), ("16777219", "9007199254740994"),
    ("8388607.5", "4503599627370495.5"), ("0.1", "0.1"), ("33554431", "0.30000000000000004"),
    ("123456.789", "123456789012345680000"), ("1e-10", "1e-300"), ("-2.5e-40", "-1.2345678901234567e-310"),
]


def numeric_rows():
    rows = []
    extremes = [
        dict(ti="-128", tiu="255", si="-32768", siu="65535", mi="-8388608", miu="16777215", i="-2147483648",
             iu="4294967295", bi="-9223372036854775808", bu="18446744073709551615", zf="42", bo="1",
             dc="'-99999999999999999999999999999999999.999999999999999999999999999999'",
             dc0="'99999999999999999999999999999999999999999999999999999999999999999'", dcu="'99999.99999'",
             b1="b'1'", b7="b'1010101'", b64="X'FFFFFFFFFFFFFFFF'", fu="3.4028234e38", f74="-999.9999",
             d2010="9999999999.9999999999", r="2.2250738585072014e-308"),
        dict(ti="127", tiu="0", si="32767", siu="0", mi="8388607", miu="0", i="2147483647", iu="0",
             bi="9223372036854775807", bu="0", zf="0", bo="0", dc="'0.000000000000000000000000000001'",
             dc0="'-99999999999999999999999999999999999999999999999999999999999999999'", dcu="'0.00001'",
             b1="b'0'", b7="b'0000000'", b64="X'8000000000000001'", fu="1.4e-45", f74="123.4567",
             d2010="-0.0000000001", r="1.7976931348623157e308"),
        dict(ti="-1", tiu="128", si="-1", siu="32768", mi="-1", miu="8388608", i="-1", iu="2147483648", bi="-1",
             bu="9223372036854775808", zf="4294967295", bo="-128",
             dc="'-0.000000000000000000000000000001'", dc0="'0'", dcu="'0'", b1="NULL", b7="b'1111111'",
             b64="X'0000000000000000'", fu="0e0", f74="0.0001", d2010="1234567890.0123456789", r="-0e0"),
        dict(dc="'12345678901234567890123456789012345.123456789012345678901234567890'",
             b64="X'00000000000000FF'", d2010="0.1"),
    ]
    for n, (f, d) in enumerate(FLOATS, start=1):
        row = {"id": str(n), "f": f, "d": d}
        row.update(extremes[(n - 1) % len(extremes)] if n <= len(extremes) else {})
        rows.append(row)
    rows.append({"id": "99"})  # all NULL
    rows.append({"id": "1000", "f": "16777216", "d": "1.2345678901234567", "dc": "'1.5'"})  # stays
    return {"t_num": rows}


NUMERIC = Category("numeric", [("t_num", NUMERIC_COLS)], numeric_rows(),
                   {"root_table": "t_num", "where": "id < 1000"}, {"t_num": "id < 1000"})

TEMPORAL_COLS = """id INT PRIMARY KEY, d DATE, dt DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
  ts TIMESTAMP NULL DEFAULT NULL, ts6 TIMESTAMP(6) NULL DEFAULT NULL, tm TIME, tm3 TIME(3), tm6 TIME(6), y YEAR"""
TEMPORAL_ROWS = {"t_time": [
    dict(id="1", d="'1000-01-01'", dt="'1000-01-01 00:00:00'", dt3="'1000-01-01 00:00:00.001'",
         dt6="'1000-01-01 00:00:00.000001'", ts="'1970-01-01 00:00:01'", ts6="'1970-01-01 00:00:01.000001'",
         tm="'-838:59:59'", tm3="'-838:59:59.999'", tm6="'-838:59:59.999999'", y="1901"),
    dict(id="2", d="'9999-12-31'", dt="'9999-12-31 23:59:59'", dt3="'9999-12-31 23:59:59.999'",
         dt6="'9999-12-31 23:59:59.999999'", ts="'2038-01-19 03:14:07'", ts6="'2038-01-19 03:14:07.999999'",
         tm="'838:59:59'", tm3="'838:59:59.999'", tm6="'838:59:59.999999'", y="2155"),
    # 01:30 EDT and 01:30 EST on 2020-11-01 in America/New_York: the same local text for two instants.
    dict(id="3", ts="'2020-11-01 05:30:00'", ts6="'2020-11-01 05:30:00.500000'", dt6="'2020-03-08 02:30:00.250000'",
         tm6="'-00:00:00.000001'", y="0", d="'2020-02-29'"),
    dict(id="4", ts="'2020-11-01 06:30:00'", ts6="'2020-11-01 06:30:00.500000'", tm6="'00:00:00.000001'",
         tm="'00:00:00'", dt="'2020-03-08 02:30:00'", y="2000"),
    # the instant the source's +05:00 and the destination's -03:00 put on different dates
    dict(id="5", ts="'2000-02-29 20:00:00'", ts6="'1999-12-31 23:59:59.999999'", dt6="'2000-02-29 23:59:59.999999'",
         tm6="'24:00:00.000001'", tm3="'-00:00:01.500'", dt3="'2000-01-01 00:00:00.000'", y="1999"),
    dict(id="6", ts6="'2024-03-31 01:00:00.000000'", tm6="'-12:34:56.789012'", d="'2024-03-10'",
         dt6="'2024-03-10 02:00:00.000000'"),
    dict(id="99"),
    dict(id="1000", ts6="'2020-11-01 05:30:00.5'", d="'2000-01-01'"),
]}
TEMPORAL = Category("temporal", [("t_time", TEMPORAL_COLS)], TEMPORAL_ROWS,
                    {"root_table": "t_time", "where": "id < 1000"}, {"t_time": "id < 1000"})

# Strings: the root holds utf8mb4 (4-byte characters), CHAR padding, binary strings and every BLOB/TEXT size; the
# child (so that the child path meets them too) every other character set, with characters whose multi-byte
# encoding contains 0x5C (backslash) and bytes an 8-bit character set stores but cannot convert to Unicode.
STRING_COLS = """id INT PRIMARY KEY, u8 VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  u8ci VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci, u3 VARCHAR(64) CHARACTER SET utf8mb3,
  ch CHAR(10) CHARACTER SET utf8mb4, vsp VARCHAR(20) CHARACTER SET utf8mb4,
  tt TINYTEXT CHARACTER SET utf8mb4, tx TEXT CHARACTER SET utf8mb4, mt MEDIUMTEXT CHARACTER SET utf8mb4,
  lt LONGTEXT CHARACTER SET utf8mb4, bn BINARY(8), vb VARBINARY(300), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB,
  lb LONGBLOB"""
CHILD_COLS = """id INT PRIMARY KEY, str_id INT NOT NULL, KEY (str_id),
  l1 VARCHAR(300) CHARACTER SET latin1, l1t TEXT CHARACTER SET latin1, l2 VARCHAR(300) CHARACTER SET latin2,
  w1251 VARCHAR(300) CHARACTER SET cp1251, asc7 VARCHAR(200) CHARACTER SET ascii,
  bcs VARCHAR(300) CHARACTER SET binary, gbk VARCHAR(40) CHARACTER SET gbk, big5 VARCHAR(40) CHARACTER SET big5,
  sjis VARCHAR(40) CHARACTER SET sjis, cp932 VARCHAR(40) CHARACTER SET cp932, ujis VARCHAR(40) CHARACTER SET ujis,
  euckr VARCHAR(40) CHARACTER SET euckr, ucs2 VARCHAR(40) CHARACTER SET ucs2, u16 VARCHAR(40) CHARACTER SET utf16,
  u16le VARCHAR(40) CHARACTER SET utf16le, u32 VARCHAR(40) CHARACTER SET utf32, c32 CHAR(5) CHARACTER SET utf32"""
EMOJI = "\U0001F600"  # 😀
RARE_CJK = "\U00020000\U0002A6A5\U00030000"  # 𠀀 𪚥 and a CJK Extension G character
FAMILY = "\U0001F468\u200D\U0001F469\u200D\U0001F467"  # a ZWJ sequence
ODD_TEXT = f"a\0b\\c'd\"e\r\n\t\x1a ß é {EMOJI}{RARE_CJK} \uFEFF\u2028\u202E\U0010FFFF"


def string_rows():
    root = [
        dict(id="1", u8=u(EMOJI + RARE_CJK + FAMILY), u8ci=u(ODD_TEXT), u3=u("\uFFFF\uFFFD\u00e9\\'"),
             ch=u("ab   "), vsp=u("a  "), tt=u(EMOJI * 60), tx=u(ODD_TEXT * 20), mt=f"REPEAT({u(EMOJI)}, 50000)",
             lt=f"REPEAT({u(RARE_CJK + ODD_TEXT)}, 3000)", bn=b(b"\x01\x00"), vb=b(ALL_BYTES + b"\x00\x20\x00"),
             tb=b(ALL_BYTES[1:]), bl=b(ALL_BYTES * 4), mb=f"REPEAT({b(ALL_BYTES)}, 1024)",
             lb=f"REPEAT({b(ALL_BYTES[::-1])}, 4096)"),
        dict(id="2", u8=u("\U0010FFFF" + EMOJI + "\\"), u8ci=u("ǅ Ⅻ ﬀ ß"), u3=u("€"), ch=u("x\t"), vsp=u(" "),
             tt=u(""), tx=u("\0"), mt=u(RARE_CJK), lt=u(FAMILY), bn=b(b"\x00" * 8), vb=b(b"\x00"),
             tb=b(b""), bl=b(b"\xff\x00\xff"), mb=b(b"\\'\""), lb=b(b"\x00" * 3)),
        dict(id="3", u8=u(""), u8ci=u(""), u3=u(""), ch=u(""), vsp=u(""), tt=u(""), tx=u(""), mt=u(""), lt=u(""),
             bn=b(b""), vb=b(b""), tb=b(b""), bl=b(b""), mb=b(b""), lb=b(b"")),
        dict(id="99"),
        dict(id="1000", u8=u(EMOJI), bl=b(ALL_BYTES)),
    ]
    child = [
        dict(id="1", str_id="1", l1=b(ALL_BYTES), l1t=b(ALL_BYTES * 3), l2=b(ALL_BYTES), w1251=b(CP1251_MAPPED),
             asc7=b(ALL_BYTES[:128]), bcs=b(ALL_BYTES), gbk=u("乗俓僜刓匼 ABC"), big5=u("許功蓋"), sjis=u("表ソ十能予"),
             cp932=u("表ソ①㈱"), ujis=u("丂表"), euckr=u("한국어"), ucs2=u("\uFFFF\u00e9\u4e00"),
             u16=u(EMOJI + RARE_CJK), u16le=u(EMOJI + "\uFFFD"), u32=u(EMOJI + "\U0010FFFF"), c32=u("a ")),
        # latin1's and latin2's C1 controls (they map to U+0080..U+009F), a surrogate pair in ucs2
        dict(id="2", str_id="1", ucs2=b(b"\xd8\x00\xdc\x00"), l2=b(bytes(range(0x80, 0xa0))),
             l1=b(b"\x81\x8d\x8f\x90\x9d"), gbk=u("\\"), sjis=u("\\~"), u32=u("\0")),
        dict(id="3", str_id="2", l1=u("é"), gbk=u(""), c32=u("")),
        dict(id="4", str_id="3"),
        dict(id="1000", str_id="1000", l1=b(ALL_BYTES), sjis=u("表")),
    ]
    return {"t_str": root, "t_str_child": child}


STRINGS = Category(
    "strings", [("t_str", STRING_COLS), ("t_str_child", CHILD_COLS)], string_rows(),
    {"root_table": "t_str", "where": "id < 1000", "relations": [{"table": "t_str_child", "foreign_key": "str_id"}]},
    {"t_str": "id < 1000", "t_str_child": "str_id < 1000"},
    exact={("t_str_child", 1, "l1"): ALL_BYTES.hex().upper(), ("t_str_child", 1, "w1251"): CP1251_MAPPED.hex().upper(),
           ("t_str_child", 2, "ucs2"): "D800DC00",
           ("t_str", 1, "vb"): (ALL_BYTES + b"\x00\x20\x00").hex().upper()},
    relations=[("t_str_child", ["str_id"], "t_str", ["id"])])

MISC_COLS = """id INT PRIMARY KEY, e ENUM('a','b','ü','😀',''), s SET('x','y','z','ä','😀'), j JSON,
  i4 INET4, i6 INET6, uu UUID, tz TEXT COMPRESSED CHARACTER SET utf8mb4, vz VARCHAR(500) COMPRESSED"""
MISC_ROWS = {"t_misc": [
    dict(id="1", e=u("a"), s=u("x,z"), j=u('{"a": 1.0, "b": [1E400, -0, 12345678901234567890123], "c": "\\u0000😀"}'),
         i4="'0.0.0.0'", i6="'::'", uu="'00000000-0000-0000-0000-000000000000'", tz=u(ODD_TEXT * 30),
         vz=u("x" * 400)),
    dict(id="2", e=u("😀"), s=u("ä,😀"), j=u('  [ ]  '), i4="'255.255.255.255'",
         i6="'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'", uu="'ffffffff-ffff-ffff-ffff-ffffffffffff'", tz=u(""),
         vz=u(EMOJI)),
    dict(id="3", e=u(""), s=u(""), j=u('{"k":"v","k":"dup"}'), i4="'10.0.0.1'", i6="'::ffff:1.2.3.4'",
         uu="'123e4567-e89b-12d3-a456-426655440000'"),
    dict(id="4", e=u("ü"), s=u("x,y,z,ä,😀"), j=u('"\\ud83d\\ude00"'), i6="'fe80::1'",
         uu="'01890a5d-ac96-774b-bcce-b302099a8057'"),
    dict(id="99"),
    dict(id="1000", e=u("b"), i4="'1.2.3.4'"),
]}
MISC = Category("misc", [("t_misc", MISC_COLS)], MISC_ROWS, {"root_table": "t_misc", "where": "id < 1000"},
                {"t_misc": "id < 1000"})

SPATIAL_COLS = """id INT PRIMARY KEY, g GEOMETRY, p POINT, ls LINESTRING, pg POLYGON, mp MULTIPOINT,
  mls MULTILINESTRING, mpg MULTIPOLYGON, gc GEOMETRYCOLLECTION, pnn POINT NOT NULL, SPATIAL KEY (pnn)"""


def geo(wkt, srid=0):
    return f"ST_GeomFromText({u(wkt)}, {srid})"


SPATIAL_ROWS = {"t_geo": [
    dict(id="1", g=geo("POLYGON((0 0,10 0,10 10,0 10,0 0),(2 2,3 2,3 3,2 3,2 2))"),
         p=geo("POINT(1.2345678901234567 0.30000000000000004)"), ls=geo("LINESTRING(0 0,1 1,2 2)"),
         pg=geo("POLYGON((0 0,1 0,1 1,0 0))"), mp=geo("MULTIPOINT(1 1,2 2)"),
         mls=geo("MULTILINESTRING((0 0,1 1),(2 2,3 3))"),
         mpg=geo("MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))"),
         gc=geo("GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))"), pnn=geo("POINT(0 0)")),
    dict(id="2", g=geo("POINT(1e308 -1e308)", 4326), p=geo("POINT(5e-324 -0)"), gc=geo("GEOMETRYCOLLECTION EMPTY"),
         pnn=geo("POINT(-180 90)", 4326)),
    dict(id="3", g=geo("GEOMETRYCOLLECTION(POINT(0.1 0.2),POLYGON((0 0,1 0,1 1,0 0)))"), pnn=geo("POINT(1 1)")),
    dict(id="1000", pnn=geo("POINT(2 2)")),
]}
SPATIAL = Category("spatial", [("t_geo", SPATIAL_COLS)], SPATIAL_ROWS, {"root_table": "t_geo", "where": "id < 1000"},
                   {"t_geo": "id < 1000"})

# Stored values strict mode refuses, inserted under a permissive sql_mode: ENUM index 0 (''), also where the ENUM
# has a real '' member (index 1: copying the text '' would change the value), zero and partial dates, invalid
# dates (ALLOW_INVALID_DATES), a zero TIMESTAMP.
INVALID_COLS = """id INT PRIMARY KEY, e ENUM('a','b','c'), e2 ENUM('x','y') NOT NULL, e3 ENUM('','x'),
  d DATE, dt6 DATETIME(6), ts6 TIMESTAMP(6) NULL DEFAULT NULL, v VARCHAR(10)"""
INVALID_ROWS = {"t_bad": [
    dict(id="1", e="''", e2="''", e3="0", d="'0000-00-00'", dt6="'0000-00-00 00:00:00.000000'",
         ts6="'0000-00-00 00:00:00'", v="'zero'"),
    dict(id="2", e="'b'", e2="'zz'", e3="''", d="'2020-00-15'", dt6="'2020-02-00 01:02:03.000001'", v="'partial'"),
    dict(id="3", e="'c'", e2="'y'", e3="'x'", d="'2020-02-31'", dt6="'2021-04-31 12:00:00.5'", v="'invalid'"),
    dict(id="4", e="0", e2="'x'", d="'0000-01-01'", dt6="'0000-12-31 00:00:00.000001'", v="'year 0'"),
    dict(id="5", e="'a'", e2="'x'", e3="'x'", d="'2024-01-01'", dt6="'2024-01-01 00:00:00'", v="'valid'"),
    dict(id="1000", e="''", e2="''", d="'0000-00-00'", v="'stays'"),
]}
INVALID = Category("invalid_stored", [("t_bad", INVALID_COLS)], INVALID_ROWS,
                   {"root_table": "t_bad", "where": "id < 1000"}, {"t_bad": "id < 1000"},
                   sql_mode="ALLOW_INVALID_DATES",
                   exact={("t_bad", 1, "e"): "303A", ("t_bad", 1, "e3"): "303A", ("t_bad", 2, "e3"): "313A"})

# Bytes an 8-bit character set column stores but that have no Unicode character (MariaDB converts them to '?'):
# cp1251 0x98, cp1250 0x81 0x83 0x88 0x90 0x98, greek 0xA4 0xA5 0xAA 0xAE 0xD2 0xFF, hebrew 0xA1 0xBF-0xDE 0xFB 0xFC
# 0xFF, ascii 0x80-0xFF; and a lone surrogate in ucs2. A copy through any Unicode text loses them: only a copy of
# the bytes keeps them.
UNMAPPABLE_COLS = """id INT PRIMARY KEY, w1251 VARCHAR(300) CHARACTER SET cp1251,
  w1250 VARCHAR(300) CHARACTER SET cp1250, greek VARCHAR(300) CHARACTER SET greek, hebrew TEXT CHARACTER SET hebrew,
  asc8 VARCHAR(300) CHARACTER SET ascii,
  ucs2 VARCHAR(10) CHARACTER SET ucs2, c1251 CHAR(4) CHARACTER SET cp1251"""
UNMAPPABLE = Category(
    "unmappable", [("t_raw", UNMAPPABLE_COLS)],
    {"t_raw": [dict(id="1", w1251=b(ALL_BYTES), w1250=b(ALL_BYTES), greek=b(ALL_BYTES), hebrew=b(ALL_BYTES),
                    asc8=b(ALL_BYTES), ucs2=b(b"\xd8\x00"), c1251=b(b"\x98")),
               dict(id="2", w1251=b(b"\x98 \x98"), ucs2=b(b"\xdc\x00\x00\x41"), c1251=b(b"a\x98")),
               dict(id="1000", w1251=b(b"\x98"))]},
    {"root_table": "t_raw", "where": "id < 1000"}, {"t_raw": "id < 1000"},
    exact={("t_raw", 1, "w1251"): ALL_BYTES.hex().upper(), ("t_raw", 1, "hebrew"): ALL_BYTES.hex().upper(),
           ("t_raw", 1, "asc8"): ALL_BYTES.hex().upper(), ("t_raw", 1, "ucs2"): "D800"})

# Keys of odd types: a composite primary key of a utf8mb4_bin string (4-byte characters), a DATETIME(6), a
# DECIMAL(65,30) and a VARBINARY (0x00 and trailing 0x20 bytes), walked two roots per batch, and a child that
# references all four columns: the keyset walk, the child discovery and the delete by key meet them all.
KEY_COLS = """k_str VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, k_dt DATETIME(6) NOT NULL,
  k_dec DECIMAL(65,30) NOT NULL, k_bin VARBINARY(8) NOT NULL, v INT NOT NULL, u8 VARCHAR(10) CHARACTER SET utf8mb4,
  PRIMARY KEY (k_str, k_dt, k_dec, k_bin)"""
KEY_CHILD_COLS = """id INT PRIMARY KEY, p_str VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  p_dt DATETIME(6) NOT NULL, p_dec DECIMAL(65,30) NOT NULL, p_bin VARBINARY(8) NOT NULL,
  KEY (p_str, p_dt, p_dec, p_bin)"""


def key_rows():
    roots, children = [], []
    combos = [(s_, d, n, k) for s_ in (EMOJI, "\\'", "a", "A")
              for d in ("1000-01-01 00:00:00.000001", "9999-12-31 23:59:59.999999")
              for n in ("-0.000000000000000000000000000001",
                        "99999999999999999999999999999999999.999999999999999999999999999999")
              for k in (b"\x00", b"\x00\x00", b"\xff\x20")]
    for v, (s_, d, n, k) in enumerate(combos, start=1):
        roots.append(dict(k_str=u(s_), k_dt=f"'{d}'", k_dec=f"'{n}'", k_bin=b(k), v=str(v), u8=u(EMOJI + s_)))
        if v % 3 == 0:
            children.append(dict(id=str(v), p_str=u(s_), p_dt=f"'{d}'", p_dec=f"'{n}'", p_bin=b(k)))
    return {"t_keys": roots, "t_keys_child": children}


ODD_KEYS = Category(
    "odd_keys", [("t_keys", KEY_COLS), ("t_keys_child", KEY_CHILD_COLS)], key_rows(),
    {"root_table": "t_keys", "where": "v % 5 <> 0",
     "relations": [{"table": "t_keys_child", "foreign_key": ["p_str", "p_dt", "p_dec", "p_bin"]}]},
    {"t_keys": "v % 5 <> 0",
     "t_keys_child": "(p_str, p_dt, p_dec, p_bin) IN (SELECT k_str, k_dt, k_dec, k_bin FROM {db}.t_keys "
                     "WHERE v % 5 <> 0)"},
    relations=[("t_keys_child", ["p_str", "p_dt", "p_dec", "p_bin"], "t_keys", ["k_str", "k_dt", "k_dec", "k_bin"])])

# Composite keys with a string column in another character set than utf8mb4. On MariaDB 10.11.19 a row IN list of
# more than one tuple with utf8mb4 string literals, (k, n) IN (('é', 1), ('é', 2)), finds no row whose k is a
# non-ASCII latin1, gbk or sjis value (a ucs2 column: no row at all), while k = 'é', k IN ('é', 'a') and literals
# in the column's character set (_latin1 X'E9', CONVERT(... USING latin1)) do. And sjis stores U+005C as 0x815F.
SJIS_KEYS = ("\\", "a", "表", "ソ", "\\x")
SJIS_KEY = Category(
    "sjis_composite_key",
    [("t_sj", "k VARCHAR(10) CHARACTER SET sjis NOT NULL, n INT NOT NULL, v INT, PRIMARY KEY (k, n)"),
     ("t_sj_child", "id INT PRIMARY KEY, pk VARCHAR(10) CHARACTER SET sjis NOT NULL, pn INT NOT NULL, KEY (pk, pn)")],
    {"t_sj": [dict(k=u(k), n=str(n), v=str(10 * i + n)) for i, k in enumerate(SJIS_KEYS) for n in (1, 2, 3)],
     "t_sj_child": [dict(id=str(10 * i + n), pk=u(k), pn=str(n)) for i, k in enumerate(SJIS_KEYS) for n in (1, 2)]},
    {"root_table": "t_sj", "where": "n < 3", "relations": [{"table": "t_sj_child", "foreign_key": ["pk", "pn"]}]},
    {"t_sj": "n < 3", "t_sj_child": "1=1"},
    relations=[("t_sj_child", ["pk", "pn"], "t_sj", ["k", "n"])])

# The same through a child only: the root's key is an INT, the child references a UNIQUE (latin1 name, INT) of its
# parent, so the roots' own read-back works and only the child discovery meets the latin1 tuples.
LATIN1_NAMES = ("é", "a", "ñ", "Ü")
LATIN1_FK = Category(
    "latin1_composite_fk",
    [("t_l1", "id INT PRIMARY KEY, name VARCHAR(10) CHARACTER SET latin1 NOT NULL, n INT NOT NULL, "
              "UNIQUE KEY (name, n)"),
     ("t_l1_child", "id INT PRIMARY KEY, p_name VARCHAR(10) CHARACTER SET latin1 NOT NULL, p_n INT NOT NULL, "
                    "KEY (p_name, p_n)")],
    {"t_l1": [dict(id=str(10 * i + n), name=u(k), n=str(n)) for i, k in enumerate(LATIN1_NAMES) for n in (1, 2)],
     "t_l1_child": [dict(id=str(10 * i + n), p_name=u(k), p_n=str(n)) for i, k in enumerate(LATIN1_NAMES)
                    for n in (1, 2)]},
    {"root_table": "t_l1", "where": "id % 10 = 1",
     "relations": [{"table": "t_l1_child", "foreign_key": ["p_name", "p_n"], "references": ["name", "n"]}]},
    {"t_l1": "id % 10 = 1", "t_l1_child": "p_n = 1"},
    relations=[("t_l1_child", ["p_name", "p_n"], "t_l1", ["name", "n"])])

CATEGORIES = [NUMERIC, TEMPORAL, STRINGS, UNMAPPABLE, MISC, SPATIAL, INVALID, ODD_KEYS, SJIS_KEY, LATIN1_FK]


# -- the check --------------------------------------------------------------------------------------------------------
def key_text(key):
    """A pk_hex (gatest.stored_checksums) shown for a person: the key's text when it is printable, else its hex."""
    parts = []
    for part in key.split(","):
        try:
            text = bytes.fromhex(part).decode("ascii")
            parts.append(text if text.isprintable() else part)
        except (ValueError, UnicodeDecodeError):
            parts.append(part)
    return "(" + ", ".join(parts) + ")"


def show_pair(had, holds, width=96):
    """Two forms for a message: whole when short, else their lengths and a window of both around the first hex
    digit where they differ."""
    if had is None or holds is None or max(len(had), len(holds)) <= 2 * width:
        return gatest.form_text(had), gatest.form_text(holds)
    i = next((n for n, (x, y) in enumerate(zip(had, holds)) if x != y), min(len(had), len(holds)))
    i -= i % 2
    start = max(0, i - width // 2)

    def window(form):
        return (f"{len(form) // 2} bytes, from byte {start // 2} (first difference at byte {i // 2}): "
                f"{'...' if start else ''}{form[start:start + width]}{'...' if start + width < len(form) else ''}")
    return window(had), window(holds)


class Base(unittest.TestCase):
    maxDiff = None

    def make(self, cat, tag=None):
        """A scenario with CAT's tables on both sides and its rows on the source."""
        sc = Scenario(self, f"ty_{tag or cat.name}"[:20])
        for table, body in cat.tables:
            ddl = f"CREATE TABLE {q(table)} ({body}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
            session_sql("source", sc.src_db, [ddl])
            session_sql("destination", sc.dst_db, [ddl])
        for table, _ in cat.tables:
            session_sql("source", sc.src_db, insert_sql(table, cat.rows[table]), sql_mode=cat.sql_mode)
        for (table, key, column), want in cat.exact.items():  # the test's own values are what it means them to be
            got = gatest.stored_forms("source", sc.src_db, table, where=f"id = {key}")
            self.assertEqual(next(iter(got.values()))[column], want, f"test setup: {table}.{column} of row {key}")
        return sc

    def snapshot(self, sc, cat):
        """{table: (checksums, forms)} of the source, and {table: keys the job moves}."""
        before = {t: (gatest.stored_checksums("source", sc.src_db, t), gatest.stored_forms("source", sc.src_db, t))
                  for t, _ in cat.tables}
        moves = {t: set(gatest.stored_checksums("source", sc.src_db, t, where=cond.replace("{db}", q(sc.src_db))))
                 for t, cond in cat.moves.items()}
        return before, moves

    def problems(self, sc, cat, before, moves, placed=True, mode="archive"):
        """What is wrong after a run: the data invariant (every original row in exactly one of source or
        destination, byte-identical by the servers' own checksums) and, when PLACED, every row the job matches
        in the destination and every other one in the source. [] when all is well. MODE copy-only: every row
        stays in the source unchanged, and (PLACED) the rows the job matches are in the destination too,
        byte-identical, and no other."""
        out = []
        for table, _ in cat.tables:
            sums, forms = before[table]
            src = gatest.stored_checksums("source", sc.src_db, table)
            dst = gatest.stored_checksums("destination", sc.dst_db, table)
            diff_keys = {"source": [], "destination": []}
            for key, sha in sorted(sums.items()):
                in_src, in_dst = key in src, key in dst
                if mode == "copy-only":
                    if not in_src:
                        out.append(f"{table} row {key_text(key)}: gone from the source (copy-only never deletes)")
                    elif src[key] != sha:
                        diff_keys["source"].append(key)
                    if in_dst and dst[key] != sha:
                        diff_keys["destination"].append(key)
                    if placed and (key in moves[table]) != in_dst:
                        out.append(f"{table} row {key_text(key)}: in the destination={in_dst}, expected "
                                   f"{key in moves[table]} (the job {'matches' if key in moves[table] else 'skips'} "
                                   "it)")
                    continue
                if in_src == in_dst:
                    out.append(f"{table} row {key_text(key)}: in source={in_src}, in destination={in_dst} "
                               "(must be in exactly one)")
                    if in_dst and dst[key] != sha:
                        diff_keys["destination"].append(key)
                    continue
                where = "source" if in_src else "destination"
                if (src if in_src else dst)[key] != sha:
                    diff_keys[where].append(key)
                elif placed and (key in moves[table]) != in_dst:
                    out.append(f"{table} row {key_text(key)}: in the {where}, expected in the "
                               f"{'destination (the job matches it)' if key in moves[table] else 'source'}")
            for where, keys in diff_keys.items():
                if not keys:
                    continue
                db = sc.src_db if where == "source" else sc.dst_db
                now = gatest.stored_forms(where, db, table)
                types = {c: ct for c, _, ct in gatest.column_types(where, db, table)}
                for key in keys:
                    cols = [c for c in forms[key] if forms[key][c] != now[key].get(c)]
                    for c in cols:
                        had, holds = show_pair(forms[key][c], now[key].get(c))
                        out.append(f"{table} row {key_text(key)} column {c} {types.get(c, '?')} changed: source had "
                                   f"{had}, {where} now holds {holds}")
                    if not cols:
                        out.append(f"{table} row {key_text(key)}: checksum differs but no column form does")
            for where, now_keys in (("source", src), ("destination", dst)):
                extra = set(now_keys) - set(sums)
                if extra:
                    out.append(f"{table}: {len(extra)} {where} rows that the source did not have before the run: "
                               f"{sorted(map(key_text, extra))[:5]}")
        for child, fk, parent, refs in cat.relations:
            for server, db in (("source", sc.src_db), ("destination", sc.dst_db)):
                on = " AND ".join(f"p.{q(r)} = c.{q(f)}" for f, r in zip(fk, refs))
                n = gatest.sql(server, f"SELECT COUNT(*) FROM {q(db)}.{q(child)} c WHERE NOT EXISTS "
                                       f"(SELECT 1 FROM {q(db)}.{q(parent)} p WHERE {on})")[0][0]
                if n:
                    out.append(f"{n} orphaned {child} rows (no {parent}) on the {server}")
        return out

    def tables(self, sc):
        """{server: sorted table names} of the scenario's source and destination databases."""
        return {server: sorted(r[0] for r in gatest.sql(server, "SELECT TABLE_NAME FROM information_schema.TABLES "
                                                                "WHERE TABLE_SCHEMA=%s", (db,)))
                for server, db in (("source", sc.src_db), ("destination", sc.dst_db))}

    def config(self, sc, cat, verification, defaults=None):
        """A config for CAT's job "j" in VERIFICATION, with DEFAULTS (text of a [client] option file) as the
        defaults_file of both servers when given."""
        extra = {}
        if defaults is not None:
            path = os.path.join(sc.tmp, "client.cnf")
            with open(path, "w") as f:
                f.write(defaults)
            extra = {"defaults_file": path}
        return sc.config({"j": cat.job}, verification=verification, source=extra, destination=extra,
                         processing={"batch_size": 2})

    def archive(self, cat, verification, defaults=None, tag=None, runs=1, mode="archive"):
        """Archives CAT's rows (RUNS times; MODE archive or copy-only) and asserts exit 0, the data invariant and
        the placement, with one message that names every difference."""
        sc = self.make(cat, tag)
        before, moves = self.snapshot(sc, cat)
        cfg = self.config(sc, cat, verification, defaults)
        report = []
        for n in range(runs):
            r = sc.job(mode, cfg)
            bad = self.problems(sc, cat, before, moves, placed=(r.rc == 0), mode=mode)
            if r.rc != 0 or bad:
                report.append(f"run {n + 1} of `{mode}` ({cat.name}, verification {verification}"
                              f"{', defaults_file' if defaults else ''}): exit {r.rc}{' (expected 0)' if r.rc else ''}")
                report += ["  " + p for p in bad]
                report.append("  stderr: " + campaignkit.tail(r.err, 8).replace("\n", "\n          "))
                break
        if report:
            self.fail("\n" + "\n".join(report))
        return sc


# -- the matrix: every category in every setting, in sha256 and count verification ------------------------------------
class Setting:
    def __init__(self, name, defaults=None, globals_=None, mode="archive"):
        self.name, self.defaults, self.globals, self.mode = name, defaults, globals_ or {}, mode


SETTINGS = [
    Setting("plain"),
    Setting("defaults_file", defaults=HOSTILE_DEFAULTS),
    Setting("globals_a", globals_={"source": ("+05:00", HOSTILE_SQL_MODE), "destination": ("America/New_York", "")}),
    Setting("globals_b", globals_={"source": ("America/New_York", ""), "destination": ("-03:00", HOSTILE_SQL_MODE)}),
    Setting("copy_only", mode="copy-only"),
]


def matrix_class(setting):
    class Matrix(Base):
        saved = {}

        @classmethod
        def setUpClass(cls):
            for server, (tz, mode) in setting.globals.items():
                if "/" in tz and not gatest.sql(server, "SELECT COUNT(*) FROM mysql.time_zone_name WHERE Name=%s",
                                                (tz,))[0][0]:
                    tz = "-05:00"  # no time zone tables for it (load_time_zone)
                cls.saved[server] = gatest.sql(server, "SELECT @@global.time_zone, @@global.sql_mode")[0]
                gatest.sql(server, f"SET GLOBAL time_zone = '{tz}', GLOBAL sql_mode = '{mode}'")

        @classmethod
        def tearDownClass(cls):
            for server, (tz, mode) in cls.saved.items():
                gatest.sql(server, "SET GLOBAL time_zone = %s, GLOBAL sql_mode = %s", (tz, mode))
            cls.saved = {}

    name = "TypeFidelity_" + setting.name
    Matrix.__name__ = Matrix.__qualname__ = name
    Matrix.__doc__ = f"Every category archived in setting {setting.name!r}, in sha256 and count verification."
    for cat in CATEGORIES:
        for verification in ("sha256", "count"):
            def test(self, cat=cat, verification=verification):
                self.archive(cat, verification, defaults=setting.defaults, mode=setting.mode)
            test.__name__ = f"test_{cat.name}_{verification}"
            test.__doc__ = f"{cat.name} rows archived exactly ({setting.name}, {verification})"
            if (name, test.__name__) in EXPECTED_FAILURES:
                test = unittest.expectedFailure(test)
            setattr(Matrix, test.__name__, test)
    return Matrix


for _s in SETTINGS:
    _cls = matrix_class(_s)
    globals()[_cls.__name__] = _cls
del _s, _cls


# -- restore: every category archived and restored with 1=1 comes back byte for byte -----------------------------------
class TestRestoreRoundTrip(Base):
    """The round trip of issue 33 on every category: archive, then `restore --where 1=1` leaves the source's tables
    byte-identical to the start (each server's own checksums of its stored bytes) and the archive tables empty."""

    def round_trip(self, cat):
        sc = self.make(cat, f"rt_{cat.name}")
        before, _ = self.snapshot(sc, cat)
        cfg = self.config(sc, cat, "sha256")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        for table, _ in cat.tables:
            sums, forms = before[table]
            now = gatest.stored_checksums("source", sc.src_db, table)
            changed = [key_text(k) for k in sums if now.get(k) != sums[k]]
            self.assertEqual(changed, [], f"{cat.name}: {table} rows not back exactly")
            self.assertEqual(set(now), set(sums), f"{cat.name}: {table} holds other rows than at the start")
            self.assertEqual(gatest.stored_checksums("destination", sc.dst_db, table), {},
                             f"{cat.name}: archive table {table} is not empty")


for _cat in CATEGORIES:
    def _test(self, cat=_cat):
        self.round_trip(cat)
    _test.__name__ = f"test_{_cat.name}"
    setattr(TestRestoreRoundTrip, _test.__name__, _test)
del _cat, _test


# -- one named test per finding of issue 31 item 1 --------------------------------------------------------------------
def expected_failure(test, cls="TestFindings"):
    """unittest.expectedFailure when CLS.TEST is listed in EXPECTED_FAILURES."""
    return unittest.expectedFailure(test) if (cls, test.__name__) in EXPECTED_FAILURES else test


def xfail_in(cls):
    """expected_failure for a test of class CLS (a decorator)."""
    return lambda test: expected_failure(test, cls)


FLOAT_ONLY = Category(
    "float", [("t_float", "id INT PRIMARY KEY, f FLOAT, fu FLOAT UNSIGNED, f74 FLOAT(7,4)")],
    {"t_float": [dict(id="1", f="16777216", fu="16777216"), dict(id="2", f="1.2345678", fu="1.2345678"),
                 dict(id="3", f="3.4028234e38", f74="123.4567"), dict(id="4", f="1.17549435e-38"),
                 dict(id="5", f="1.4e-45"), dict(id="6", f="16777215"), dict(id="7", f="-0e0"),
                 dict(id="8", f="0.1"), dict(id="1000", f="16777216")]},
    {"root_table": "t_float", "where": "id < 1000"}, {"t_float": "id < 1000"})

UTF8MB4_ONLY = Category(
    "utf8mb4", [("t_u8", "id INT PRIMARY KEY, s VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, "
                          "t TEXT CHARACTER SET utf8mb4")],
    {"t_u8": [dict(id="1", s=u(EMOJI), t=u(FAMILY)), dict(id="2", s=u(RARE_CJK), t=u("\U0010FFFF")),
              dict(id="3", s=u("plain"), t=u(EMOJI * 100)), dict(id="1000", s=u(EMOJI))]},
    {"root_table": "t_u8", "where": "id < 1000"}, {"t_u8": "id < 1000"})


class TestFindings(Base):
    @expected_failure
    def test_float_exact(self):
        """1.1: FLOAT 16777216 stays 16777216 (not 16777200), 1.2345678 stays 1.2345678 (not 1.23457); the
        verification sees a loss, in sha256 and in count mode alike the archive is exact."""
        for verification in ("sha256", "count"):
            with self.subTest(verification=verification):
                self.archive(FLOAT_ONLY, verification, tag=f"fl_{verification}")

    @expected_failure
    def test_defaults_file_charset(self):
        """1.2: 4-byte characters (emoji, rare CJK) survive a defaults_file whose [client] says
        default-character-set = utf8."""
        for verification in ("sha256", "count"):
            with self.subTest(verification=verification):
                self.archive(UTF8MB4_ONLY, verification, defaults=UTF8_DEFAULTS, tag=f"u8_{verification}")

    @expected_failure
    def test_invalid_stored_values_copy(self):
        """1.3: an ENUM holding '' (index 0) and zero, partial and invalid dates copy exactly; the job does not fail
        on every run: the run exits 0, and so does the next one."""
        self.archive(INVALID, "sha256", tag="bad", runs=2)

    @expected_failure
    def test_enum_key_refused(self):
        """1.4: a root table whose primary key is an ENUM or a SET column is refused: exit 2, the message names
        ENUM/SET, nothing written to either server (not even the tracking schema)."""
        # 60 roots whose ENUM index order differs from their string order
        members = [f"k{n:02d}" for n in range(59, -1, -1)]
        enum = ", ".join(f"'{m}'" for m in members)
        cases = [("ENUM", f"k ENUM({enum}) NOT NULL PRIMARY KEY, v INT",
                  [dict(k=f"'{m}'", v=str(n)) for n, m in enumerate(members)]),
                 ("SET", "k SET('a','b','c','d','e','f') NOT NULL PRIMARY KEY, v INT",
                  [dict(k=str(n), v=str(n)) for n in range(1, 61)])]
        for kind, body, rows in cases:
            with self.subTest(key=kind):
                cat = Category(f"key_{kind.lower()}", [("t_key", body)], {"t_key": rows},
                               {"root_table": "t_key", "where": "v >= 0"}, {"t_key": "v >= 0"})
                sc = self.make(cat, tag=f"key_{kind.lower()}")
                before, moves = self.snapshot(sc, cat)
                dst_before = gatest.stored_checksums("destination", sc.dst_db, "t_key")
                tables_before = self.tables(sc)
                cfg = self.config(sc, cat, "sha256")
                r = sc.job("archive", cfg)
                problems = []
                if r.rc != 2:
                    problems.append(f"exit {r.rc}, expected 2 (refused: a key column of type {kind})")
                if not re.search(r"\bENUM\b" if kind == "ENUM" else r"\bSET\b", r.err):
                    problems.append(f"stderr does not name {kind}")
                src_now = gatest.stored_checksums("source", sc.src_db, "t_key")
                if src_now != before["t_key"][0]:
                    problems.append(f"the source changed: {len(before['t_key'][0])} rows before, {len(src_now)} "
                                    "now, or their bytes")
                dst_now = gatest.stored_checksums("destination", sc.dst_db, "t_key")
                if dst_now != dst_before:
                    problems.append(f"the destination changed: {len(dst_now)} rows now")
                if sc.job_schema_exists():
                    problems.append("the tracking schema was created")
                if self.tables(sc) != tables_before:
                    problems.append(f"tables changed: {tables_before} before, {self.tables(sc)} after")
                problems += self.problems(sc, cat, before, moves, placed=False)
                if problems:
                    self.fail(f"{kind} key:\n  " + "\n  ".join(problems) + "\n  stderr: " +
                              campaignkit.tail(r.err, 8).replace("\n", "\n          "))


KILL_ON = tuple(os.environ.get("TYPES_KILL_ON", "source").split(","))


class TestDefaultsFileReconnect(Base):
    """A defaults_file with `reconnect = 1` (Connector/C reads it inside mysql_real_connect, after goarchive turned
    MYSQL_OPT_RECONNECT off) must not let a lost connection come back silently as a fresh session: the new session
    has the server's global time_zone and sql_mode instead of goarchive's, and no named lock."""

    @xfail_in("TestDefaultsFileReconnect")
    def test_defaults_file_reconnect(self):
        """Globals +05:00 on both servers; archive (count verification) paused after its first read, every data
        connection of it on the source killed (TYPES_KILL_ON=source,destination: on both), released: either the
        defaults_file is refused (exit 2, naming reconnect, nothing moved), or the data stays exact (a failed run
        is fine) and a rerun finishes with every row exact."""
        cat = TEMPORAL
        sc = self.make(cat, tag="reconnect")
        before, moves = self.snapshot(sc, cat)
        cfg = self.config(sc, cat, "count", defaults="[client]\nreconnect = 1\n")
        saved = {srv: gatest.sql(srv, "SELECT @@global.time_zone")[0][0] for srv in ("source", "destination")}
        self.addCleanup(lambda: [gatest.sql(srv, "SET GLOBAL time_zone = %s", (tz,)) for srv, tz in saved.items()])
        for srv in saved:
            gatest.sql(srv, "SET GLOBAL time_zone = '+05:00'")
        pause = os.path.join(sc.tmp, "pause")
        open(pause, "w").close()
        proc = sc.start("archive", "-c", cfg, "-j", "j", "--no-progress",
                        env={"GOARCHIVE_PAUSE": f"after_read:1:{pause}"})
        killed = []
        try:
            deadline = time.time() + 60
            while not os.path.exists(pause + ".reached") and proc.poll() is None and time.time() < deadline:
                time.sleep(0.02)
            if proc.poll() is None and os.path.exists(pause + ".reached"):
                locks = sc.run("locks", "-c", cfg, "-j", "j")
                holders = {int(n) for n in re.findall(r"held by connection (\d+)", locks.out)}
                for srv in KILL_ON:
                    conn = gatest.connect(srv)
                    try:
                        with conn.cursor() as cur:
                            cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s AND "
                                        "ID <> CONNECTION_ID()", (gatest.env("GA_USER"),))
                            for (cid,) in cur.fetchall():
                                if cid not in holders:
                                    cur.execute(f"KILL CONNECTION {int(cid)}")
                                    killed.append(f"{srv}:{cid}")
                    finally:
                        conn.close()
        finally:
            if os.path.exists(pause):
                os.remove(pause)
        out, err = proc.communicate(timeout=300)
        first = f"run 1 (paused after its first read, data connections {killed} killed): exit {proc.returncode}"
        if proc.returncode == 2 and "reconnect" in err:
            bad = self.problems(sc, cat, before, moves, placed=False)
            self.assertEqual(bad, [], f"{first}, refused, but:\n" + "\n".join(bad))
            return
        self.assertTrue(killed, f"{first}: the run never reached the pause point or had no data connection\n{err}")
        bad = self.problems(sc, cat, before, moves, placed=False)
        report = [first] + ["  " + p for p in bad]
        if os.environ.get("TYPES_VERBOSE"):
            print(f"\n{first}\n{campaignkit.tail(err, 12)}", file=sys.stderr)
        if not bad:
            r = sc.job("archive", cfg)
            bad = self.problems(sc, cat, before, moves, placed=(r.rc == 0))
            if r.rc != 0 or bad:
                report += [f"run 2: exit {r.rc}"] + ["  " + p for p in bad] + \
                    ["  stderr: " + campaignkit.tail(r.err, 6).replace("\n", "\n          ")]
        if len(report) > 1:
            report.append("  run 1 stderr: " + campaignkit.tail(err, 8).replace("\n", "\n          "))
            self.fail("\n" + "\n".join(report))


# -- the judge itself -------------------------------------------------------------------------------------------------
# (column definition, value a, value b): two stored values that a lossy conversion makes alike (a FLOAT's 6-digit
# text, '?' for a 4-byte character, an ENUM's '' member for its index 0, the local text of a TIMESTAMP in a DST
# overlap, a microsecond, trailing 0x00 / 0x20 bytes, '' for NULL, an unmappable cp1251 byte, a spatial SRID).
JUDGE_PAIRS = [
    ("FLOAT", "16777216", "16777200"), ("FLOAT", "1.2345678", "1.23457"), ("DOUBLE", "0.30000000000000004", "0.3"),
    ("DOUBLE", "9007199254740993", "9007199254740995"), ("DECIMAL(65,30)", "'0.000000000000000000000000000001'", "0"),
    ("BIT(64)", "X'8000000000000000'", "X'0000000000000000'"),
    ("VARCHAR(10) CHARACTER SET utf8mb4", u(EMOJI), u("?")), ("VARCHAR(10) CHARACTER SET utf8mb4", u(""), "NULL"),
    ("VARCHAR(10) CHARACTER SET cp1251", b(b"\x98"), u("?")), ("VARBINARY(4)", b(b"a\x00"), b(b"a")),
    ("VARCHAR(4)", u("a "), u("a")), ("ENUM('','x')", "0", "''"), ("SET('a','b')", "'a,b'", "'b'"),
    ("TIMESTAMP(6) NULL", "'2020-11-01 05:30:00'", "'2020-11-01 06:30:00'"),
    ("DATETIME(6)", "'2020-01-01 00:00:00.000001'", "'2020-01-01 00:00:00'"), ("TIME(6)", "'-00:00:00.000001'", "0"),
    ("DATE", "'0000-00-00'", "NULL"), ("YEAR", "0", "2000"), ("JSON", u('{"a": 1.0}'), u('{"a": 1}')),
    ("INET6", "'::ffff:1.2.3.4'", "'::1.2.3.4'"), ("UUID", "'00000000-0000-0000-0000-000000000001'",
                                                   "'00000000-0000-0000-0000-000000000000'"),
    ("POINT", geo("POINT(1 2)", 4326), geo("POINT(1 2)")), ("GEOMETRY", geo("POINT(0.1 0)"), geo("POINT(0.1000001 0)")),
]


class TestJudge(Base):
    """The judge sees what it must: a defaults_file reaches goarchive's session through Connector/C, and the
    server-side forms tell apart every pair of stored values a lossy copy would make alike."""

    def test_defaults_file_reaches_the_session(self):
        """Connector/C (libmariadb.so.3, what goarchive links) reading HOSTILE_DEFAULTS as the [client] group gets a
        session with utf8mb3, latin1 results, +09:00 and PAD_CHAR_TO_FULL_LENGTH: the defaults_file setting fights."""
        import ctypes
        lib = ctypes.CDLL("libmariadb.so.3")
        lib.mysql_init.restype = ctypes.c_void_p
        lib.mysql_init.argtypes = [ctypes.c_void_p]
        lib.mysql_options.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.mysql_real_connect.restype = ctypes.c_void_p
        lib.mysql_real_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_ulong]
        lib.mysql_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.mysql_store_result.restype = ctypes.c_void_p
        lib.mysql_store_result.argtypes = [ctypes.c_void_p]
        lib.mysql_fetch_row.restype = ctypes.POINTER(ctypes.c_char_p)
        lib.mysql_fetch_row.argtypes = [ctypes.c_void_p]
        lib.mysql_free_result.argtypes = [ctypes.c_void_p]
        lib.mysql_error.restype = ctypes.c_char_p
        lib.mysql_error.argtypes = [ctypes.c_void_p]
        lib.mysql_close.argtypes = [ctypes.c_void_p]
        sc = Scenario(self, "ty_judge_df")
        path = os.path.join(sc.tmp, "client.cnf")
        with open(path, "w") as f:
            f.write(HOSTILE_DEFAULTS)
        m = lib.mysql_init(None)
        lib.mysql_options(m, 7, b"utf8mb4")  # MYSQL_SET_CHARSET_NAME, as goarchive sets it before connecting
        lib.mysql_options(m, 4, path.encode())  # MYSQL_READ_DEFAULT_FILE
        lib.mysql_options(m, 5, b"client")  # MYSQL_READ_DEFAULT_GROUP
        try:
            self.assertTrue(lib.mysql_real_connect(m, b"127.0.0.1", gatest.env("GA_USER").encode(),
                                                   gatest.env("GA_PASSWORD").encode(), None,
                                                   int(gatest.env("GA_SOURCE_PORT")), None, 0),
                            lib.mysql_error(m))
            self.assertEqual(lib.mysql_query(m, b"SELECT @@character_set_client, @@character_set_results, "
                                                b"@@time_zone, @@sql_mode"), 0, lib.mysql_error(m))
            res = lib.mysql_store_result(m)
            row = lib.mysql_fetch_row(res)
            got = [row[i].decode() for i in range(4)]
            lib.mysql_free_result(res)
        finally:
            lib.mysql_close(m)
        self.assertEqual(got[:3], ["utf8mb3", "latin1", "+09:00"],
                         "the hostile defaults_file no longer reaches the session: the defaults_file setting tests "
                         "nothing")
        self.assertIn("PAD_CHAR_TO_FULL_LENGTH", got[3])

    def test_forms_tell_lossy_pairs_apart(self):
        """Each pair of JUDGE_PAIRS, stored in row n of two tables of the same definition (a and b) that differ in
        that column only, gives two different checksums and forms that differ in that column only."""
        cols = ", ".join(f"c{n} {ddl}" for n, (ddl, _, _) in enumerate(JUDGE_PAIRS))
        body = f"id INT PRIMARY KEY, {cols}"
        cat = Category("judge", [("t_a", body), ("t_b", body)], {"t_a": [], "t_b": []}, {}, {})
        sc = self.make(cat, tag="judge")
        for table, pick in (("t_a", 1), ("t_b", 2)):
            rows = [{"id": str(n), f"c{n}": pair[pick]} for n, pair in enumerate(JUDGE_PAIRS)]
            session_sql("source", sc.src_db, insert_sql(table, rows), sql_mode="")
        sums = {t: gatest.stored_checksums("source", sc.src_db, t) for t in ("t_a", "t_b")}
        forms = {t: gatest.stored_forms("source", sc.src_db, t) for t in ("t_a", "t_b")}
        blind = []
        for n, (ddl, a, b_) in enumerate(JUDGE_PAIRS):
            k = str(n).encode().hex().upper()
            fa, fb = forms["t_a"][k], forms["t_b"][k]
            differing = [c for c in fa if fa[c] != fb[c]]
            if sums["t_a"][k] == sums["t_b"][k] or differing != [f"c{n}"]:
                blind.append(f"{ddl}: {a} vs {b_}: checksums "
                             f"{'equal' if sums['t_a'][k] == sums['t_b'][k] else 'differ'}, differing columns "
                             f"{differing}, forms {fa[f'c{n}']} / {fb[f'c{n}']}")
        self.assertEqual(blind, [], "the server-side forms cannot see these losses:\n" + "\n".join(blind))

if __name__ == "__main__":
    unittest.main()
