#!/usr/bin/python3
"""restore: archived roots go back into the source with their whole tree, as safely as they left. The acceptance
test is the round trip: archive, then restore with 1=1, leaves the source's tables byte-identical to the start
(checksums each server computes on its own stored bytes) and the archive empty. Then what can go wrong: a key the
source holds already, a parent outside the job gone from the source, a diamond row whose other parent stays
archived, INSERT triggers, bad input, and a kill at every point a restore passes, each followed by a rerun and the
round trip's check."""

import os
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gatest  # noqa: E402
from scenario import SHOP_JOB, SHOP_RELATIONS, SHOP_TABLES, Scenario, load_shop  # noqa: E402
from test_graphs import DIAMOND, DIAMOND_RELATIONS, SAKILA, sakila  # noqa: E402

INNODB = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"

# Every fault point a restore passes (lib/util/fault.h), in the order a batch meets them.
RESTORE_POINTS = ["after_locks", "after_read", "after_verify", "after_restore_claim", "before_copy_commit",
                  "after_copy_commit", "delete_start", "after_locked_read", "before_delete_commit",
                  "after_delete_commit", "after_batch"]


def stored(sc, server, tables):
    db = sc.src_db if server == "source" else sc.dst_db
    return {t: gatest.stored_checksums(server, db, t) for t in tables}


