#!/usr/bin/python3
"""Job graphs beyond a tree on real servers: a diamond (Sakila's customer -> rental -> payment, payment also under
customer), an N:M link table whose other side is outside the job, foreign keys from outside the job (RESTRICT is
allowed and blocks the roots it still references; CASCADE is refused with advice), and a walk through every
refusal's advice. Every test ends with the data invariant: every row exactly once (source or destination,
byte-equal), no orphans in the source, none in the archive among the job's tables."""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import Scenario  # noqa: E402
from test_safety_live import Paused  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"

DIAMOND = [{"table": "rental", "foreign_key": "customer_id"},
           {"table": "payment", "parent": "rental", "foreign_key": "rental_id"},
           {"table": "payment", "parent": "customer", "foreign_key": "customer_id"}]
DIAMOND_RELATIONS = [("rental", ["customer_id"], "customer", ["customer_id"]),
                     ("payment", ["customer_id"], "customer", ["customer_id"]),
                     ("payment", ["rental_id"], "rental", ["rental_id"])]
SAKILA = ["customer", "rental", "payment"]


def sakila(sc, payment_rental_rule="RESTRICT", payment_customer_rule="RESTRICT", payment_rental_fk=True):
    """customer 1..6 (1..4 old), rental i of customer 1+(i-1)%6, one payment per rental by its customer.
    Without PAYMENT_RENTAL_FK, payment -> rental is a relation of the config only (no foreign key on either side)."""
    sc.both(f"CREATE TABLE customer (customer_id INT PRIMARY KEY, old TINYINT NOT NULL, name VARCHAR(20)) {INNODB}")
    sc.both(f"CREATE TABLE rental (rental_id INT PRIMARY KEY, customer_id INT NOT NULL, v VARCHAR(20), "
            f"CONSTRAINT fk_rental_customer FOREIGN KEY (customer_id) REFERENCES customer (customer_id)) {INNODB}")
    sc.both(f"CREATE TABLE payment (payment_id INT PRIMARY KEY, customer_id INT NOT NULL, rental_id INT NULL, "
            f"amount DECIMAL(6,2), "
            f"CONSTRAINT fk_payment_customer FOREIGN KEY (customer_id) REFERENCES customer (customer_id) "
            f"ON DELETE {payment_customer_rule}" +
            (f", CONSTRAINT fk_payment_rental FOREIGN KEY (rental_id) REFERENCES rental (rental_id) "
             f"ON DELETE {payment_rental_rule}" if payment_rental_fk else ", KEY (rental_id)") + f") {INNODB}")
    sc.src("INSERT INTO customer SELECT seq, seq <= 4, CONCAT('c', seq) FROM seq_1_to_6")
    sc.src("INSERT INTO rental SELECT seq, 1 + (seq - 1) % 6, CONCAT('r', seq) FROM seq_1_to_12")
    sc.src("INSERT INTO payment SELECT seq, 1 + (seq - 1) % 6, seq, seq * 1.5 FROM seq_1_to_12")


