#!/usr/bin/python3
"""`goarchive schema -j JOB [--apply]`: the destination tables of a job, made from the source's definitions.

Parents before children; columns, types, charsets, collations and every index as on the source; foreign keys only
along the job's relations (none with foreign_key_checks = false); no AUTO_INCREMENT, no partitioning; an existing
table is left as it is; a second --apply changes nothing.
"""

import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import SHOP, SHOP_JOB, SHOP_TABLES, Scenario, statements  # noqa: E402

q = gatest.quote_ident


def load_shop_source(sc, orders=120):
    """The demo shop (customers -> orders -> ...) on the source only: the destination gets it from `schema`."""
    for stmt in statements(os.path.join(SHOP, "shop_schema.sql")):
        sc.src(stmt)
    for stmt in statements(os.path.join(SHOP, "shop_data.sql")):
        if not stmt.startswith("SET @orders"):
            sc.src(stmt.replace("@orders", str(orders)))


def drop_destination_database(sc):
    gatest.sql("destination", f"DROP DATABASE IF EXISTS {q(sc.dst_db)}")


def database_exists(server, db):
    return bool(gatest.sql(server, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=%s", (db,))[0][0])


def foreign_keys(server, db):
    """{(table, constraint): (referenced schema, referenced table, (columns...))} of every FK declared in DB."""
    out = {}
    for table, name, col, ref_db, ref_table in gatest.sql(
            server, "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME "
                    "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s AND REFERENCED_TABLE_NAME IS NOT "
                    "NULL ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION", (db,)):
        prev = out.get((table, name), (ref_db, ref_table, ()))
        out[(table, name)] = (ref_db, ref_table, prev[2] + (col,))
    return out


def show_create(server, db, table):
    return gatest.sql(server, f"SHOW CREATE TABLE {q(db)}.{q(table)}")[0][1]


def create_statements(text):
    """The CREATE TABLE statements of `schema` output, in order, as {table: statement} plus the order."""
    order, stmts = [], {}
    for m in re.finditer(r"^CREATE TABLE `(?:[^`]|``)+`\.`((?:[^`]|``)+)` \(.*?\n\)[^\n]*;$", text, re.M | re.S):
        name = m.group(1).replace("``", "`")
        order.append(name)
        stmts[name] = m.group(0)
    return order, stmts


def columns_meta(server, db, table):
    """Everything information_schema.COLUMNS says about a table's columns, AUTO_INCREMENT aside."""
    rows = gatest.sql(server, "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, COLUMN_TYPE, "
                              "CHARACTER_SET_NAME, COLLATION_NAME, GENERATION_EXPRESSION, IS_GENERATED, "
                              "TRIM(REPLACE(LOWER(EXTRA), 'auto_increment', '')), COLUMN_COMMENT "
                              "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                              "ORDER BY ORDINAL_POSITION", (db, table))
    return list(rows)


def statistics(server, db, table):
    return list(gatest.sql(server, "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, SUB_PART, INDEX_TYPE, "
                                   "COLLATION, NULLABLE, IGNORED FROM information_schema.STATISTICS WHERE "
                                   "TABLE_SCHEMA=%s AND TABLE_NAME=%s ORDER BY INDEX_NAME, SEQ_IN_INDEX", (db, table)))


class SchemaCommandTest(unittest.TestCase):
    def schema(self, sc, cfg, *args, job="j", rc=0):
        r = sc.job("schema", cfg, job, *args)
        self.assertEqual(r.rc, rc, r)
        return r

    # (1) ------------------------------------------------------------------------------------------------------
    def test_shop_tree_print_apply_validate_archive(self):
        sc = Scenario(self, "schema_shop")
        gatest.sql("source", f"ALTER DATABASE {q(sc.src_db)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        load_shop_source(sc)
        drop_destination_database(sc)
        cfg = sc.config({"j": SHOP_JOB})

        out = self.schema(sc, cfg).out
        self.assertFalse(database_exists("destination", sc.dst_db), "printing must not create anything")
        self.assertIn(f"CREATE DATABASE IF NOT EXISTS {q(sc.dst_db)} DEFAULT CHARACTER SET utf8mb4 "
                      f"COLLATE utf8mb4_unicode_ci;", out)
        order, stmts = create_statements(out)
        self.assertEqual(sorted(order), sorted(SHOP_TABLES))
        self.assertLess(order.index("orders"), order.index("order_items"))
        self.assertLess(order.index("shipments"), order.index("shipment_items"))
        for table, stmt in stmts.items():
            self.assertNotIn("customers", stmt, table)
            self.assertNotIn("AUTO_INCREMENT", stmt, table)
            self.assertNotIn(q(sc.src_db), stmt, table)
        self.assertIn(f"REFERENCES {q(sc.dst_db)}.`orders` (`id`)", stmts["order_items"])
        self.assertIn(f"REFERENCES {q(sc.dst_db)}.`shipments` (`id`)", stmts["shipment_items"])
        self.assertNotIn("FOREIGN KEY", stmts["orders"])
        self.assertIn("-- left out: foreign key fk_orders_customer (customer_id) references customers: not a table "
                      "of the job", out)

        r = self.schema(sc, cfg, "--apply")
        self.assertIn(f"created database {sc.dst_db}", r.out)
        for t in SHOP_TABLES:
            self.assertIn(f"created table {sc.dst_db}.{t}\n", r.out)
        self.assertEqual(gatest.sql("destination", "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM "
                                                   "information_schema.SCHEMATA WHERE SCHEMA_NAME=%s", (sc.dst_db,)),
                         (("utf8mb4", "utf8mb4_unicode_ci"),))
        self.assertEqual(foreign_keys("destination", sc.dst_db), {
            ("order_items", "fk_items_order"): (sc.dst_db, "orders", ("order_id",)),
            ("payments", "fk_payments_order"): (sc.dst_db, "orders", ("order_id",)),
            ("shipments", "fk_shipments_order"): (sc.dst_db, "orders", ("order_id",)),
            ("shipment_items", "fk_sitems_shipment"): (sc.dst_db, "shipments", ("shipment_id",))})
        self.assertEqual(gatest.sql("destination", "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                                                   "TABLE_SCHEMA=%s AND EXTRA LIKE '%%auto_increment%%'",
                                    (sc.dst_db,))[0][0], 0)
        for t in SHOP_TABLES:
            self.assertEqual(columns_meta("source", sc.src_db, t), columns_meta("destination", sc.dst_db, t), t)
            self.assertEqual(statistics("source", sc.src_db, t), statistics("destination", sc.dst_db, t), t)

        v = sc.job("validate", cfg)
        self.assertEqual(v.rc, 0, v)
        before = sc.snapshot(SHOP_TABLES)
        a = sc.job("archive", cfg)
        self.assertEqual(a.rc, 0, a)
        self.assertEqual(sc.unfinished(), 0)
        self.assertGreater(sc.count("destination", "orders"), 0)
        self.assertGreater(sc.count("source", "orders"), 0)
        self.assertGreater(sc.count("destination", "shipment_items"), 0)
        sc.assert_invariant(before)

    # (2) ------------------------------------------------------------------------------------------------------
    def test_no_foreign_keys_when_foreign_key_checks_is_off(self):
        sc = Scenario(self, "schema_nofk")
        load_shop_source(sc, orders=40)
        drop_destination_database(sc)
        cfg = sc.config({"j": SHOP_JOB}, destination={"foreign_key_checks": False})
        out = self.schema(sc, cfg).out
        _, stmts = create_statements(out)
        self.assertEqual(sorted(stmts), sorted(SHOP_TABLES))
        for table, stmt in stmts.items():
            self.assertNotIn("FOREIGN KEY", stmt, table)
            self.assertNotIn("REFERENCES", stmt, table)
        self.assertIn("foreign_key_checks = false", out)
        # The printed text is a script for the mariadb client as it is.
        client = shutil.which("mariadb") or shutil.which("mysql")
        self.assertIsNotNone(client, "no mariadb client to pipe the statements into")
        p = subprocess.run([client, "--no-defaults", "-h", os.environ.get("GA_HOST", "127.0.0.1"), "-P",
                            gatest.env("GA_DEST_PORT"), "-u", gatest.env("GA_USER"),
                            f"-p{gatest.env('GA_PASSWORD')}", "--default-character-set=utf8mb4"],
                           input=out, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(foreign_keys("destination", sc.dst_db), {})
        # The indexes InnoDB made for the source's foreign keys are still there.
        self.assertEqual(statistics("source", sc.src_db, "order_items"),
                         statistics("destination", sc.dst_db, "order_items"))
        before = sc.snapshot(SHOP_TABLES)
        a = sc.job("archive", cfg)
        self.assertEqual(a.rc, 0, a)
        sc.assert_invariant(before)

    # (3) ------------------------------------------------------------------------------------------------------
    def test_existing_destination_table_is_left_as_is(self):
        sc = Scenario(self, "schema_exists")
        load_shop_source(sc, orders=10)
        # Scenario made the destination database; it holds an orders table of its own, with a row.
        sc.dst("CREATE TABLE orders (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, customer_id BIGINT UNSIGNED NOT NULL, "
               "created_at DATETIME NOT NULL, status VARCHAR(20) NOT NULL, total DECIMAL(12,2) NOT NULL, note TEXT, "
               "legacy VARCHAR(5) NULL COMMENT 'kept by hand') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 "
               "COMMENT='made by a person'")
        sc.dst("INSERT INTO orders VALUES (999999, 1, '2001-01-01', 'old', 1.00, NULL, 'x')")
        before = show_create("destination", sc.dst_db, "orders")
        cfg = sc.config({"j": SHOP_JOB})
        r = self.schema(sc, cfg, "--apply")
        self.assertIn(f"database {sc.dst_db} exists", r.out)
        self.assertIn(f"table {sc.dst_db}.orders exists, left as is", r.out)
        self.assertIn("4 tables created, 1 left as is", r.out)
        self.assertEqual(show_create("destination", sc.dst_db, "orders"), before)
        self.assertEqual(sc.count("destination", "orders"), 1)
        # The children were created and point at the table that was there.
        self.assertEqual(foreign_keys("destination", sc.dst_db)[("order_items", "fk_items_order")],
                         (sc.dst_db, "orders", ("order_id",)))

    # (4) ------------------------------------------------------------------------------------------------------
    def test_types_charsets_collations_and_indexes_are_preserved(self):
        sc = Scenario(self, "schema_types")
        root, child = "pro`d, x", "ev t"
        sc.src(f"CREATE TABLE {q(root)} ("
               "id INT UNSIGNED NOT NULL AUTO_INCREMENT, "
               "code VARCHAR(20) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, "
               "name VARCHAR(100) CHARACTER SET latin1 COLLATE latin1_german1_ci NOT NULL DEFAULT 'a, b' "
               "COMMENT 'x, (y) FOREIGN KEY', "
               "title VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, "
               "kind ENUM('a,b','it''s','c') NOT NULL DEFAULT 'c', "
               "flags SET('x','y z') NULL, "
               "price DECIMAL(14,4) NOT NULL DEFAULT 0, "
               "doc JSON NULL, "
               "raw VARBINARY(32) NULL, "
               "created TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3), "
               "upper_code VARCHAR(20) AS (UPPER(code)) VIRTUAL, "
               "total DECIMAL(16,4) AS (price * 2) STORED, "
               "secret INT NULL INVISIBLE, "
               "PRIMARY KEY (id), UNIQUE KEY uk_code (code), KEY k_name_prefix (name(10), kind), "
               "KEY k_total (total), KEY k_title_desc (title DESC), FULLTEXT KEY ft_title (title), "
               "CONSTRAINT chk_price CHECK (price >= 0)"
               ") ENGINE=InnoDB AUTO_INCREMENT=1000 DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci "
               "ROW_FORMAT=DYNAMIC COMMENT='rows, with commas'")
        sc.src(f"CREATE TABLE {q(child)} (id BIGINT NOT NULL, prod_id INT UNSIGNED NOT NULL, at DATE NOT NULL, "
               "note VARCHAR(50) CHARACTER SET utf8mb3 COLLATE utf8mb3_unicode_ci, "
               "PRIMARY KEY (id, at), KEY k_prod (prod_id, at)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 "
               "PARTITION BY RANGE (YEAR(at)) (PARTITION p0 VALUES LESS THAN (2020), PARTITION p1 VALUES LESS THAN "
               "MAXVALUE)")
        sc.src(f"INSERT INTO {q(root)} (code, name, title, kind, flags, price, doc, raw, secret) VALUES "
               "('a1', 'Ärger', 'Tïtle 😀', 'a,b', 'x,y z', 1.5, '{\"k\": 1}', X'00FF27', 7), "
               "('a2', 'b', NULL, 'it''s', NULL, 2, NULL, NULL, NULL)")
        sc.src(f"INSERT INTO {q(child)} VALUES (1, 1000, '2019-05-01', 'n'), (2, 1000, '2024-01-01', NULL), "
               "(3, 1001, '2025-01-01', 'é')")
        drop_destination_database(sc)
        cfg = sc.config({"j": {"root_table": root, "where": "1=1",
                               "relations": [{"table": child, "foreign_key": "prod_id"}]}})
        r = self.schema(sc, cfg, "--apply")
        self.assertIn("the partitioning clause", r.out)
        for t in (root, child):
            self.assertGreaterEqual(len(columns_meta("source", sc.src_db, t)), 4, t)
            self.assertGreaterEqual(len(statistics("source", sc.src_db, t)), 2, t)
            self.assertEqual(columns_meta("source", sc.src_db, t), columns_meta("destination", sc.dst_db, t), t)
            # Every index as on the source, except that a secondary UNIQUE key is a plain index in an archive (a
            # value the source frees and reuses is archived again beside the old row).
            expected = [tuple(1 if (i == 3 and row[0] == "uk_code") else v for i, v in enumerate(row))
                        for row in statistics("source", sc.src_db, t)]
            self.assertEqual(expected, statistics("destination", sc.dst_db, t), t)
        self.assertIn("the uniqueness of key uk_code (kept as a plain index)", r.out)
        tables = "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION, TABLE_COMMENT, ROW_FORMAT FROM information_schema.TABLES " \
                 "WHERE TABLE_SCHEMA=%s ORDER BY 1"
        self.assertEqual(gatest.sql("source", tables, (sc.src_db,)), gatest.sql("destination", tables, (sc.dst_db,)))
        checks = "SELECT TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE " \
                 "CONSTRAINT_SCHEMA=%s ORDER BY 1, 2"
        self.assertEqual(gatest.sql("source", checks, (sc.src_db,)), gatest.sql("destination", checks, (sc.dst_db,)))
        self.assertEqual(gatest.sql("destination", "SELECT CREATE_OPTIONS FROM information_schema.TABLES WHERE "
                                                   "TABLE_SCHEMA=%s AND TABLE_NAME=%s", (sc.dst_db, child))[0][0], "")
        self.assertEqual(gatest.sql("destination", "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE "
                                                   "TABLE_SCHEMA=%s AND TABLE_NAME=%s", (sc.dst_db, root))[0][0], None)
        # The copy does not write generated columns; invisible ones travel like any other.
        before = sc.snapshot([root, child])
        a = sc.job("archive", cfg)
        self.assertEqual(a.rc, 0, a)
        self.assertEqual(sc.count("source", root), 0)
        sc.assert_invariant(before)

    # (5) ------------------------------------------------------------------------------------------------------
    def test_apply_twice_is_idempotent(self):
        sc = Scenario(self, "schema_twice")
        load_shop_source(sc, orders=10)
        drop_destination_database(sc)
        cfg = sc.config({"j": SHOP_JOB})
        self.schema(sc, cfg, "--apply")
        first = {t: show_create("destination", sc.dst_db, t) for t in SHOP_TABLES}
        r = self.schema(sc, cfg, "--apply")
        self.assertIn(f"database {sc.dst_db} exists on", r.out)
        for t in SHOP_TABLES:
            self.assertIn(f"table {sc.dst_db}.{t} exists, left as is", r.out)
        self.assertIn("0 tables created, 5 left as is", r.out)
        self.assertEqual({t: show_create("destination", sc.dst_db, t) for t in SHOP_TABLES}, first)

    # errors ---------------------------------------------------------------------------------------------------
    def test_unknown_job_and_missing_source_table_exit_2_and_touch_nothing(self):
        sc = Scenario(self, "schema_errors")
        load_shop_source(sc, orders=5)
        drop_destination_database(sc)
        job = dict(SHOP_JOB, relations=SHOP_JOB["relations"] + [{"table": "refunds", "foreign_key": "order_id"}])
        cfg = sc.config({"j": job})
        r = sc.job("schema", cfg, "nope", "--apply")
        self.assertEqual(r.rc, 2, r)
        self.assertIn('job "nope"', r.err)
        r = sc.job("schema", cfg, "j", "--apply")
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"table {sc.src_db}.refunds does not exist on the source", r.err)
        self.assertEqual(r.out, "")
        self.assertFalse(database_exists("destination", sc.dst_db))


if __name__ == "__main__":
    unittest.main()