class RestoreTest(unittest.TestCase):
    def shop(self, tag, orders=120):
        sc = Scenario(self, tag)
        load_shop(sc, orders=orders)
        start = stored(sc, "source", SHOP_TABLES)
        self.assertTrue(all(start.values()))
        cfg = sc.config({"j": SHOP_JOB}, processing={"batch_size": 25}, destination={"foreign_key_checks": False})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertGreater(sc.count("destination", "orders"), 0)
        return sc, cfg, start

    def assert_round_trip(self, sc, start, tables):
        """The source holds every row it started with, byte for byte; the archive holds none of them; no batch is
        left unfinished; no orphan anywhere."""
        self.assertEqual(stored(sc, "source", tables), start)
        for t in tables:
            self.assertEqual(sc.count("destination", t), 0, f"archive table {t} is not empty")
        self.assertEqual(sc.unfinished(), 0)

    # -- the round trip ------------------------------------------------------------------------------------------
    def test_round_trip_shop(self):
        sc, cfg, start = self.shop("rtshop")
        archived = sc.count("destination", "orders")
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"finished; {archived} root(s) restored", r.out + r.err)
        self.assert_round_trip(sc, start, SHOP_TABLES)
        sc.assert_invariant({}, SHOP_RELATIONS)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("nothing to do", r.out)
        # The next archive run takes them again, as the first did.
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "orders"), archived)

    def test_partial_where_and_keep_archive(self):
        sc, cfg, start = self.shop("rtpart")
        archived = {k[0] for k in sc.rows("destination", "orders")}
        some = sorted(archived)[:7]
        where = f"id IN ({','.join(str(i) for i in some)})"
        before_dst = stored(sc, "destination", SHOP_TABLES)
        r = sc.job("restore", cfg, "j", "--where", where, "--keep-archive")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("finished; 7 root(s) restored", r.out)
        # In both servers now, by request; the archive unchanged.
        self.assertEqual(stored(sc, "destination", SHOP_TABLES), before_dst)
        self.assertTrue(set(some) <= {k[0] for k in sc.rows("source", "orders")})
        # The copies --keep-archive left are the job's copies now, as copy-only's: restore leaves them alone ...
        r = sc.job("restore", cfg, "j", "--where", where)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("nothing to do", r.out)
        self.assertEqual(stored(sc, "destination", SHOP_TABLES), before_dst)
        # ... the rest goes back ...
        r = sc.job("restore", cfg, "j", "--where", f"NOT ({where})")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual({k[0] for k in sc.rows("destination", "orders")}, set(some))
        self.assertEqual(stored(sc, "source", SHOP_TABLES), start)
        # ... and archive takes everything again, replacing those copies with the source's current version.
        sc.src(f"UPDATE orders SET note = 'changed after the restore' WHERE id = {some[0]}")
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual({k[0] for k in sc.rows("destination", "orders")}, archived)
        self.assertEqual(sc.dst(f"SELECT note FROM orders WHERE id = {some[0]}")[0][0], "changed after the restore")
        self.assertFalse(set(archived) & {k[0] for k in sc.rows("source", "orders")})
        sc.assert_invariant({}, SHOP_RELATIONS)

    def test_round_trip_diamond(self):
        sc = Scenario(self, "rtdiamond")
        sakila(sc)
        start = stored(sc, "source", SAKILA)
        cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND}})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "customer"), 4)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        self.assert_round_trip(sc, start, SAKILA)
        sc.assert_invariant({}, DIAMOND_RELATIONS)

    def test_diamond_row_waits_for_its_other_parent(self):
        sc = Scenario(self, "rtdiamond2")
        sakila(sc)
        # payment 18 is customer 2's, for rental 3 of customer 3: both archived.
        sc.src("INSERT INTO payment VALUES (18, 2, 3, 1.00)")
        before = sc.snapshot(SAKILA)
        cfg = sc.config({"j": {"root_table": "customer", "where": "old = 1", "relations": DIAMOND}})
        self.assertEqual(sc.job("archive", cfg).rc, 0)
        self.assertIn((18,), sc.rows("destination", "payment"))
        # Customer 2 back alone: payment 18 also belongs to rental 3, whose customer 3 stays archived.
        r = sc.job("restore", cfg, "j", "--where", "customer_id = 2")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("1 root(s) wait in the archive for a parent that stays archived", r.out + r.err)
        self.assertIn((2,), sc.rows("destination", "customer"))
        sc.assert_invariant(before, DIAMOND_RELATIONS)
        # Both together: they go.
        r = sc.job("restore", cfg, "j", "--where", "customer_id IN (2, 3)")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual({k[0] for k in sc.rows("destination", "customer")}, {1, 4})
        sc.assert_invariant(before, DIAMOND_RELATIONS)

    def test_round_trip_composite_string_keys(self):
        sc = Scenario(self, "rtkeys")
        sc.both(f"CREATE TABLE acct (region CHAR(2) NOT NULL, code VARCHAR(20) NOT NULL, old TINYINT NOT NULL, "
                f"note VARCHAR(40), PRIMARY KEY (region, code)) {INNODB}")
        sc.both(f"CREATE TABLE entry (region CHAR(2) NOT NULL, code VARCHAR(20) NOT NULL, n INT NOT NULL, "
                f"amount DOUBLE, f FLOAT, PRIMARY KEY (region, code, n), CONSTRAINT fk_e FOREIGN KEY (region, code) "
                f"REFERENCES acct (region, code)) {INNODB}")
        sc.src("INSERT INTO acct SELECT IF(seq % 2, 'eu', 'us'), CONCAT('ä-', seq), seq % 3 = 0, CONCAT('n', seq) "
               "FROM seq_1_to_60")
        sc.src("INSERT INTO entry SELECT a.region, a.code, s.seq, s.seq / 7, 16777216 + s.seq FROM acct a, seq_1_to_3 s")
        sc.src("UPDATE entry SET f = 1.2345678 WHERE n = 2")
        start = stored(sc, "source", ["acct", "entry"])
        cfg = sc.config({"j": {"root_table": "acct", "where": "old = 1", "relations": [
            {"table": "entry", "foreign_key": ["region", "code"]}]}}, processing={"batch_size": 7})
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sc.count("destination", "acct"), 20)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        self.assert_round_trip(sc, start, ["acct", "entry"])

    # -- what can go wrong -----------------------------------------------------------------------------------
    def test_key_taken_in_the_source_is_never_overwritten(self):
        sc, cfg, start = self.shop("rtkey")
        victim = min(k[0] for k in sc.rows("destination", "orders"))
        cust = sc.src("SELECT MIN(id) FROM customers")[0][0]
        sc.src(f"INSERT INTO orders (id, customer_id, created_at, status, total) VALUES ({victim}, {cust}, NOW(), "
               "'reused', 1.00)")
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"root orders (id) = ({victim}): the key of the row orders (id) = ({victim}) is in the source "
                      "already, with other content; goarchive never overwrites a source row", r.out + r.err)
        self.assertIn("1 root(s) could not be restored and stay in the archive", r.out + r.err)
        self.assertEqual(sc.src(f"SELECT status FROM orders WHERE id = {victim}")[0][0], "reused")
        self.assertEqual([k[0] for k in sc.rows("destination", "orders")], [victim])
        # The archive holds exactly the victim's tree; every other row is back in the source, exactly.
        self.assertEqual({k[0] for k in sc.rows("destination", "order_items")},
                         {k[0] for k in sc.dst(f"SELECT id FROM order_items WHERE order_id = {victim}")})
        now = stored(sc, "source", SHOP_TABLES)
        for t in SHOP_TABLES:
            arch = gatest.stored_checksums("destination", sc.dst_db, t)
            for key, sha in start[t].items():
                if key in arch:
                    self.assertEqual(arch[key], sha, f"{t} {key} changed in the archive")
                else:
                    self.assertEqual(now[t].get(key), sha, f"{t} {key} is not back in the source as it was")
        self.assertEqual(sc.unfinished(), 0)

    def test_parent_outside_the_job_gone(self):
        sc, cfg, start = self.shop("rtparent")
        victim = min(k[0] for k in sc.rows("destination", "orders"))
        cust = sc.dst(f"SELECT customer_id FROM orders WHERE id = {victim}")[0][0]
        # The customer's other orders, still in the source, go first with it.
        sc.src(f"DELETE FROM order_items WHERE order_id IN (SELECT id FROM orders WHERE customer_id = {cust})")
        for t in ("payments", "shipment_items", "shipments"):
            if t == "shipment_items":
                sc.src(f"DELETE si FROM shipment_items si JOIN shipments s ON s.id = si.shipment_id JOIN orders o ON "
                       f"o.id = s.order_id WHERE o.customer_id = {cust}")
            else:
                sc.src(f"DELETE FROM {t} WHERE order_id IN (SELECT id FROM orders WHERE customer_id = {cust})")
        sc.src(f"DELETE FROM orders WHERE customer_id = {cust}")
        sc.src(f"DELETE FROM customers WHERE id = {cust}")
        lost_parent = {k[0] for k in sc.dst(f"SELECT id FROM orders WHERE customer_id = {cust}")}
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 1, r)
        self.assertIn(f"root orders (id) = ({victim}): the row orders (id) = ({victim}) cannot go back: a parent it "
                      "references is not in the source", r.out + r.err)
        self.assertEqual({k[0] for k in sc.rows("destination", "orders")}, lost_parent)
        sc.assert_invariant({}, SHOP_RELATIONS)
        self.assertEqual(sc.unfinished(), 0)

    def test_insert_trigger_refused(self):
        sc, cfg, start = self.shop("rttrig")
        sc.src("CREATE TRIGGER audit_items AFTER INSERT ON order_items FOR EACH ROW SET @x = 1")
        before_dst = stored(sc, "destination", SHOP_TABLES)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("has an INSERT trigger on the source (audit_items): restore would fire it for every row it "
                      "puts back", r.err)
        self.assertEqual(stored(sc, "destination", SHOP_TABLES), before_dst)

    def test_missing_privileges_refused_before_any_batch(self):
        """restore writes the source tables (INSERT), the archive tables (DELETE, not with --keep-archive) and the
        commit proofs' table: an account without one of them is refused by preflight, before any batch, with the
        privilege, the table and the GRANT that gives it; the archive preflight's INSERT on the archive is not
        asked for. Granting what the messages name lets the same restore run."""
        sc, cfg, start = self.shop("rtpriv", orders=40)
        q = gatest.quote_ident
        user, pw = f"ga_rp_{uuid.uuid4().hex[:8]}", gatest.env("GA_PASSWORD")
        for server in ("source", "destination"):
            gatest.sql(server, f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (pw,))
            self.addCleanup(gatest.sql, server, f"DROP USER IF EXISTS '{user}'@'%'")
        gatest.sql("source", f"GRANT SELECT ON {q(sc.src_db)}.* TO '{user}'@'%'")
        for t in SHOP_TABLES:
            if t != "order_items":
                gatest.sql("source", f"GRANT INSERT ON {q(sc.src_db)}.{q(t)} TO '{user}'@'%'")
        gatest.sql("source", f"GRANT SELECT, INSERT ON {q(sc.src_db)}.`goarchive_commits` TO '{user}'@'%'")
        gatest.sql("destination", f"GRANT SELECT ON {q(sc.dst_db)}.* TO '{user}'@'%'")
        gatest.sql("destination", f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, INDEX ON {q(sc.job_schema)}.* "
                                  f"TO '{user}'@'%'")
        with open(cfg) as f:
            text = f.read()
        self.assertEqual(text.count(f'user = "{gatest.env("GA_USER")}"'), 2)
        rcfg = cfg.replace(".toml", "-restricted.toml")
        with open(rcfg, "w") as f:
            f.write(text.replace(f'user = "{gatest.env("GA_USER")}"', f'user = "{user}"'))
        before_dst = stored(sc, "destination", SHOP_TABLES)
        before_src = stored(sc, "source", SHOP_TABLES)
        batches = gatest.sql("destination", f"SELECT COUNT(*) FROM {q(sc.job_schema)}.batches")[0][0]

        def refused(*args):
            r = sc.job("restore", rcfg, "j", "--where", "1=1", *args)
            self.assertEqual(r.rc, 1, r)
            self.assertIn('preflight refused job "j" before any data moved', r.err)
            self.assertEqual(stored(sc, "destination", SHOP_TABLES), before_dst)
            self.assertEqual(stored(sc, "source", SHOP_TABLES), before_src)
            self.assertEqual(gatest.sql("destination", f"SELECT COUNT(*) FROM {q(sc.job_schema)}.batches")[0][0],
                             batches, "a refused restore recorded a batch")
            return r.err

        insert = (f"restore: the source account lacks INSERT on {sc.src_db}.order_items; run on the source: GRANT "
                  f"INSERT ON {q(sc.src_db)}.`order_items` TO '{user}'@'%'")
        proofs = (f"restore: the source account lacks DELETE on {sc.src_db}.goarchive_commits; run on the source: "
                  f"GRANT DELETE ON {q(sc.src_db)}.`goarchive_commits` TO '{user}'@'%'")
        err = refused()
        self.assertIn(insert, err)
        self.assertIn(proofs, err)
        for t in SHOP_TABLES:
            self.assertIn(f"restore: the destination account lacks DELETE on {sc.dst_db}.{t}; run on the "
                          f"destination: GRANT DELETE ON {q(sc.dst_db)}.{q(t)} TO '{user}'@'%'", err)
            self.assertNotIn(f"lacks INSERT on {sc.dst_db}.{t}", err)  # restore never inserts into the archive
            if t != "order_items":
                self.assertNotIn(f"lacks INSERT on {sc.src_db}.{t};", err)
        # --keep-archive leaves the archive as it is: no DELETE asked for there.
        err = refused("--keep-archive")
        self.assertIn(insert, err)
        self.assertNotIn("lacks DELETE on " + sc.dst_db, err)
        # The GRANTs the messages name are enough.
        gatest.sql("source", f"GRANT INSERT ON {q(sc.src_db)}.`order_items` TO '{user}'@'%'")
        gatest.sql("source", f"GRANT DELETE ON {q(sc.src_db)}.`goarchive_commits` TO '{user}'@'%'")
        for t in SHOP_TABLES:
            gatest.sql("destination", f"GRANT DELETE ON {q(sc.dst_db)}.{q(t)} TO '{user}'@'%'")
        r = sc.job("restore", rcfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 0, r)
        self.assert_round_trip(sc, start, SHOP_TABLES)
        sc.assert_invariant({}, SHOP_RELATIONS)

    def test_bad_input(self):
        sc, cfg, start = self.shop("rtbad", orders=20)
        before_dst = stored(sc, "destination", SHOP_TABLES)
        r = sc.job("restore", cfg, "j")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--where is required", r.err)
        r = sc.job("restore", cfg, "j", "--where", "  ")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("restore needs --where", r.err)
        r = sc.job("restore", cfg, "j", "--where", "no_such_column = 1")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("restore --where does not run on the archived root table", r.err)
        self.assertEqual(stored(sc, "destination", SHOP_TABLES), before_dst)

    def test_unfinished_archive_work_is_finished_by_archive(self):
        sc = Scenario(self, "rtmode")
        load_shop(sc, orders=60)
        cfg = sc.config({"j": SHOP_JOB}, processing={"batch_size": 25}, destination={"foreign_key_checks": False})
        r = sc.job("archive", cfg, env={"GOARCHIVE_FAULT": "after_copy_commit"})
        self.assertEqual(r.rc, -9, r)
        r = sc.job("restore", cfg, "j", "--where", "1=1")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("job j has unfinished archive work (25 root(s) copied, 0 deleting) that only archive may "
                      "finish; run `goarchive archive -j j` first, then this command again", r.err)
        self.assertEqual(sc.job("archive", cfg).rc, 0)
        # And the other way: archive leaves an unfinished restore to restore.
        r = sc.job("restore", cfg, "j", "--where", "1=1", env={"GOARCHIVE_FAULT": "after_copy_commit"})
        self.assertEqual(r.rc, -9, r)
        r = sc.job("archive", cfg)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("that only restore may finish", r.err)
        self.assertEqual(sc.job("restore", cfg, "j", "--where", "1=1").rc, 0)
        self.assertEqual(sc.count("destination", "orders"), 0)

    def test_dry_run_writes_nothing_and_counts(self):
        sc, cfg, start = self.shop("rtdry", orders=40)
        before = (stored(sc, "source", SHOP_TABLES), stored(sc, "destination", SHOP_TABLES))
        n = sc.dst("SELECT COUNT(*) FROM orders WHERE id < 20")[0][0]
        items = sc.dst("SELECT COUNT(*) FROM order_items i JOIN orders o ON o.id = i.order_id WHERE o.id < 20")[0][0]
        for args in (("dry-run", cfg, "j", "--mode", "restore", "--where", "id < 20"),
                     ("restore", cfg, "j", "--where", "id < 20", "--dry-run")):
            r = sc.job(*args)
            self.assertEqual(r.rc, 0, r)
            self.assertIn(f"archived roots that match --where (as of now): {n}\n", r.out)
            self.assertRegex(r.out, rf"order_items +{items}\n")
            self.assertIn(f"INSERT INTO `{sc.src_db}`.`orders`", r.out)
            self.assertIn(f"DELETE FROM `{sc.dst_db}`.`orders` WHERE", r.out)
            self.assertIn("the commit proof, in the copy transaction into the source", r.out)
        r = sc.job("dry-run", cfg, "j", "--mode", "restore")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("dry-run --mode restore needs --where", r.err)
        self.assertEqual((stored(sc, "source", SHOP_TABLES), stored(sc, "destination", SHOP_TABLES)), before)

    def test_archive_shared_with_another_job_is_refused(self):
        sc, cfg, start = self.shop("rtshared", orders=30)
        other = dict(SHOP_JOB, where="created_at < NOW() - INTERVAL 20 YEAR")
        cfg2 = sc.config({"j": SHOP_JOB, "k": other}, processing={"batch_size": 25},
                         destination={"foreign_key_checks": False})
        self.assertEqual(sc.job("archive", cfg2, "k").rc, 0)
        before = (stored(sc, "source", SHOP_TABLES), stored(sc, "destination", SHOP_TABLES))
        r = sc.job("restore", cfg2, "j", "--where", "1=1")
        self.assertEqual(r.rc, 2, r)
        self.assertIn(f"restore of job j refused: job(s) k of the same registry archive into {sc.dst_db}.orders too, "
                      "and nothing tells their rows from this job's", r.err)
        self.assertEqual((stored(sc, "source", SHOP_TABLES), stored(sc, "destination", SHOP_TABLES)), before)

    # -- crashes -------------------------------------------------------------------------------------------------
    def test_kill_at_every_point_then_rerun(self):
        for point in RESTORE_POINTS:
            for nth in (1, 2):
                with self.subTest(point=point, nth=nth):
                    sc, cfg, start = self.shop(f"rtkill{nth}", orders=80)
                    r = sc.job("restore", cfg, "j", "--where", "1=1", "--batch-size", "10",
                               env={"GOARCHIVE_FAULT": f"{point}:{nth}"})
                    if point == "after_locks" and nth == 2:
                        self.assertEqual(r.rc, 0, r)  # passed once per run
                    else:
                        self.assertEqual(r.rc, -9, r)
                    # Between the kill and the rerun nothing is lost: every row is in one server at least, as it was.
                    now_src, now_dst = stored(sc, "source", SHOP_TABLES), stored(sc, "destination", SHOP_TABLES)
                    for t in SHOP_TABLES:
                        for key, sha in start[t].items():
                            self.assertIn(sha, (now_src[t].get(key), now_dst[t].get(key)), f"{t} {key} lost")
                    r = sc.job("restore", cfg, "j", "--where", "1=1")
                    self.assertEqual(r.rc, 0, r)
                    self.assert_round_trip(sc, start, SHOP_TABLES)
                    sc.assert_invariant({}, SHOP_RELATIONS)


if __name__ == "__main__":
    unittest.main()