class GraphTest(unittest.TestCase):
    def run_ok(self, sc, cfg, *args):
        r = sc.job("archive", cfg, "j", *args)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.unfinished(), 0)
        return r

    def where_is(self, sc, table):
        return set(sc.rows("source", table)), set(sc.rows("destination", table))

    # -- diamonds ----------------------------------------------------------------------------------------------
    def test_plan_shows_the_diamond(self):
        sc = Scenario(self, "gplan")
        cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND}})
        r = sc.run("plan", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("payment (customer_id -> customer.primary key) (also under rental)", r.out)
        self.assertIn("payment (rental_id -> rental.primary key) (also under customer)", r.out)
        self.assertIn("copy order (parents first):    customer -> rental -> payment", r.out)
        self.assertIn("delete order (children first): payment -> rental -> customer", r.out)
        self.assertIn("rule: a row with several parents", r.out)

    def test_diamond_blocks_a_root_whose_payment_belongs_to_a_staying_rental(self):
        sc = Scenario(self, "gdiamond")
        sakila(sc)
        # payment 17 is customer 1's, for rental 5 of customer 5 (not archived); payment 18 is customer 2's, for
        # rental 3 of customer 3 (archived in the same batch); payment 19 has no rental.
        sc.src("INSERT INTO payment VALUES (17, 1, 5, 9.99), (18, 2, 3, 1.00), (19, 2, NULL, 2.00)")
        before = sc.snapshot(SAKILA)
        metrics = os.path.join(sc.tmp, "m.prom")
        cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND}})
        r = sc.job("dry-run", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("graph:", r.out)
        self.assertIn("(also under customer)", r.out)
        self.assertIn("rule: a row with several parents", r.out)
        r = self.run_ok(sc, cfg, "--metrics-file", metrics)
        self.assertIn("payment (payment_id) = (17) still belongs to rental (rental_id) = (5), which stays in the "
                      "source", r.out + r.err)
        self.assertIn("blocked and left in source 1", r.out)
        with open(metrics) as f:
            self.assertRegex(f.read(), r'goarchive_last_run_roots_blocked\{job="j"\} 1')
        src, dst = self.where_is(sc, "customer")
        self.assertEqual(dst, {(2,), (3,), (4,)})
        self.assertIn((1,), src)
        self.assertEqual(self.where_is(sc, "payment")[1], {(2,), (3,), (4,), (8,), (9,), (10,), (18,), (19,)})
        sc.assert_invariant(before, DIAMOND_RELATIONS)
        # Once customer 5 goes in the same batch, both go together.
        sc.src("UPDATE customer SET old = 1 WHERE customer_id = 5")
        before = {t: {**sc.rows("source", t), **sc.rows("destination", t)} for t in SAKILA}
        r = self.run_ok(sc, cfg)
        self.assertNotIn("blocked", r.out)
        self.assertEqual(self.where_is(sc, "customer")[1], {(1,), (2,), (3,), (4,), (5,)})
        self.assertEqual(self.where_is(sc, "payment")[0], {(6,), (12,)})
        sc.assert_invariant(before, DIAMOND_RELATIONS)

    def test_diamond_under_the_delete_lock(self):
        """Payment 30's rental 99 is not in the source when the batch is read (archived earlier, say); the
        application adds rental 99 for customer 5 after the copy: the locked read of the parents sees it and
        customer 2 stays. (payment -> rental is a config-only relation here, or rental 99 could not be missing.)"""
        sc = Scenario(self, "glock")
        sakila(sc, payment_rental_fk=False)
        sc.src("INSERT INTO payment VALUES (30, 2, 99, 3.00)")
        cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND}})
        run = Paused(self, sc, "after_copy_commit:1", "archive", "-c", cfg, "-j", "j")
        try:
            run.wait()
            sc.src("INSERT INTO rental VALUES (99, 5, 'late')")
        finally:
            run.release()
        r = run.finish()
        self.assertEqual(r.rc, 0, r)
        self.assertIn("payment (payment_id) = (30) still belongs to rental (rental_id) = (99), which stays in the "
                      "source", r.out + r.err)
        src, dst = self.where_is(sc, "customer")
        self.assertEqual(dst, {(1,), (3,), (4,)})
        self.assertIn((2,), src)
        before = {t: {**sc.rows("source", t), **sc.rows("destination", t)} for t in SAKILA}
        sc.assert_invariant(before, DIAMOND_RELATIONS)

    def test_roots_sharing_a_row_stay_together(self):
        """Payment 18 is customer 2's, for rental 3 of customer 3: when customer 3 changes after the copy and
        stays, customer 2 stays with it (deleting it would orphan payment 18, or fail on its foreign key)."""
        sc = Scenario(self, "gshared")
        sakila(sc)
        sc.src("INSERT INTO payment VALUES (18, 2, 3, 1.00)")
        cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND}})
        run = Paused(self, sc, "after_copy_commit:1", "archive", "-c", cfg, "-j", "j")
        try:
            run.wait()
            sc.src("UPDATE customer SET name = 'changed' WHERE customer_id = 3")
        finally:
            run.release()
        r = run.finish()
        self.assertEqual(r.rc, 0, r)
        self.assertIn("payment (payment_id) = (18) is shared with customer (customer_id) = (3), which stays in the "
                      "source", r.out + r.err)
        src, dst = self.where_is(sc, "customer")
        self.assertEqual(dst, {(1,), (4,)})
        self.assertTrue({(2,), (3,)} <= src)
        before = {t: {**sc.rows("source", t), **sc.rows("destination", t)} for t in SAKILA}
        sc.assert_invariant(before, DIAMOND_RELATIONS)
        self.run_ok(sc, cfg)
        self.assertEqual(self.where_is(sc, "customer")[1], {(1,), (2,), (3,), (4,)})
        sc.assert_invariant(before, DIAMOND_RELATIONS)

    def test_copy_only_refuses_a_diamond(self):
        """copy-only cannot keep a row with two parents consistent across its copies (a copy of one root may hold a
        row whose other parent's copy comes later or goes stale): it refuses the job, exit 2, nothing written."""
        sc = Scenario(self, "gcopy")
        sakila(sc)
        before = sc.snapshot(SAKILA)
        cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND}})
        r = sc.job("copy-only", cfg)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("table payment has several parents in job \"j\" (a diamond), which copy-only does not support; "
                      "archive the job with `goarchive archive`", r.err)
        self.assertEqual(sc.snapshot(SAKILA), before)
        self.assertEqual(sc.count("destination", "customer"), 0)
        self.assertFalse(sc.job_schema_exists())

    # -- N:M ---------------------------------------------------------------------------------------------------
    def test_link_table_whose_other_side_is_outside_the_job(self):
        sc = Scenario(self, "gnm")
        sc.both(f"CREATE TABLE film (film_id INT PRIMARY KEY, old TINYINT NOT NULL) {INNODB}")
        sc.src(f"CREATE TABLE actor (actor_id INT PRIMARY KEY, name VARCHAR(20)) {INNODB}")
        fa = ("CREATE TABLE film_actor (actor_id INT NOT NULL, film_id INT NOT NULL, PRIMARY KEY (actor_id, film_id), "
              "KEY (film_id), CONSTRAINT fk_fa_film FOREIGN KEY (film_id) REFERENCES film (film_id)")
        sc.src(fa + f", CONSTRAINT fk_fa_actor FOREIGN KEY (actor_id) REFERENCES actor (actor_id)) {INNODB}")
        sc.dst(fa + f") {INNODB}")  # the archive has no actor table
        sc.src("INSERT INTO film SELECT seq, seq % 2 FROM seq_1_to_10")
        sc.src("INSERT INTO actor SELECT seq, CONCAT('a', seq) FROM seq_1_to_5")
        sc.src("INSERT INTO film_actor SELECT a.seq, f.seq FROM seq_1_to_5 a JOIN seq_1_to_10 f WHERE (a.seq + f.seq) % 3 > 0")
        before = sc.snapshot(["film", "film_actor"])
        actors = sc.rows("source", "actor")
        cfg = sc.config({"j": {"root_table": "film", "where": "old = 1",
                               "relations": [{"table": "film_actor", "foreign_key": "film_id"}]}})
        self.run_ok(sc, cfg)
        self.assertEqual(self.where_is(sc, "film")[1], {(i,) for i in range(1, 11, 2)})
        self.assertTrue(all(k[1] % 2 == 1 for k in self.where_is(sc, "film_actor")[1]))
        self.assertEqual(sc.rows("source", "actor"), actors)
        sc.assert_invariant(before, [("film_actor", ["film_id"], "film", ["film_id"])])

    # -- references from outside the job -----------------------------------------------------------------------
    def outside(self, sc, rule):
        """customer -> rental in the job; review (outside) references rental ON DELETE RULE."""
        sakila(sc)
        sc.src("DROP TABLE payment")
        sc.dst("DROP TABLE payment")
        sc.src(f"CREATE TABLE review (review_id INT PRIMARY KEY, rental_id INT, CONSTRAINT fk_review_rental "
               f"FOREIGN KEY (rental_id) REFERENCES rental (rental_id) ON DELETE {rule}) {INNODB}")
        return sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND[:1]}})

    def test_restrict_reference_from_outside_blocks_its_root(self):
        sc = Scenario(self, "grestrict")
        cfg = self.outside(sc, "RESTRICT")
        sc.src("INSERT INTO review VALUES (1, 2), (2, 8), (3, 8)")  # rentals 2 and 8: customer 2
        before = sc.snapshot(["customer", "rental"])
        r = self.run_ok(sc, cfg)
        self.assertIn("blocked by review.fk_review_rental: 3 rows of review still reference rental (rental_id) = (",
                      r.out + r.err)
        summary = json.loads(gatest.sql("destination", f"SELECT summary FROM {gatest.quote_ident(sc.job_schema)}.runs "
                                                       "ORDER BY id DESC LIMIT 1")[0][0])
        self.assertEqual(summary["roots_blocked"], 1)
        self.assertIn("customer (customer_id) = (2) stays: blocked by review.fk_review_rental", summary["blocked"][0])
        self.assertEqual(self.where_is(sc, "customer")[1], {(1,), (3,), (4,)})
        self.assertEqual(sc.count("source", "review"), 3)
        sc.assert_invariant(before, DIAMOND_RELATIONS[:1])
        sc.src("DELETE FROM review")
        self.run_ok(sc, cfg)
        self.assertEqual(self.where_is(sc, "customer")[1], {(1,), (2,), (3,), (4,)})
        sc.assert_invariant(before, DIAMOND_RELATIONS[:1])

    def test_restrict_reference_from_outside_by_one_row(self):
        sc = Scenario(self, "grestrict1")
        cfg = self.outside(sc, "RESTRICT")
        sc.src("INSERT INTO review VALUES (1, 2)")  # rental 2: customer 2
        r = self.run_ok(sc, cfg)
        self.assertIn("customer (customer_id) = (2) stays: blocked by review.fk_review_rental: 1 row of review still "
                      "references rental (rental_id) = (2)", r.out + r.err)

    def test_restrict_reference_from_outside_without_rows(self):
        sc = Scenario(self, "grestrict0")
        cfg = self.outside(sc, "NO ACTION")
        sc.src("INSERT INTO review VALUES (1, 5)")  # customer 5: not archived
        before = sc.snapshot(["customer", "rental"])
        r = self.run_ok(sc, cfg)
        self.assertNotIn("blocked", r.out)
        self.assertEqual(self.where_is(sc, "customer")[1], {(1,), (2,), (3,), (4,)})
        sc.assert_invariant(before, DIAMOND_RELATIONS[:1])

    def test_cascade_reference_from_outside_is_refused(self):
        for with_rows in (True, False):
            with self.subTest(with_rows=with_rows):
                sc = Scenario(self, "gcascade")
                cfg = self.outside(sc, "CASCADE")
                if with_rows:
                    sc.src("INSERT INTO review VALUES (1, 2)")
                before = sc.snapshot(["customer", "rental"])
                reviews = sc.rows("source", "review")
                r = sc.job("archive", cfg)
                self.assertEqual(r.rc, 1, r)
                self.assertIn('add review to the job: [[jobs.j.relations]] table = "review" parent = "rental" '
                              'foreign_key = ["rental_id"]; or archive review first', r.err)
                self.assertEqual(sc.count("destination", "rental"), 0)
                self.assertEqual(sc.rows("source", "review"), reviews)
                sc.assert_invariant(before)

    # -- advice ------------------------------------------------------------------------------------------------
    def walk(self, sc, relations, max_steps=6):
        """Validates, follows every relation the refusals advise, until the config validates (returns None) or a
        refusal advises no relation (returns its text). Each step's refusal differs from the one before."""
        seen = []
        for _ in range(max_steps):
            cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": relations}})
            r = sc.run("validate", "-c", cfg, "-j", "j")
            if r.rc == 0:
                return None
            text = r.out + r.err
            self.assertNotIn(text, seen, "the advice leads back to the same refusal")
            seen.append(text)
            advice = re.findall(r'\[\[jobs\.j\.relations\]\] table = "(\w+)" parent = "(\w+)" foreign_key = '
                                r'\[([^\]]*)\]', text)
            if not advice:
                return text
            for table, parent, fk in advice:
                rel = {"table": table, "parent": parent, "foreign_key": re.findall(r'"(\w+)"', fk)}
                self.assertNotIn(rel, relations, f"advised a relation the job already has:\n{text}")
                relations = relations + [rel]
        self.fail(f"no end after {max_steps} steps: {seen[-1]}")

    def test_advice_leads_to_a_valid_config_or_a_final_refusal(self):
        sc = Scenario(self, "gadvice")
        sakila(sc, payment_rental_rule="CASCADE")
        # payment outside: CASCADE into rental -> add it under rental -> it also references customer -> add that.
        self.assertIsNone(self.walk(sc, DIAMOND[:1]))
        # An outside table referencing payment, once payment is in the job, with SET NULL.
        sc.src(f"CREATE TABLE refund (refund_id INT PRIMARY KEY, payment_id INT, FOREIGN KEY (payment_id) "
               f"REFERENCES payment (payment_id) ON DELETE SET NULL) {INNODB}")
        sc.dst(f"CREATE TABLE refund (refund_id INT PRIMARY KEY, payment_id INT) {INNODB}")
        self.assertIsNone(self.walk(sc, DIAMOND[:1]))
        # A cycle (customer.last_rental -> rental) and a self-reference end in final refusals that advise no relation.
        sc.src("ALTER TABLE customer ADD last_rental INT NULL, ADD CONSTRAINT fk_last FOREIGN KEY (last_rental) "
               "REFERENCES rental (rental_id)")
        sc.dst("ALTER TABLE customer ADD last_rental INT NULL")
        final = self.walk(sc, DIAMOND)
        self.assertIn("form a cycle", final)
        sc.src("ALTER TABLE customer DROP FOREIGN KEY fk_last")
        sc.src("ALTER TABLE payment ADD prev INT NULL, ADD CONSTRAINT fk_prev FOREIGN KEY (prev) "
               "REFERENCES payment (payment_id)")
        sc.dst("ALTER TABLE payment ADD prev INT NULL")
        final = self.walk(sc, DIAMOND + [{"table": "refund", "parent": "payment", "foreign_key": "payment_id"}])
        self.assertIn("refuses self-references", final)
        sc.src("ALTER TABLE payment DROP FOREIGN KEY fk_prev")  # following it: drop the foreign key
        self.assertIsNone(self.walk(sc, DIAMOND + [{"table": "refund", "parent": "payment",
                                                    "foreign_key": "payment_id"}]))

    def test_self_reference_in_the_config_is_refused(self):
        sc = Scenario(self, "gself")
        cfg = sc.config({"j": {"root_table": "employees", "where": "1=1", "relations": [
            {"table": "reports", "foreign_key": "emp_id"},
            {"table": "reports", "parent": "reports", "foreign_key": "parent_id"}]}})
        r = sc.run("plan", "-c", cfg, "-j", "j")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("refuses self-references", r.err)
        self.assertIn("another batch", r.err)


if __name__ == "__main__":
    unittest.main()
