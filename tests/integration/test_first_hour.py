#!/usr/bin/python3
"""The first hour on a schema nobody here had seen (issue 36, part 5), on a Chinook-like schema: Invoice,
InvoiceLine (which references Invoice and Track ON DELETE NO ACTION, as Chinook's MySQL script declares them),
Customer and Track.

- A job on Invoice that forgot InvoiceLine: validate names the foreign key that holds the roots, with how many it
  holds and the relation block to add (a problem when it holds most of them, a note otherwise); dry-run says how
  many roots would move and how many that foreign key blocks, and the run then does exactly that.
- validate offers `goarchive schema ... --apply` for missing archive tables, and "did you mean" for a mistyped
  table, as discover does.
- A mistyped table or column (the root, a relation's table, a foreign_key, where) is a configuration error: exit 2
  from archive and validate, nothing touched; a foreign_key typo names the foreign keys the table does declare, not
  a "further parent" it should add.
- A DELETE trigger on a source table is refused, and the refusal names the opt-in; with --force-triggers (or
  force_triggers = true in the job) the run goes on, warns once per trigger with its name, table, timing and what
  it does, and the trigger fires once per deleted row (its audit table gets one row per deleted root).
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenario import Scenario  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
TABLES = ["Invoice", "InvoiceLine"]
RELATIONS = [("InvoiceLine", ["InvoiceId"], "Invoice", ["InvoiceId"])]
LINE_RELATION = {"table": "InvoiceLine", "parent": "Invoice", "foreign_key": ["InvoiceId"]}
OLD = "InvoiceDate < '2010-01-01'"


def chinook(sc, archive_tables=("Invoice", "InvoiceLine")):
    """Invoices 1-9 of 2009 (1-7 with two lines each, 8 and 9 without), 10-12 of 2013 with one line each.
    The destination holds the archive tables named in ARCHIVE_TABLES, without foreign keys to Customer or Track."""
    sc.src(f"CREATE TABLE Customer (CustomerId INT PRIMARY KEY, FirstName VARCHAR(40) NOT NULL) {INNODB}")
    sc.src(f"CREATE TABLE Track (TrackId INT PRIMARY KEY, Name VARCHAR(200) NOT NULL) {INNODB}")
    invoice = ("CREATE TABLE Invoice (InvoiceId INT PRIMARY KEY, CustomerId INT NOT NULL, InvoiceDate DATETIME NOT "
               "NULL, Total DECIMAL(10,2) NOT NULL, KEY (CustomerId){}) " + INNODB)
    line = ("CREATE TABLE InvoiceLine (InvoiceLineId INT PRIMARY KEY, InvoiceId INT NOT NULL, TrackId INT NOT NULL, "
            "UnitPrice DECIMAL(10,2) NOT NULL, Quantity INT NOT NULL, KEY (InvoiceId), KEY (TrackId){}) " + INNODB)
    sc.src(invoice.format(", CONSTRAINT FK_InvoiceCustomerId FOREIGN KEY (CustomerId) REFERENCES Customer "
                          "(CustomerId) ON DELETE NO ACTION ON UPDATE NO ACTION"))
    sc.src(line.format(", CONSTRAINT FK_InvoiceLineInvoiceId FOREIGN KEY (InvoiceId) REFERENCES Invoice (InvoiceId) "
                       "ON DELETE NO ACTION ON UPDATE NO ACTION, CONSTRAINT FK_InvoiceLineTrackId FOREIGN KEY "
                       "(TrackId) REFERENCES Track (TrackId) ON DELETE NO ACTION ON UPDATE NO ACTION"))
    if "Invoice" in archive_tables:
        sc.dst(invoice.format(""))
    if "InvoiceLine" in archive_tables:
        sc.dst(line.format(""))
    sc.src("INSERT INTO Customer VALUES (1, 'Luís'), (2, 'Leonie'), (3, 'François')")
    sc.src("INSERT INTO Track SELECT seq, CONCAT('track ', seq) FROM seq_1_to_5")
    sc.src("INSERT INTO Invoice SELECT seq, 1 + seq % 3, IF(seq <= 9, '2009-01-01' + INTERVAL seq DAY, "
           "'2013-01-01' + INTERVAL seq DAY), seq * 1.98 FROM seq_1_to_12")
    sc.src("INSERT INTO InvoiceLine SELECT seq, (seq + 1) DIV 2, 1 + seq % 5, 0.99, 1 FROM seq_1_to_14")
    sc.src("INSERT INTO InvoiceLine SELECT 14 + seq, 9 + seq, 1, 0.99, 1 FROM seq_1_to_3")


class ForgottenChildTest(unittest.TestCase):
    """A job on Invoice without InvoiceLine."""

    def test_validate_names_the_reference_and_the_relation_to_add(self):
        sc = Scenario(self, "fh_validate")
        chinook(sc)
        state = sc.state()
        # "inv" forgets InvoiceLine: it holds 7 of the 9 old invoices, most of them: a problem, exit 1.
        # "few" takes invoices 7-9: InvoiceLine holds 1 of the 3, not most: a note, and validate passes.
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD},
                         "few": {"root_table": "Invoice", "where": "InvoiceId BETWEEN 7 AND 9"}},
                        destination={"foreign_key_checks": False})
        relation = '[[jobs.inv.relations]] table = "InvoiceLine" parent = "Invoice" foreign_key = ["InvoiceId"]'
        finding = (f"foreign key FK_InvoiceLineInvoiceId on {sc.src_db}.InvoiceLine references {sc.src_db}.Invoice "
                   "ON DELETE {} and holds {} of the {} roots that match where: a run leaves each of them in the "
                   "source, blocked, and tries again on every run; add InvoiceLine to the job: {}; or archive "
                   "InvoiceLine first")
        r = sc.run("validate", "-c", cfg, "-j", "inv")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("job inv: 1 problem (listed on stderr)", r.out)
        rule = "NO ACTION" if "ON DELETE NO ACTION" in r.err else "RESTRICT"  # as the server reports the rule
        self.assertIn(finding.format(rule, 7, 9, relation), r.err)
        r = sc.run("validate", "-c", cfg, "-j", "few")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("job few: ok (config and every preflight check)", r.out)
        self.assertIn("job few: note: " + finding.format(rule, 1, 3, relation.replace("jobs.inv", "jobs.few")), r.out)
        self.assertEqual(sc.state(), state, "validate changed a server")
        self.assertFalse(sc.job_schema_exists())
        # The relation it printed, added as printed, makes the job whole: validate passes, and the archive moves
        # every old invoice with its lines.
        before = sc.snapshot(TABLES)
        fixed = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [LINE_RELATION]}},
                          destination={"foreign_key_checks": False})
        r = sc.run("validate", "-c", fixed, "-j", "inv")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out.strip(), "job inv: ok (config and every preflight check)")
        r = sc.job("archive", fixed, "inv")
        self.assertEqual(r.rc, 0, r)
        sc.assert_invariant(before, RELATIONS)
        self.assertEqual((sc.count("destination", "Invoice"), sc.count("destination", "InvoiceLine")), (9, 14))

    def test_dry_run_counts_the_blocked_roots_and_the_run_agrees(self):
        sc = Scenario(self, "fh_dryrun")
        chinook(sc)
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD}}, destination={"foreign_key_checks": False})
        state = sc.state()
        r = sc.job("dry-run", cfg, "inv")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("roots that match where (as of now): 2 would move, 7 blocked by "
                      "InvoiceLine.FK_InvoiceLineInvoiceId\n", r.out)
        self.assertRegex(r.out, r"\n  Invoice +2\n")  # rows that would move: the two invoices without lines
        r = sc.job("dry-run", cfg, "inv", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        out = json.loads(r.out)
        self.assertEqual(out["roots"]["match_where"], 9)
        self.assertEqual(out["roots"]["would_move"], 2)
        self.assertEqual(out["roots"]["blocked"], 7)
        self.assertEqual(out["roots"]["blocked_by"], [{"foreign_key": "FK_InvoiceLineInvoiceId",
                                                       "table": f"{sc.src_db}.InvoiceLine", "roots": 7}])
        self.assertEqual(out["tables"], [{"table": "Invoice", "rows": 2}])
        self.assertEqual(sc.state(), state, "dry-run changed a server")
        # copy-only deletes nothing, so nothing blocks it.
        r = sc.job("dry-run", cfg, "inv", "--mode", "copy-only")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("roots that match where (as of now): 9 would move\n", r.out)
        # The run does what dry-run said.
        before = sc.snapshot(["Invoice"])
        r = sc.job("archive", cfg, "inv", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        summary = json.loads(r.out)
        self.assertEqual(summary["roots_blocked"], 7)
        self.assertEqual(sc.count("destination", "Invoice"), 2)
        self.assertEqual(sorted(k[0] for k in sc.rows("destination", "Invoice")), [8, 9])
        sc.assert_invariant(before)


    def test_references_into_child_tables_hold_their_roots(self):
        """A reference into a table below the root holds the root above it: InvoiceLine (forgotten) under a
        Customer -> Invoice job; Refund, outside the job, under Customer -> Invoice -> InvoiceLine."""
        sc = Scenario(self, "fh_deep")
        chinook(sc)
        customer = f"CREATE TABLE Customer (CustomerId INT PRIMARY KEY, FirstName VARCHAR(40) NOT NULL) {INNODB}"
        sc.dst(customer)
        sc.src("INSERT INTO Customer VALUES (4, 'Kara'), (5, 'Eduardo')")
        sc.src("INSERT INTO Invoice VALUES (13, 5, '2013-02-01', 1.98)")  # customer 5's one invoice has no line
        sc.src(f"CREATE TABLE Refund (RefundId INT PRIMARY KEY, InvoiceLineId INT NOT NULL, CONSTRAINT fk_refund_line "
               f"FOREIGN KEY (InvoiceLineId) REFERENCES InvoiceLine (InvoiceLineId)) {INNODB}")
        sc.src("INSERT INTO Refund VALUES (1, 15)")  # line 15 is on invoice 10, of customer 2
        invoice = {"table": "Invoice", "parent": "Customer", "foreign_key": ["CustomerId"]}
        cfg = sc.config({"cust": {"root_table": "Customer", "where": "1=1", "relations": [invoice]},
                         "cust3": {"root_table": "Customer", "where": "1=1", "relations": [invoice, LINE_RELATION]}},
                        destination={"foreign_key_checks": False})
        # cust: every invoice of customers 1-3 has lines, so InvoiceLine holds 3 of the 5 customers.
        r = sc.job("dry-run", cfg, "cust")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("roots that match where (as of now): 2 would move, 3 blocked by "
                      "InvoiceLine.FK_InvoiceLineInvoiceId\n", r.out)
        self.assertRegex(r.out, r"\n  Customer +2\n  Invoice +1\n")
        r = sc.run("validate", "-c", cfg, "-j", "cust")
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"foreign key FK_InvoiceLineInvoiceId on {sc.src_db}.InvoiceLine references {sc.src_db}.Invoice",
                      r.err)
        self.assertIn("and holds 3 of the 5 roots that match where", r.err)
        self.assertIn('[[jobs.cust.relations]] table = "InvoiceLine" parent = "Invoice" foreign_key = ["InvoiceId"]',
                      r.err)
        # cust3: only Refund, two levels below the root, holds a customer (2): a note.
        r = sc.job("dry-run", cfg, "cust3")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("roots that match where (as of now): 4 would move, 1 blocked by Refund.fk_refund_line\n", r.out)
        self.assertRegex(r.out, r"\n  Customer +4\n  Invoice +9\n  InvoiceLine +10\n")  # all but customer 2's 4 and 7
        r = sc.run("validate", "-c", cfg, "-j", "cust3")
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"job cust3: note: foreign key fk_refund_line on {sc.src_db}.Refund references "
                      f"{sc.src_db}.InvoiceLine ON DELETE ", r.out)
        self.assertIn("and holds 1 of the 5 roots that match where", r.out)
        # The runs agree with dry-run.
        before = sc.snapshot(["Customer", "Invoice", "InvoiceLine"])
        r = sc.job("archive", cfg, "cust3", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(json.loads(r.out)["roots_blocked"], 1)
        self.assertEqual([k[0] for k in sc.rows("source", "Customer")], [2])
        self.assertEqual((sc.count("destination", "Invoice"), sc.count("destination", "InvoiceLine")), (9, 10))
        sc.assert_invariant(before, RELATIONS + [("Invoice", ["CustomerId"], "Customer", ["CustomerId"])])


    def test_validate_looks_at_the_first_1000_roots_only(self):
        """validate's count is one bounded query: on 1500 roots it says what it looked at."""
        sc = Scenario(self, "fh_sample")
        sc.both(f"CREATE TABLE Invoice (InvoiceId INT PRIMARY KEY, Total DECIMAL(10,2) NOT NULL) {INNODB}")
        sc.src(f"CREATE TABLE InvoiceLine (InvoiceLineId INT PRIMARY KEY, InvoiceId INT NOT NULL, CONSTRAINT "
               f"FK_InvoiceLineInvoiceId FOREIGN KEY (InvoiceId) REFERENCES Invoice (InvoiceId)) {INNODB}")
        sc.src("INSERT INTO Invoice SELECT seq, 1.98 FROM seq_1_to_1500")
        sc.src("INSERT INTO InvoiceLine SELECT seq, seq FROM seq_1_to_1500")
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": "1=1"}})
        r = sc.run("validate", "-c", cfg, "-j", "inv")
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"foreign key FK_InvoiceLineInvoiceId on {sc.src_db}.InvoiceLine references {sc.src_db}.Invoice "
                      "ON DELETE RESTRICT and holds 1000 of the first 1000 roots that match where", r.err)
        r = sc.job("dry-run", cfg, "inv")  # dry-run counts them all
        self.assertEqual(r.rc, 0, r)
        self.assertIn("0 would move, 1500 blocked by InvoiceLine.FK_InvoiceLineInvoiceId\n", r.out)


