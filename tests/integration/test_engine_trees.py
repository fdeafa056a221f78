#!/usr/bin/python3
"""Tree shapes and key types: exactly the selected roots and every dependent child row move, nothing else."""

import hashlib
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


class TreeTest(unittest.TestCase):
    def archive(self, sc, cfg, job="j", *args):
        r = sc.job("archive", cfg, job, *args)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)
        return r

    def assert_moved(self, sc, table, keys):
        """Exactly KEYS of TABLE are in the destination, and none of them is left in the source."""
        dst = set(sc.rows("destination", table))
        src = set(sc.rows("source", table))
        self.assertEqual(dst, set(keys), f"{table}: destination keys")
        self.assertFalse(src & set(keys), f"{table}: archived keys still in the source")

    def test_single_table(self):
        sc = Scenario(self, "single")
        sc.both(f"CREATE TABLE t (id INT PRIMARY KEY, created DATE NOT NULL, v VARCHAR(20)) {INNODB}")
        sc.src("INSERT INTO t SELECT seq, '2020-01-01' + INTERVAL seq DAY, CONCAT('v', seq) FROM seq_1_to_20")
        before = sc.snapshot(["t"])
        cfg = sc.config({"j": {"root_table": "t", "where": "created < '2020-01-09'"}})
        self.archive(sc, cfg)
        self.assert_moved(sc, "t", [(i,) for i in range(1, 8)])
        self.assertEqual(sc.count("source", "t"), 13)
        sc.assert_invariant(before)

    def test_two_levels(self):
        sc = Scenario(self, "two")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, old TINYINT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v INT, KEY (p_id), "
                f"FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.src("INSERT INTO p SELECT seq, seq % 2 FROM seq_1_to_30")
        sc.src("INSERT INTO c SELECT seq, 1 + seq % 30, seq FROM seq_1_to_90")
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {"root_table": "p", "where": "old = 1",
                               "relations": [{"table": "c", "foreign_key": "p_id"}]}})
        self.archive(sc, cfg)
        self.assert_moved(sc, "p", [(i,) for i in range(1, 31, 2)])
        self.assert_moved(sc, "c", [k for k, row in before["c"].items() if row[1] % 2 == 1])
        self.assertEqual(sc.count("source", "c"), 45)
        sc.assert_invariant(before, [("c", ["p_id"], "p", ["id"])])

    def test_three_levels(self):
        sc = Scenario(self, "three")
        sc.both(f"CREATE TABLE a (id INT PRIMARY KEY, y INT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE b (id INT PRIMARY KEY, a_id INT NOT NULL, FOREIGN KEY (a_id) REFERENCES a (id)) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, b_id INT NOT NULL, FOREIGN KEY (b_id) REFERENCES b (id)) {INNODB}")
        sc.src("INSERT INTO a SELECT seq, 2000 + seq FROM seq_1_to_20")
        sc.src("INSERT INTO b SELECT seq, 1 + seq % 20 FROM seq_1_to_60")
        sc.src("INSERT INTO c SELECT seq, 1 + seq % 60 FROM seq_1_to_180")
        before = sc.snapshot(["a", "b", "c"])
        cfg = sc.config({"j": {"root_table": "a", "where": "y <= 2010", "relations": [
            {"table": "b", "foreign_key": "a_id"}, {"table": "c", "parent": "b", "foreign_key": "b_id"}]}},
            processing={"batch_size": 4})
        self.archive(sc, cfg)
        a_keys = [(i,) for i in range(1, 11)]
        b_keys = [k for k, row in before["b"].items() if row[1] <= 10]
        c_keys = [k for k, row in before["c"].items() if (row[1],) in set(b_keys)]
        self.assert_moved(sc, "a", a_keys)
        self.assert_moved(sc, "b", b_keys)
        self.assert_moved(sc, "c", c_keys)
        self.assertEqual(len(c_keys), 90)
        sc.assert_invariant(before, [("b", ["a_id"], "a", ["id"]), ("c", ["b_id"], "b", ["id"])])

    def test_two_children_of_one_parent(self):
        sc = Scenario(self, "siblings")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY) {INNODB}")
        sc.both(f"CREATE TABLE c1 (id INT PRIMARY KEY, p_id INT NOT NULL, FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.both(f"CREATE TABLE c2 (id INT PRIMARY KEY, parent INT NOT NULL, FOREIGN KEY (parent) REFERENCES p (id)) "
                f"{INNODB}")
        sc.src("INSERT INTO p SELECT seq FROM seq_1_to_12")
        sc.src("INSERT INTO c1 SELECT seq, 1 + seq % 12 FROM seq_1_to_36")
        sc.src("INSERT INTO c2 SELECT 100 + seq, 1 + seq % 6 FROM seq_1_to_18")  # only parents 1..6 have c2 rows
        before = sc.snapshot(["p", "c1", "c2"])
        cfg = sc.config({"j": {"root_table": "p", "where": "id > 4", "relations": [
            {"table": "c1", "foreign_key": "p_id"}, {"table": "c2", "foreign_key": "parent"}]}},
            processing={"batch_size": 3})
        self.archive(sc, cfg)
        self.assert_moved(sc, "p", [(i,) for i in range(5, 13)])
        self.assert_moved(sc, "c1", [k for k, row in before["c1"].items() if row[1] > 4])
        self.assert_moved(sc, "c2", [k for k, row in before["c2"].items() if row[1] > 4])
        self.assertEqual(sc.count("source", "c2"), 12)
        sc.assert_invariant(before, [("c1", ["p_id"], "p", ["id"]), ("c2", ["parent"], "p", ["id"])])

    def test_composite_keys_root_and_child(self):
        sc = Scenario(self, "composite")
        sc.both(f"CREATE TABLE o (region CHAR(2) NOT NULL, id INT NOT NULL, y INT NOT NULL, PRIMARY KEY (region, id)) "
                f"{INNODB}")
        sc.both(f"CREATE TABLE line (region CHAR(2) NOT NULL, order_id INT NOT NULL, n INT NOT NULL, sku VARCHAR(10), "
                f"PRIMARY KEY (region, order_id, n), FOREIGN KEY (region, order_id) REFERENCES o (region, id)) {INNODB}")
        sc.both(f"CREATE TABLE sub (id INT PRIMARY KEY, region CHAR(2) NOT NULL, order_id INT NOT NULL, n INT NOT NULL, "
                f"FOREIGN KEY (region, order_id, n) REFERENCES line (region, order_id, n)) {INNODB}")
        # The same id in several regions: keyset pagination must walk (region, id), not id alone.
        sc.src("INSERT INTO o SELECT r.region, s.seq, s.seq FROM seq_1_to_9 s "
               "JOIN (SELECT 'eu' region UNION ALL SELECT 'us' UNION ALL SELECT 'ap') r")
        sc.src("INSERT INTO line SELECT o.region, o.id, s.seq, CONCAT(o.region, o.id, '-', s.seq) FROM o "
               "JOIN seq_1_to_3 s ON s.seq <= 1 + o.id % 3")
        sc.src("INSERT INTO sub SELECT ROW_NUMBER() OVER (ORDER BY region, order_id, n), region, order_id, n FROM line")
        before = sc.snapshot(["o", "line", "sub"])
        cfg = sc.config({"j": {"root_table": "o", "where": "y <= 5", "relations": [
            {"table": "line", "foreign_key": ["region", "order_id"]},
            {"table": "sub", "parent": "line", "foreign_key": ["region", "order_id", "n"]}]}},
            processing={"batch_size": 2, "delete_batch_size": 1})
        self.archive(sc, cfg)
        self.assert_moved(sc, "o", [k for k, row in before["o"].items() if row[2] <= 5])
        self.assert_moved(sc, "line", [k for k in before["line"] if k[1] <= 5])
        self.assert_moved(sc, "sub", [k for k, row in before["sub"].items() if row[2] <= 5])
        self.assertEqual(sc.count("destination", "o"), 15)
        sc.assert_invariant(before, [("line", ["region", "order_id"], "o", ["region", "id"]),
                                     ("sub", ["region", "order_id", "n"], "line", ["region", "order_id", "n"])])

    def test_varchar_keys(self):
        sc = Scenario(self, "strkeys")
        sc.both(f"CREATE TABLE acct (code VARCHAR(40) PRIMARY KEY, closed TINYINT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE entry (code VARCHAR(40) NOT NULL, seq INT NOT NULL, acct VARCHAR(40) NOT NULL, "
                f"PRIMARY KEY (code, seq), FOREIGN KEY (acct) REFERENCES acct (code)) {INNODB}")
        codes = ["a'quote", "b\\backslash", "c\"dq", "d space", "é-accent", "z🙂emoji", "日本", "%like_", "x0", "x1"]
        for i, c in enumerate(codes):
            sc.src("INSERT INTO acct VALUES (%s, %s)", (c, 1 if i % 3 else 0))
            for n in range(3):
                sc.src("INSERT INTO entry VALUES (%s, %s, %s)", (f"{c}#{n}", n, c))
        before = sc.snapshot(["acct", "entry"])
        cfg = sc.config({"j": {"root_table": "acct", "where": "closed = 1",
                               "relations": [{"table": "entry", "foreign_key": "acct"}]}},
                        processing={"batch_size": 2})
        self.archive(sc, cfg)
        closed = [c for i, c in enumerate(codes) if i % 3]
        self.assert_moved(sc, "acct", [(c,) for c in closed])
        self.assert_moved(sc, "entry", [k for k, row in before["entry"].items() if row[2] in closed])
        sc.assert_invariant(before, [("entry", ["acct"], "acct", ["code"])])

    def check_collation_equal_keys(self, real_fk):
        """A child's foreign key value that equals its parent's key under the column's collation, but not byte for
        byte ('ABC' and 'abc ' reference 'abc' under utf8mb4_general_ci, PAD SPACE), belongs to that parent."""
        sc = Scenario(self, "cikeys")
        sc.both(f"CREATE TABLE a (code VARCHAR(20) PRIMARY KEY, y INT NOT NULL) {INNODB}")
        fk = ", FOREIGN KEY (code) REFERENCES a (code)" if real_fk else ""
        sc.both(f"CREATE TABLE b (id INT PRIMARY KEY, code VARCHAR(20) NOT NULL, KEY (code){fk}) {INNODB}")
        sc.src("INSERT INTO a VALUES ('abc', 1), ('x', 1), ('keep', 2)")
        sc.src("INSERT INTO b VALUES (1, 'abc'), (2, 'ABC'), (3, 'abc '), (4, 'x'), (5, 'Keep')")
        before = sc.snapshot(["a", "b"])
        cfg = sc.config({"j": {"root_table": "a", "where": "y = 1",
                               "relations": [{"table": "b", "foreign_key": "code"}]}})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assert_moved(sc, "a", [("abc",), ("x",)])
        self.assert_moved(sc, "b", [(1,), (2,), (3,), (4,)])
        sc.assert_invariant(before, [("b", ["code"], "a", ["code"])])
        self.assertEqual(sc.unfinished(), 0)

    def test_collation_equal_string_keys_with_foreign_key(self):
        self.check_collation_equal_keys(real_fk=True)

    def test_collation_equal_string_keys_declared_relation_only(self):
        self.check_collation_equal_keys(real_fk=False)

    def test_binary16_keys(self):
        sc = Scenario(self, "binkeys")
        sc.both(f"CREATE TABLE doc (id BINARY(16) PRIMARY KEY, old TINYINT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE part (id BINARY(16) PRIMARY KEY, doc_id BINARY(16) NOT NULL, "
                f"FOREIGN KEY (doc_id) REFERENCES doc (id)) {INNODB}")
        ids = [bytes([i]) * 16 for i in (0x00, 0x27, 0x5C, 0x22, 0x80, 0xFF)] + \
              [b"\x00" * 15 + b"\x01", b"\xff" * 15 + b"\x00", b"ab\x00cd\x1a\n\r'\\%_\xfe\xff\x01\x02", os.urandom(16)]
        for i, d in enumerate(ids):
            sc.src("INSERT INTO doc VALUES (%s, %s)", (d, 0 if i == 3 else 1))
            for n in range(2):
                sc.src("INSERT INTO part VALUES (%s, %s)", (hashlib.md5(d + bytes([n])).digest(), d))
        before = sc.snapshot(["doc", "part"])
        cfg = sc.config({"j": {"root_table": "doc", "where": "old = 1",
                               "relations": [{"table": "part", "foreign_key": "doc_id"}]}},
                        processing={"batch_size": 3})
        self.archive(sc, cfg)
        self.assert_moved(sc, "doc", [(d,) for i, d in enumerate(ids) if i != 3])
        self.assert_moved(sc, "part", [k for k, row in before["part"].items() if row[1] != ids[3]])
        self.assertEqual(sc.count("source", "doc"), 1)
        self.assertEqual(sc.count("source", "part"), 2)
        sc.assert_invariant(before, [("part", ["doc_id"], "doc", ["id"])])

    def test_datetime_and_decimal_keys(self):
        sc = Scenario(self, "dtkeys")
        sc.both(f"CREATE TABLE a (ts DATETIME(6) PRIMARY KEY, y INT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE b (amount DECIMAL(12,4) PRIMARY KEY, ts DATETIME(6) NOT NULL, "
                f"FOREIGN KEY (ts) REFERENCES a (ts)) {INNODB}")
        sc.src("INSERT INTO a SELECT '2020-01-01' + INTERVAL seq SECOND + INTERVAL seq * 7 MICROSECOND, seq "
               "FROM seq_1_to_20")
        sc.src("INSERT INTO b SELECT seq / 7, (SELECT ts FROM a WHERE y = 1 + seq % 20) FROM seq_1_to_40")
        before = sc.snapshot(["a", "b"])
        cfg = sc.config({"j": {"root_table": "a", "where": "y <= 10",
                               "relations": [{"table": "b", "foreign_key": "ts"}]}}, processing={"batch_size": 3})
        self.archive(sc, cfg)
        self.assert_moved(sc, "a", [k for k, row in before["a"].items() if row[1] <= 10])
        self.assertEqual(sc.count("destination", "b"), 20)
        sc.assert_invariant(before, [("b", ["ts"], "a", ["ts"])])

    def test_reserved_word_and_odd_identifiers(self):
        sc = Scenario(self, "idents")
        sc.both(f"CREATE TABLE `order` (`key` INT PRIMARY KEY, `select` INT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE `line items` (`id``x` INT PRIMARY KEY, `order id` INT NOT NULL, "
                f"FOREIGN KEY (`order id`) REFERENCES `order` (`key`)) {INNODB}")
        sc.src("INSERT INTO `order` SELECT seq, seq % 2 FROM seq_1_to_10")
        sc.src("INSERT INTO `line items` SELECT seq, 1 + seq % 10 FROM seq_1_to_30")
        before = sc.snapshot(["order", "line items"])
        cfg = sc.config({"j": {"root_table": "order", "where": "`select` = 1",
                               "relations": [{"table": "line items", "foreign_key": "order id"}]}},
                        processing={"batch_size": 2})
        self.archive(sc, cfg)
        self.assert_moved(sc, "order", [(i,) for i in range(1, 11, 2)])
        self.assertEqual(sc.count("destination", "line items"), 15)
        sc.assert_invariant(before, [("line items", ["order id"], "order", ["key"])])

    def test_references_a_unique_key(self):
        sc = Scenario(self, "refs")
        sc.both(f"CREATE TABLE acct (id INT PRIMARY KEY, number CHAR(8) NOT NULL UNIQUE, closed TINYINT) {INNODB}")
        sc.both(f"CREATE TABLE tx (id INT PRIMARY KEY, acct_number CHAR(8) NOT NULL, "
                f"FOREIGN KEY (acct_number) REFERENCES acct (number)) {INNODB}")
        sc.src("INSERT INTO acct SELECT seq, CONCAT('N', LPAD(100 - seq, 7, '0')), seq % 2 FROM seq_1_to_12")
        sc.src("INSERT INTO tx SELECT seq, CONCAT('N', LPAD(100 - (1 + seq % 12), 7, '0')) FROM seq_1_to_36")
        before = sc.snapshot(["acct", "tx"])
        cfg = sc.config({"j": {"root_table": "acct", "where": "closed = 1", "relations": [
            {"table": "tx", "foreign_key": "acct_number", "references": "number"}]}}, processing={"batch_size": 4})
        self.archive(sc, cfg)
        self.assertEqual((sc.count("destination", "acct"), sc.count("destination", "tx")), (6, 18))
        sc.assert_invariant(before, [("tx", ["acct_number"], "acct", ["number"])])

    def test_batch_larger_than_one_in_list_chunk(self):
        sc = Scenario(self, "bigbatch")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, y INT NOT NULL) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.src("INSERT INTO p SELECT seq, seq % 10 FROM seq_1_to_2600")
        sc.src("INSERT INTO c SELECT seq, 1 + seq % 2600 FROM seq_1_to_5200")
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {"root_table": "p", "where": "y > 0", "relations": [{"table": "c", "foreign_key": "p_id"}]}},
                        processing={"batch_size": 2500, "delete_batch_size": 700})
        self.archive(sc, cfg)
        self.assertEqual((sc.count("destination", "p"), sc.count("destination", "c")), (2340, 4680))
        sc.assert_invariant(before, [("c", ["p_id"], "p", ["id"])])

    def test_null_foreign_keys_stay(self):
        sc = Scenario(self, "nullfk")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NULL, FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.src("INSERT INTO p SELECT seq FROM seq_1_to_10")
        sc.src("INSERT INTO c SELECT seq, IF(seq % 3 = 0, NULL, 1 + seq % 10) FROM seq_1_to_40")
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {"root_table": "p", "where": "1=1", "relations": [{"table": "c", "foreign_key": "p_id"}]}})
        self.archive(sc, cfg)
        self.assertEqual(sc.count("source", "p"), 0)
        nulls = {k for k, row in before["c"].items() if row[1] is None}
        self.assertEqual(set(sc.rows("source", "c")), nulls, "child rows with a NULL foreign key stay in the source")
        self.assert_moved(sc, "c", [k for k in before["c"] if k not in nulls])
        sc.assert_invariant(before, [("c", ["p_id"], "p", ["id"])])

    def test_empty_selection_nothing_to_do(self):
        sc = Scenario(self, "empty")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, y INT) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.src("INSERT INTO p SELECT seq, seq FROM seq_1_to_10")
        sc.src("INSERT INTO c SELECT seq, 1 + seq % 10 FROM seq_1_to_20")
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {"root_table": "p", "where": "y > 1000",
                               "relations": [{"table": "c", "foreign_key": "p_id"}]}})
        r = self.archive(sc, cfg)
        self.assertIn("nothing to do", r.out)
        self.assertEqual(sc.count("destination", "p"), 0)
        self.assertEqual(sc.count("destination", "c"), 0)
        self.assertEqual(sc.snapshot(["p", "c"]), before)

    def test_where_1_eq_1_archives_everything(self):
        sc = Scenario(self, "all")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.src("INSERT INTO p SELECT seq FROM seq_1_to_25")
        sc.src("INSERT INTO c SELECT seq, 1 + seq % 25 FROM seq_1_to_75")
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {"root_table": "p", "where": "1=1", "relations": [{"table": "c", "foreign_key": "p_id"}]}},
                        processing={"batch_size": 10})
        self.archive(sc, cfg)
        self.assertEqual((sc.count("source", "p"), sc.count("source", "c")), (0, 0))
        self.assertEqual((sc.count("destination", "p"), sc.count("destination", "c")), (25, 75))
        sc.assert_invariant(before, [("c", ["p_id"], "p", ["id"])])

    def test_batches_and_small_delete_batch(self):
        sc = Scenario(self, "batches")
        sc.both(f"CREATE TABLE p (id INT PRIMARY KEY) {INNODB}")
        sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, FOREIGN KEY (p_id) REFERENCES p (id)) {INNODB}")
        sc.src("INSERT INTO p SELECT seq FROM seq_1_to_25")
        sc.src("INSERT INTO c SELECT seq, 1 + seq % 25 FROM seq_1_to_100")
        before = sc.snapshot(["p", "c"])
        cfg = sc.config({"j": {"root_table": "p", "where": "id <= 22",
                               "relations": [{"table": "c", "foreign_key": "p_id"}]}},
                        processing={"batch_size": 7, "delete_batch_size": 3})
        r = sc.job("archive", cfg, "j", "-vvv")
        self.assertEqual(r.rc, 0, r)
        log = r.out + r.err
        # 22 roots in batches of 7: four batches, numbered.
        self.assertEqual(sorted(set(int(n) for n in re.findall(r"batch (\d+) start", log))), [1, 2, 3, 4], log[-3000:])
        self.assertRegex(log, r"batch 4 start: 1 root")
        # Every DELETE statement names at most delete_batch_size keys.
        deletes = [ln for ln in log.splitlines() if re.search(r"\bDELETE FROM\b.*" + re.escape(sc.src_db), ln)]
        self.assertTrue(deletes, "no DELETE statements were logged at -vvv")
        for ln in deletes:
            if " BETWEEN " in ln:  # an unbroken run of integer keys: one range of LIMIT n keys
                n_keys = int(re.search(r"LIMIT (\d+)", ln).group(1))
            else:
                in_list = ln.split(" IN (", 1)[1].split(" RETURNING ", 1)[0]
                n_keys = in_list.count("),(") + 1 if " IN ((" in ln else in_list.count(",") + 1
            self.assertLessEqual(n_keys, 3, ln)
        self.assertTrue([ln for ln in deletes if " BETWEEN " in ln], "no root DELETE went by range")
        # 22 roots -> 8 root DELETEs at most 3 each (3+3+1 per batch of 7, 1 for the last): 10 statements for p.
        p_deletes = [ln for ln in deletes if re.search(r"DELETE FROM `[^`]+`\.`p`", ln)]
        self.assertEqual(len(p_deletes), 10, "\n".join(p_deletes))
        self.assertEqual(sc.count("destination", "p"), 22)
        self.assertEqual(sc.count("destination", "c"), 88)
        self.assertEqual(sc.unfinished(), 0)
        sc.assert_invariant(before, [("c", ["p_id"], "p", ["id"])])


if __name__ == "__main__":
    unittest.main()
