#!/usr/bin/python3
"""Preflight refuses unsafe trees before any data moves: exit 1, one message that names the table and the fix,
nothing changed on either server (not even the tracking schema)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


def pc(sc, child_engine="InnoDB"):
    """p -> c on both sides with a few rows in the source."""
    sc.both(f"CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(10)) {INNODB}")
    sc.both(f"CREATE TABLE c (id INT PRIMARY KEY, p_id INT NOT NULL, v VARCHAR(10), KEY (p_id)) ENGINE={child_engine}")
    sc.src("INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_10")
    sc.src("INSERT INTO c SELECT seq, 1 + seq % 10, CONCAT('c', seq) FROM seq_1_to_20")


PC_JOB = {"root_table": "p", "where": "1=1", "relations": [{"table": "c", "foreign_key": "p_id"}]}


class PreflightTest(unittest.TestCase):
    def assert_refused(self, sc, cfg, *texts, command="archive", rc=1):
        state = sc.state()
        r = sc.job(command, cfg)
        self.assertEqual(r.rc, rc, r)
        if rc == 1:
            self.assertIn('preflight refused job "j" before any data moved', r.err)
        for t in texts:
            self.assertIn(t, r.err, r)
        self.assertNotIn("batch 1 start", r.err)
        self.assertEqual(sc.state(), state, "a refused run changed a server")
        self.assertFalse(sc.job_schema_exists(), "a refused run created the tracking schema")
        return r

    def test_view_as_root(self):
        sc = Scenario(self, "view")
        pc(sc)
        sc.src("CREATE VIEW pv AS SELECT * FROM p")
        cfg = sc.config({"j": {"root_table": "pv", "where": "1=1"}})
        self.assert_refused(sc, cfg, f"{sc.src_db}.pv is a view, not a base table", "name the underlying table")

    def test_table_without_primary_key(self):
        sc = Scenario(self, "nopk")
        sc.both(f"CREATE TABLE t (a INT, b INT, UNIQUE KEY (a)) {INNODB}")
        sc.src("INSERT INTO t VALUES (1, 1), (2, 2)")
        cfg = sc.config({"j": {"root_table": "t", "where": "1=1"}})
        self.assert_refused(sc, cfg, f"table {sc.src_db}.t has no primary key",
                            f"ALTER TABLE `{sc.src_db}`.`t` ADD PRIMARY KEY")

    def test_myisam_table(self):
        sc = Scenario(self, "myisam")
        pc(sc, child_engine="MyISAM")
        cfg = sc.config({"j": PC_JOB})
        self.assert_refused(sc, cfg, f"table {sc.src_db}.c uses the MyISAM engine",
                            f"ALTER TABLE `{sc.src_db}`.`c` ENGINE=InnoDB")

    def test_external_foreign_key_into_the_tree(self):
        sc = Scenario(self, "external")
        pc(sc)
        sc.both(f"CREATE TABLE audit (id INT PRIMARY KEY, p_id INT, CONSTRAINT fk_audit_p FOREIGN KEY (p_id) "
                f"REFERENCES p (id) ON DELETE CASCADE) {INNODB}")
        sc.src("INSERT INTO audit VALUES (1, 3)")
        cfg = sc.config({"j": PC_JOB})
        self.assert_refused(sc, cfg, f"foreign key fk_audit_p on {sc.src_db}.audit references {sc.src_db}.p ON "
                                     "DELETE CASCADE", "add audit to the job: [[jobs.j.relations]] table = "
                                                       '"audit" parent = "p" foreign_key = ["p_id"]; or archive '
                                                       "audit first")
        self.assert_refused(sc, cfg, "fk_audit_p", command="purge")
        # copy-only deletes nothing, so an external reference is harmless there.
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "p"), 10)

    def test_delete_trigger_on_source(self):
        sc = Scenario(self, "deltrg")
        pc(sc)
        sc.src("CREATE TRIGGER c_del AFTER DELETE ON c FOR EACH ROW SET @deleted = 1")
        cfg = sc.config({"j": PC_JOB})
        self.assert_refused(sc, cfg, f"table {sc.src_db}.c has a DELETE trigger on the source",
                            "drop or disable the trigger, or run copy-only")
        self.assert_refused(sc, cfg, "DELETE trigger", command="purge")

    def test_second_parent_inside_the_tree(self):
        sc = Scenario(self, "twoparents")
        sc.both(f"CREATE TABLE customer (id INT PRIMARY KEY) {INNODB}")
        sc.both(f"CREATE TABLE rental (id INT PRIMARY KEY, customer_id INT NOT NULL, CONSTRAINT fk_rental_customer "
                f"FOREIGN KEY (customer_id) REFERENCES customer (id)) {INNODB}")
        sc.both(f"CREATE TABLE payment (id INT PRIMARY KEY, rental_id INT NOT NULL, customer_id INT NOT NULL, "
                f"CONSTRAINT fk_payment_rental FOREIGN KEY (rental_id) REFERENCES rental (id), "
                f"CONSTRAINT fk_payment_customer FOREIGN KEY (customer_id) REFERENCES customer (id)) {INNODB}")
        sc.src("INSERT INTO customer SELECT seq FROM seq_1_to_3")
        sc.src("INSERT INTO rental SELECT seq, 1 + seq % 3 FROM seq_1_to_6")
        sc.src("INSERT INTO payment SELECT seq, 1 + seq % 6, 1 + seq % 2 FROM seq_1_to_6")
        cfg = sc.config({"j": {"root_table": "customer", "where": "1=1", "relations": [
            {"table": "rental", "foreign_key": "customer_id"},
            {"table": "payment", "parent": "rental", "foreign_key": "rental_id"}]}})
        r = self.assert_refused(sc, cfg, "foreign key fk_payment_customer", f"{sc.src_db}.payment (customer_id) "
                                f"references {sc.src_db}.customer, a table of the job, but the job has no such relation",
                                'Declare it as a further parent of payment: [[jobs.j.relations]] table = "payment" '
                                'parent = "customer" foreign_key = ["customer_id"]')
        self.assertNotIn("fk_payment_rental", r.err)
        self.assertNotIn("fk_rental_customer", r.err)

    def test_destination_table_missing(self):
        sc = Scenario(self, "dstmissing")
        pc(sc)
        sc.dst("DROP TABLE c")
        cfg = sc.config({"j": PC_JOB})
        self.assert_refused(sc, cfg, f"table {sc.dst_db}.c does not exist on the destination",
                            f"SHOW CREATE TABLE `{sc.src_db}`.`c`")

    def test_destination_column_type_mismatch(self):
        sc = Scenario(self, "dsttype")
        pc(sc)
        sc.dst("ALTER TABLE c MODIFY v VARCHAR(5)")
        cfg = sc.config({"j": PC_JOB})
        self.assert_refused(sc, cfg, "column c.v is varchar(5)", "on the destination but varchar(10)",
                            "make the destination column the same type")

    def test_destination_column_missing(self):
        sc = Scenario(self, "dstcol")
        pc(sc)
        sc.dst("ALTER TABLE p DROP COLUMN v")
        cfg = sc.config({"j": PC_JOB})
        self.assert_refused(sc, cfg, f"destination table {sc.dst_db}.p has no column v", "ADD COLUMN `v` varchar(10)")

    def test_insert_trigger_on_destination(self):
        sc = Scenario(self, "instrg")
        pc(sc)
        sc.dst("CREATE TRIGGER p_ins BEFORE INSERT ON p FOR EACH ROW SET NEW.v = 'x'")
        cfg = sc.config({"j": PC_JOB})
        self.assert_refused(sc, cfg, f"table {sc.dst_db}.p has an INSERT trigger on the destination", "drop it")
        self.assert_refused(sc, cfg, "INSERT trigger", command="copy-only")

    def test_config_tree_errors_exit_2(self):
        sc = Scenario(self, "treecfg")
        pc(sc)
        sc.both(f"CREATE TABLE g (id INT PRIMARY KEY, c_id INT) {INNODB}")
        cases = {
            "names parent nope, which is neither the root table p nor another relation's table": [{"table": "c", "foreign_key": "p_id"},
                               {"table": "g", "parent": "nope", "foreign_key": "c_id"}],
            "table c is listed twice under parent p": [{"table": "c", "foreign_key": "p_id"}, {"table": "c", "foreign_key": "p_id"}],
            "the relations form a cycle (or hang below one) that never reaches the root table p": [{"table": "c", "parent": "g", "foreign_key": "p_id"},
                      {"table": "g", "parent": "c", "foreign_key": "c_id"}],
        }
        for what, rels in cases.items():
            with self.subTest(what):
                cfg = sc.config({"j": {"root_table": "p", "where": "1=1", "relations": rels}})
                self.assert_refused(sc, cfg, what, command="archive", rc=2)

    def test_unknown_foreign_key_column(self):
        sc = Scenario(self, "fkcol")
        pc(sc)
        cfg = sc.config({"j": {"root_table": "p", "where": "1=1",
                               "relations": [{"table": "c", "foreign_key": "parent_id"}]}})
        # A mistyped foreign_key is a configuration error (exit 2) that names the foreign keys c does declare.
        self.assert_refused(sc, cfg, f"relation c: foreign_key names column parent_id, which does not exist in "
                                     f"{sc.src_db}.c, so it is no foreign key of c: c declares no foreign key to p; "
                                     "fix foreign_key", rc=2)


if __name__ == "__main__":
    unittest.main()