class NamesTest(unittest.TestCase):
    """Missing archive tables, and mistyped names."""

    def test_missing_archive_tables_offer_schema_apply(self):
        sc = Scenario(self, "fh_schema")
        chinook(sc, archive_tables=("Invoice",))
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [LINE_RELATION]}},
                        destination={"foreign_key_checks": False})
        r = sc.run("validate", "-c", cfg, "-j", "inv")
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"table {sc.dst_db}.InvoiceLine does not exist on the destination; create the job's missing "
                      f"archive tables with goarchive schema -c {cfg} -j inv --apply (or create it there with the "
                      f"statement that SHOW CREATE TABLE `{sc.src_db}`.`InvoiceLine` prints on the source)", r.err)
        self.assertNotIn(f"{sc.dst_db}.Invoice does not exist", r.err)
        # The command it offers, run as offered, is the fix.
        r = sc.run("schema", "-c", cfg, "-j", "inv", "--apply")
        self.assertEqual(r.rc, 0, r)
        r = sc.run("validate", "-c", cfg, "-j", "inv")
        self.assertEqual(r.rc, 0, r)

    def test_missing_archive_database_offers_schema_apply(self):
        sc = Scenario(self, "fh_schemadb")
        chinook(sc, archive_tables=())
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [LINE_RELATION]}},
                        destination={"foreign_key_checks": False})
        with open(cfg) as f:  # the archive database: one that does not exist
            text = f.read().replace(f'database = "{sc.dst_db}"', f'database = "{sc.dst_db}_new"')
        with open(cfg, "w") as f:
            f.write(text)
        r = sc.run("validate", "-c", cfg, "-j", "inv")
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"the destination database {sc.dst_db}_new does not exist on", r.err)
        self.assertIn(f"create it with the job's archive tables: goarchive schema -c {cfg} -j inv --apply (or by "
                      f"hand: CREATE DATABASE `{sc.dst_db}_new`)", r.err)

    def assert_config_error(self, sc, cfg, *texts, absent=()):
        """archive, dry-run and validate of job inv exit 2 with every one of TEXTS on stderr (none of ABSENT), and
        change nothing anywhere."""
        state = sc.state()
        for command in ("archive", "dry-run", "validate"):
            with self.subTest(command):
                r = sc.job(command, cfg, "inv") if command != "validate" else sc.run("validate", "-c", cfg, "-j", "inv")
                self.assertEqual(r.rc, 2, r)
                for t in texts:
                    self.assertIn(t, r.err, r)
                for t in absent:
                    self.assertNotIn(t, r.err, r)
        self.assertEqual(sc.state(), state)
        self.assertFalse(sc.job_schema_exists())

    def test_a_mistyped_root_table_is_a_config_error_with_did_you_mean(self):
        sc = Scenario(self, "fh_typo_root")
        chinook(sc)
        cfg = sc.config({"inv": {"root_table": "Invoce", "where": OLD}})
        self.assert_config_error(sc, cfg, f"table {sc.src_db}.Invoce does not exist on the source; fix the table name "
                                          "in [jobs.inv]: did you mean Invoice?")
        # discover words it the same way (it always did).
        r = sc.run("discover", "-c", cfg, "--root", "Invoce")
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"table Invoce not found in database {sc.src_db}; did you mean Invoice?", r.err)

    def test_a_mistyped_relation_table_is_a_config_error(self):
        sc = Scenario(self, "fh_typo_rel")
        chinook(sc)
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [
            dict(LINE_RELATION, table="InvoiceLines")]}})
        self.assert_config_error(sc, cfg, f"table {sc.src_db}.InvoiceLines does not exist on the source; fix the "
                                          "table name in [jobs.inv]: did you mean InvoiceLine?",
                                 absent=("does not exist on the destination",))

    def test_a_foreign_key_naming_a_missing_column_names_the_foreign_keys_that_exist(self):
        sc = Scenario(self, "fh_typo_fk")
        chinook(sc)
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [
            dict(LINE_RELATION, foreign_key=["InvoceId"])]}})
        # An earlier build said the job lacked a relation for FK_InvoiceLineInvoiceId and should declare it as a
        # further parent: the relation is there, mistyped.
        self.assert_config_error(
            sc, cfg,
            f"relation InvoiceLine: foreign_key names column InvoceId, which does not exist in {sc.src_db}.InvoiceLine "
            "(did you mean InvoiceId?), so it is no foreign key of InvoiceLine: the foreign keys of InvoiceLine that "
            "reference Invoice are FK_InvoiceLineInvoiceId (InvoiceId); fix foreign_key",
            absent=("further parent", "has no such relation"))

    def test_a_foreign_key_naming_another_column_names_the_foreign_keys_that_exist(self):
        sc = Scenario(self, "fh_typo_fk2")
        chinook(sc)
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [
            dict(LINE_RELATION, foreign_key=["TrackId"])]}})
        self.assert_config_error(
            sc, cfg,
            f"relation InvoiceLine: foreign_key (TrackId) is not a foreign key of {sc.src_db}.InvoiceLine to Invoice: "
            "the foreign keys of InvoiceLine that reference Invoice are FK_InvoiceLineInvoiceId (InvoiceId); fix "
            "foreign_key in [[jobs.inv.relations]]",
            absent=("further parent", "has no such relation"))

    def test_a_mistyped_column_in_where_or_primary_key_is_a_config_error(self):
        sc = Scenario(self, "fh_typo_col")
        chinook(sc)
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": "InvoiceDat < '2010-01-01'",
                                 "relations": [LINE_RELATION]}})
        self.assert_config_error(sc, cfg, "jobs.inv.where = \"InvoiceDat < '2010-01-01'\" is not a valid condition",
                                 "Unknown column 'InvoiceDat'")
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "primary_key": ["InvoiceID_"],
                                 "relations": [LINE_RELATION]}})
        self.assert_config_error(sc, cfg, f"jobs.inv.primary_key = (InvoiceID_) is not a unique key of "
                                          f"{sc.src_db}.Invoice (column InvoiceID_ does not exist in it (did you mean "
                                          "InvoiceId?))")


AUDIT = "CREATE TABLE InvoiceAudit (id INT AUTO_INCREMENT PRIMARY KEY, InvoiceId INT NOT NULL, what VARCHAR(20)) " + INNODB
AUDIT_TRIGGER = ("CREATE TRIGGER trg_invoice_audit AFTER DELETE ON Invoice FOR EACH ROW "
                 "INSERT INTO InvoiceAudit (InvoiceId, what) VALUES (OLD.InvoiceId, 'deleted')")


class DeleteTriggerTest(unittest.TestCase):
    def test_refused_without_the_opt_in_and_forced_with_it(self):
        sc = Scenario(self, "fh_trigger")
        chinook(sc)
        sc.src(AUDIT)
        sc.src(AUDIT_TRIGGER)
        before = sc.snapshot(TABLES)
        state = sc.state()
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [LINE_RELATION]}},
                        destination={"foreign_key_checks": False})
        refusal = (f"table {sc.src_db}.Invoice has a DELETE trigger on the source (trg_invoice_audit (AFTER DELETE)): "
                   "archive would fire it for every row it deletes; drop or disable the trigger, or run copy-only; "
                   "or, to let it fire on each delete, opt in with --force-triggers (or force_triggers = true in "
                   "[jobs.inv]), and the run logs what it does")
        for command in (["archive"], ["dry-run"], ["validate"]):
            with self.subTest(command[0]):
                r = sc.run(*command, "-c", cfg, "-j", "inv", *(["--no-progress"] if command[0] != "validate" else []))
                self.assertEqual(r.rc, 1, r)
                self.assertIn(refusal, r.err)
        self.assertEqual(sc.state(), state, "a refused run changed a server")
        self.assertFalse(sc.job_schema_exists())
        stated = (f"force_triggers: trigger trg_invoice_audit (AFTER DELETE ON {sc.src_db}.Invoice) fires for each row "
                  "archive deletes from Invoice: INSERT INTO InvoiceAudit (InvoiceId, what) VALUES (OLD.InvoiceId, "
                  "'deleted')")
        r = sc.run("validate", "-c", cfg, "-j", "inv", "--force-triggers")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("job inv: note: " + stated + "\n", r.out)
        r = sc.job("archive", cfg, "inv", "--force-triggers")
        self.assertEqual(r.rc, 0, r)
        warnings = [ln for ln in r.err.splitlines() if stated in ln]
        self.assertEqual(len(warnings), 1, r.err)
        self.assertRegex(warnings[0], r"(?i)warn")
        sc.assert_invariant(before, RELATIONS)
        # The trigger fired once per deleted invoice, in the delete's transaction.
        audit = sc.src("SELECT InvoiceId, what FROM InvoiceAudit ORDER BY InvoiceId")
        self.assertEqual([tuple(a) for a in audit], [(i, "deleted") for i in range(1, 10)])

    def test_the_config_key_opts_in_for_purge_and_a_long_body_is_cut(self):
        sc = Scenario(self, "fh_trigger_key")
        chinook(sc)
        sc.src(AUDIT)
        body = "INSERT INTO InvoiceAudit (InvoiceId, what) VALUES (OLD.InvoiceId, 'purged');\n" * 4
        sc.src(f"CREATE TRIGGER trg_line_audit BEFORE DELETE ON InvoiceLine FOR EACH ROW BEGIN\n{body}END")
        cfg = sc.config({"inv": {"root_table": "Invoice", "where": OLD, "relations": [LINE_RELATION],
                                 "force_triggers": True}})
        r = sc.job("purge", cfg, "inv")
        self.assertEqual(r.rc, 0, r)
        one_line = "BEGIN " + body.replace("\n", " ")
        expect = (f"force_triggers: trigger trg_line_audit (BEFORE DELETE ON {sc.src_db}.InvoiceLine) fires for each "
                  f"row purge deletes from InvoiceLine: {one_line[:200]}...")
        self.assertIn(expect + "\n", r.err)
        self.assertEqual(sc.count("source", "Invoice"), 3)
        self.assertEqual(sc.count("source", "InvoiceLine"), 3)
        # Four audit rows per deleted line: its body inserts four.
        self.assertEqual(sc.src("SELECT COUNT(*), COUNT(DISTINCT InvoiceId) FROM InvoiceAudit")[0], (14 * 4, 7))
        r = sc.run("validate", "-c", cfg, "-j", "inv", "-v")
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out, r"jobs\.inv\.force_triggers +true +\(job block\)")


if __name__ == "__main__":
    unittest.main()
