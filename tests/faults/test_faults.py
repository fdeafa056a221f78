#!/usr/bin/python3
"""The fault campaign (issue 7): process faults, server faults and overlapping runs against goarchive, each ending
with the same invariant (faultkit.check): every original row where its job puts it, unchanged, in exactly one place;
no duplicate keys; no orphans in either server; no unfinished roots after the final rerun. Prints a closing table
computed from every check.

It starts its own source and destination (scripts/servers.sh with GOARCHIVE_TEST_DIR=/tmp/goarchive-faults and ports
25306/25308), stops and restarts them during the run, and stops them at the end. Needs the Debug build (fault hooks:
GOARCHIVE_FAULT=<point>[:n]).

Seeded: FAULT_SEED=<n> replays a campaign (the SIGKILL instants of the timer kills depend on timing too);
FAULT_VERBOSE=1 prints each fault as it is injected.
"""

import math
import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultkit  # noqa: E402  (puts tests/integration on sys.path)
import campaignkit  # noqa: E402
from campaignkit import tail  # noqa: E402
from faultkit import STATS, Blocker, Tree, check, expectations, note, servers, subtree, table_rows  # noqa: E402

import gatest  # noqa: E402
from lockkit import LockScenario, job_lock_holder, kill, table_lock_holder, wait_until  # noqa: E402
from scenario import BIN, SHOP_JOB, SHOP_RELATIONS, SHOP_TABLES, load_shop  # noqa: E402
from tcpproxy import TcpProxy  # noqa: E402

SEED = int(os.environ.get("FAULT_SEED") or 20260007)
SHOP = Tree("orders", SHOP_TABLES, SHOP_RELATIONS)
SHOP_WHERE = SHOP_JOB["where"]
PLACE = {"archive": "dst", "copy-only": "both", "purge": "gone"}

# Fault points per mode (the Debug build's hooks) and whether they are passed once per run or once per batch.
ONCE = {"creating_schema", "after_locks"}
POINTS = {
    "archive": ["creating_schema", "after_locks", "before_copy_commit", "after_copy_commit", "after_verify",
                "after_mark_deleting", "before_delete_commit", "after_delete_commit", "after_batch"],
    "copy-only": ["creating_schema", "after_locks", "before_copy_commit", "after_copy_commit", "after_verify",
                  "after_batch"],
    "purge": ["creating_schema", "after_locks", "before_delete_commit", "after_delete_commit", "after_batch"],
}
KILLS = {"archive": 40, "copy-only": 15, "purge": 15}


def setUpModule():
    global BIN
    BIN = faultkit.start(BIN)
    campaignkit.require_fault_hooks(BIN, {p for points in POINTS.values() for p in points})  # no kill may be a no-op
    print(f"\nfault campaign: FAULT_SEED={SEED}, binary {BIN}, servers 127.0.0.1:{os.environ['GA_SOURCE_PORT']} "
          f"(source) and :{os.environ['GA_DEST_PORT']} (destination)", file=sys.stderr, flush=True)


def tearDownModule():
    try:
        servers("stop", "source", "destination")
    finally:
        print("\n" + faultkit.closing_table(SEED), file=sys.stderr, flush=True)


def run_goarchive(args, env=None, kill_after=None, timeout=120):
    """goarchive ARGS to its end (or SIGKILLed KILL_AFTER seconds after its start); returns (rc, out, err)."""
    return campaignkit.run(BIN, args, env=env, kill_after=kill_after, timeout=timeout)


class Base(unittest.TestCase):
    maxDiff = 4000

    # -- scenarios ----------------------------------------------------------------------------------------------
    def shop(self, tag, mode="archive", orders=100, processing=None, verification="sha256", source=None,
             destination=None):
        """The demo shop (three levels: orders -> shipments -> shipment_items, and two more children) with ORDERS
        orders, half of them cold; returns (sc, cfg, snapshot, expect)."""
        sc = LockScenario(self, tag)
        load_shop(sc, orders=orders)
        dst = {"foreign_key_checks": False}  # the destination has no customers: orders' foreign key would fail
        dst.update(destination or {})
        cfg = sc.config({"old": SHOP_JOB}, processing=processing or {"batch_size": 5, "delete_batch_size": 4},
                        verification=verification, source=source, destination=dst)
        snap = {t: table_rows("source", sc.src_db, t) for t in SHOP.tables}
        cold = subtree("source", sc.src_db, SHOP, snap, SHOP_WHERE)
        return sc, cfg, snap, expectations(snap, **{PLACE[mode]: cold})

    def check(self, sc, snap, expect, final, what, tree=SHOP, dst_dbs=None):
        check(self, sc.src_db, dst_dbs or [sc.dst_db], tree, snap, expect, final, what)

    def assert_finished(self, sc, cfg, job="old", what=""):
        self.assertEqual(sc.unfinished(), 0, f"unfinished roots after the final rerun {what}")
        j = sc.jobs_json(cfg)[job]
        self.assertEqual(j["unfinished_roots"], 0, j)
        self.assertNotEqual(j["status"], "running", j)

    def state(self, sc, tables=SHOP_TABLES):
        """Everything a commit could change: data of both servers and the registry's work log."""
        return {"data": sc.checksums(tables), "log": sc.log_rows()}

    def rerun(self, sc, cfg, mode, what, job="old", timeout=120):
        r = sc.go(mode, cfg, job, timeout=timeout)
        self.assertEqual(r.rc, 0, f"the rerun after {what} did not finish: {r}")
        return r


# ==================================================================================================================
class ProcessFaults(Base):
    """SIGKILLs at random instants (seeded): a random fault point with a random n, or a SIGKILL from outside after a
    random delay; a round kills a chain of 1-4 runs (each the rerun of the one before), then reruns to the end."""

    def remaining_batches(self, sc, mode, batch, cold_roots):
        """Batches the next run has left (plus one for a recovery batch)."""
        if mode == "copy-only":
            left = len(cold_roots) - sc.count("destination", "orders")
        else:
            left = len(cold_roots & set(table_rows("source", sc.src_db, "orders")))
        return max(1, math.ceil(left / batch) + 1)

    def campaign(self, mode, wanted):
        rng = random.Random(f"{SEED}:{mode}")
        kills = rounds = outlived = 0
        durations = [0.4]  # seconds whole first runs took: the timer kills' range
        weights = [1 if p in ONCE else 3 for p in POINTS[mode]]
        while kills < wanted:
            rounds += 1
            self.assertLess(rounds, 4 * wanted, f"only {kills} SIGKILLs in {rounds} rounds: a build without the "
                                                f"fault hooks (Debug only)?")
            batch = rng.randint(5, 10)
            orders = rng.choice([80, 100, 120])
            verification = rng.choice(["sha256", "sha256", "count"])
            processing = {"batch_size": batch, "delete_batch_size": rng.randint(2, 8)}
            sc, cfg, snap, expect = self.shop(f"pk{mode[0]}", mode, orders, processing, verification)
            cold_roots = {k for k, place in expect["orders"].items() if place != "src"}
            args = [mode, "-c", cfg, "-j", "old", "--no-progress"]
            round_kills = 0
            finished = False
            for attempt in range(rng.randint(1, 4)):
                if rng.random() < 0.5:
                    point = rng.choices(POINTS[mode], weights)[0]
                    n = 1 if point in ONCE else rng.randint(1, self.remaining_batches(sc, mode, batch, cold_roots))
                    how = f"GOARCHIVE_FAULT={point}:{n}"
                    t0 = time.monotonic()
                    rc, out, err = run_goarchive(args, env={"GOARCHIVE_FAULT": f"{point}:{n}"})
                else:
                    delay = round(rng.uniform(0.0, sum(durations) / len(durations)), 3)
                    how = f"SIGKILL after {delay}s"
                    t0 = time.monotonic()
                    rc, out, err = run_goarchive(args, kill_after=delay)
                what = (f"[seed {SEED} {mode} round {rounds} run {attempt + 1}: batch_size {batch}, {orders} orders, "
                        f"{verification}, {how}]")
                if rc == -9:
                    kills += 1
                    round_kills += 1
                    STATS["faults_injected"] += 1
                    STATS[f"kills_{mode}"] += 1
                    STATS["kills_by_timer" if how.startswith("SIGKILL") else "kills_at_point"] += 1
                    note(f"{what} killed")
                    self.check(sc, snap, expect, False, "after a kill " + what)
                    continue
                self.assertEqual(rc, 0, f"{what} neither killed nor finished: rc={rc}\n{tail(err)}")
                if attempt == 0:
                    durations.append(time.monotonic() - t0)
                outlived += 1
                finished = True
                break
            if not finished:
                self.rerun(sc, cfg, mode, f"{round_kills} kill(s) in round {rounds}")
            what = f"[seed {SEED} {mode} round {rounds}, after {round_kills} kill(s)]"
            self.check(sc, snap, expect, True, what)
            self.assert_finished(sc, cfg, what=what)
            r = sc.go(mode, cfg, "old")
            self.assertEqual(r.rc, 0, r)
            self.assertIn("nothing to do", r.out, f"a run after the finished one found work {what}")
            STATS["faults_survived"] += round_kills
            sc.cleanup()  # now, not at the test's end: keep the servers small
        print(f"\n  {mode}: {kills} SIGKILLs in {rounds} rounds ({outlived} runs outlived their fault)",
              file=sys.stderr, flush=True)

    def test_archive_sigkills(self):
        self.campaign("archive", KILLS["archive"])

    def test_copy_only_sigkills(self):
        self.campaign("copy-only", KILLS["copy-only"])

    def test_purge_sigkills(self):
        self.campaign("purge", KILLS["purge"])


# ==================================================================================================================
class ServerFaults(Base):
    """Servers stopped, lock sessions killed and connections cut while goarchive is inside a transaction (held
    there by a row lock that the test holds), or at a random instant (the proxy)."""

    ORDERS = 100  # 50 cold roots: 10 batches of 5

    def target_rows(self, sc, snap, nth_batch=4):
        """The first root of batch NTH_BATCH and one of its shipment_items rows (the last table goarchive copies
        and locks for its delete)."""
        roots = sorted(subtree("source", sc.src_db, SHOP, snap, SHOP_WHERE)["orders"])
        root = roots[(nth_batch - 1) * 5]
        ship = [k for k, row in snap["shipments"].items() if row[1] == root[0]]
        item = sorted(k for k, row in snap["shipment_items"].items() if (row[1],) in ship)[0]
        return root, item

    def survived(self, sc, cfg, snap, expect, what, mode="archive"):
        self.rerun(sc, cfg, mode, what)
        self.check(sc, snap, expect, True, f"[{what}]")
        self.assert_finished(sc, cfg, what=what)
        STATS["faults_survived"] += 1

    def background_blocked(self, sc, cfg, server, stmt_args, mode="archive"):
        """Holds a row lock on SERVER, starts goarchive and waits until it waits for that lock."""
        blocker = Blocker(server, stmt_args)
        bg = sc.background(mode, cfg, "old")
        try:
            wait_until(lambda: faultkit.lock_waits(server) > 0 or not bg.alive(), 60, interval=0.3,
                       what=f"goarchive to wait for the test's row lock on the {server}")
        except AssertionError as e:
            blocker.release()
            raise AssertionError(f"{e}; goarchive's log:\n{tail(bg.err)}") from None
        self.assertTrue(bg.alive(), f"goarchive ended before it reached the blocked row: {bg.err}")
        return blocker, bg

    def dst_copy_blocker(self, sc, snap, item):
        """An uncommitted insert of shipment_items row ITEM in the destination: goarchive's copy of its batch waits
        for it, inside the copy transaction (orders, order_items, payments and shipments already inserted)."""
        row = snap["shipment_items"][item]
        return [("SET SESSION foreign_key_checks = 0", None),
                (f"INSERT INTO {gatest.quote_ident(sc.dst_db)}.shipment_items VALUES (%s, %s, %s, %s)", row)]

    def src_delete_blocker(self, sc, item):
        """A locking read of shipment_items row ITEM in the source: goarchive's delete transaction of its batch
        waits for it, with the batch's other rows already locked."""
        return [(f"SELECT id FROM {gatest.quote_ident(sc.src_db)}.shipment_items WHERE id = %s FOR UPDATE", item)]

    # -- (a) the destination server stopped in the middle of a copy --------------------------------------------------
    def test_a_destination_stopped_mid_copy(self):
        sc, cfg, snap, expect = self.shop("sfa", orders=self.ORDERS)
        root, item = self.target_rows(sc, snap)
        blocker, bg = self.background_blocked(sc, cfg, "destination", self.dst_copy_blocker(sc, snap, item))
        time.sleep(0.5)  # the source thread finishes what it had under way
        source_before = {t: gatest.checksum_table("source", sc.src_db, t) for t in SHOP_TABLES}
        try:
            servers("stop", "destination")
            STATS["faults_injected"] += 1
            STATS["server_stops"] += 1
            note(f"destination stopped while goarchive copies the batch of root {root}")
            r = bg.finish(timeout=90)  # raises if it hangs
            self.assertEqual({t: gatest.checksum_table("source", sc.src_db, t) for t in SHOP_TABLES}, source_before,
                             "goarchive deleted from the source after its destination (and lock session) went away")
        finally:
            blocker.release()
            servers("start", "destination")
        self.assertNotIn(r.rc, (0, -9), f"a run whose destination went away mid-copy must stop non-zero: {r}")
        self.assertEqual(r.rc, 1, r)
        self.assertNotIn(root, table_rows("destination", sc.dst_db, "orders"), "the interrupted copy was committed")
        self.check(sc, snap, expect, False, "after the destination stop")
        self.survived(sc, cfg, snap, expect, "the destination stopped mid-copy")

    # -- (b) the source server stopped in the middle of a delete -----------------------------------------------------
    def test_b_source_stopped_mid_delete(self):
        sc, cfg, snap, expect = self.shop("sfb", orders=self.ORDERS)
        root, item = self.target_rows(sc, snap)
        blocker, bg = self.background_blocked(sc, cfg, "source", self.src_delete_blocker(sc, item))
        time.sleep(0.5)  # the destination thread finishes what it had under way

        def destination_state():
            return ({t: gatest.checksum_table("destination", sc.dst_db, t) for t in SHOP_TABLES}, sc.log_rows())

        destination_before = destination_state()
        try:
            servers("stop", "source")
            STATS["faults_injected"] += 1
            STATS["server_stops"] += 1
            note(f"source stopped while goarchive deletes the batch of root {root}")
            r = bg.finish(timeout=90)
            self.assertEqual(destination_state(), destination_before,
                             "goarchive committed on the destination after its source (and lock session) went away")
        finally:
            blocker.release()
            servers("start", "source")
        self.assertNotIn(r.rc, (0, -9), f"a run whose source went away mid-delete must stop non-zero: {r}")
        self.assertEqual(r.rc, 1, r)
        self.assertIn(root, table_rows("source", sc.src_db, "orders"), "the interrupted delete was committed")
        self.check(sc, snap, expect, False, "after the source stop")
        self.survived(sc, cfg, snap, expect, "the source stopped mid-delete")

    # -- (c) a lock session killed on each server ----------------------------------------------------------------------
    def lock_session_killed(self, server):
        sc, cfg, snap, expect = self.shop(f"sfc{server[0]}", orders=self.ORDERS)
        root, item = self.target_rows(sc, snap)
        stmts = self.dst_copy_blocker(sc, snap, item) if server == "destination" else self.src_delete_blocker(sc, item)
        blocker, bg = self.background_blocked(sc, cfg, server, stmts)
        try:
            time.sleep(0.5)  # the other thread reaches its own wait (no commit in flight)
            before = self.state(sc)
            holder = (job_lock_holder(sc.job_schema, "old") if server == "destination"
                      else table_lock_holder(sc.src_db, "orders"))
            self.assertTrue(holder, "no lock holder found")
            kill(server, holder)
            STATS["faults_injected"] += 1
            STATS["lock_kills"] += 1
            note(f"{server} lock session {holder} killed while goarchive waits inside the batch of root {root}")
        finally:
            blocker.release()  # goarchive's statement goes on; its commit must not
        r = bg.finish(timeout=90)
        self.assertNotIn(r.rc, (0, -9), f"a run that lost its {server} lock session must stop non-zero: {r}")
        self.assertIn("lost its named locks", r.err, r)
        self.assertEqual(self.state(sc), before, f"goarchive committed after its {server} lock session was killed")
        self.check(sc, snap, expect, False, f"after the {server} lock session was killed")
        self.survived(sc, cfg, snap, expect, f"the {server} lock session was killed")

    def test_c1_destination_lock_session_killed(self):
        self.lock_session_killed("destination")

    def test_c2_source_lock_session_killed(self):
        self.lock_session_killed("source")

    # -- (e) a row lock held by the application past innodb_lock_wait_timeout: retryable -----------------------------
    def lock_wait_timeout(self, server):
        sc, cfg, snap, expect = self.shop(f"sfe{server[0]}", orders=self.ORDERS)
        root, item = self.target_rows(sc, snap)
        gatest.sql(server, "SET GLOBAL innodb_lock_wait_timeout = 2")  # goarchive's sessions start with it
        self.addCleanup(gatest.sql, server, "SET GLOBAL innodb_lock_wait_timeout = 50")
        stmts = self.dst_copy_blocker(sc, snap, item) if server == "destination" else self.src_delete_blocker(sc, item)
        blocker, bg = self.background_blocked(sc, cfg, server, stmts)
        try:
            STATS["faults_injected"] += 1
            STATS["lock_wait_timeouts"] += 1
            bg.wait_for("retryable error (1205)", timeout=30)
            note(f"{server}: lock wait timeout inside the batch of root {root}")
        finally:
            blocker.release()
        r = bg.finish(timeout=90)
        self.assertEqual(r.rc, 0, f"a lock wait timeout is retryable; the run should finish: {r}")
        self.check(sc, snap, expect, True, f"after a lock wait timeout on the {server}")
        self.assert_finished(sc, cfg)
        STATS["faults_survived"] += 1
        return r

    def test_e1_destination_lock_wait_timeout_mid_copy_is_retried(self):
        r = self.lock_wait_timeout("destination")
        # The batches whose end rode in the rolled-back copy transaction must be recorded done with their real
        # version, not refused as someone else's stale write.
        self.assertNotIn("stale write", r.err, f"misleading stale-write error after the engine's own rollback: {r}")

    def test_e2_source_lock_wait_timeout_mid_delete_is_retried(self):
        r = self.lock_wait_timeout("source")
        self.assertNotIn("stale write", r.err, r)

    # -- (f) a batch that fails for good (a conflicting archived row): the batches before it stay finished -----------
    def test_f_failed_batch_keeps_the_earlier_batches_finished(self):
        sc, cfg, snap, expect = self.shop("sff", orders=self.ORDERS)
        root, item = self.target_rows(sc, snap)
        stale = list(snap["shipment_items"][item])
        stale[3] += 1000  # qty: a different row under the same key, already in the destination
        conn = gatest.connect("destination", sc.dst_db)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION foreign_key_checks = 0")
                cur.execute("INSERT INTO shipment_items VALUES (%s, %s, %s, %s)", stale)
        finally:
            conn.close()
        STATS["faults_injected"] += 1
        STATS["conflicts"] += 1
        r = sc.go("archive", cfg, "old")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("already in the destination with different content", r.err, r)
        deleted = len(snap["orders"]) - sc.count("source", "orders")
        batches = gatest.sql("destination", "SELECT id, state, roots FROM batches ORDER BY id", db=sc.job_schema)
        note(f"conflicting row in the batch of root {root}: exit {r.rc}, {deleted} orders deleted, registry {batches}")
        # Every batch before the failed one was copied, verified and deleted: the registry must say done, not leave
        # them "deleting" (unfinished work that the guard holds against every job sharing these tables).
        left = sc.unfinished()
        gatest.sql("destination", "DELETE FROM shipment_items WHERE id = %s", item, db=sc.dst_db)
        self.survived(sc, cfg, snap, expect, "a conflicting row")
        self.assertEqual(left, 0, f"batches whose delete committed were left unfinished: {batches}\n{r}")

    # -- (d) connections cut by a loopback proxy ------------------------------------------------------------------------
    def proxied_shop(self, tag):
        psrc = TcpProxy(int(os.environ["GA_SOURCE_PORT"]))
        pdst = TcpProxy(int(os.environ["GA_DEST_PORT"]))
        self.addCleanup(psrc.close)
        self.addCleanup(pdst.close)
        sc, cfg, snap, expect = self.shop(tag, orders=self.ORDERS,
                                          processing={"batch_size": 5, "delete_batch_size": 3, "sleep": 0.1},
                                          source={"port": psrc.port}, destination={"port": pdst.port})
        return sc, cfg, snap, expect, {"source": psrc, "destination": pdst}

    def cut(self, sc, proxies, sides, scope, refuse=0.0):
        """Cuts the connections of SIDES (all of them, or only those that hold no lock: SCOPE "data"); returns
        whether a lock session was among them."""
        lock_cut = False
        for side in sides:
            if scope == "all":
                keep = set()
                lock_cut = True
            elif side == "source":
                keep = {table_lock_holder(sc.src_db, t) for t in SHOP_TABLES}
            else:
                keep = {job_lock_holder(sc.job_schema, "old")}
            keep.discard(None)
            if refuse:
                proxies[side].refuse(refuse)
            n = proxies[side].cut(lambda tid, keep=keep: tid not in keep)
            note(f"cut {n} {side} connection(s) ({scope}; kept {sorted(keep)})")
        STATS["faults_injected"] += 1
        STATS["proxy_cuts"] += 1
        return lock_cut

    def proxy_round(self, tag, sides, scope, after_batch=3, extra_delay=0.0, refuse=0.0):
        sc, cfg, snap, expect, proxies = self.proxied_shop(tag)
        bg = sc.background("archive", cfg, "old")
        bg.wait_for(f"batch {after_batch} start", timeout=60)
        time.sleep(extra_delay)
        lock_cut = self.cut(sc, proxies, sides, scope, refuse)
        what = f"[seed {SEED}: cut {'+'.join(sides)} {scope} after batch {after_batch} start + {extra_delay}s]"
        before = None
        if lock_cut:
            time.sleep(0.3)  # a commit the server received before the cut is visible now
            before = self.state(sc)
        r = bg.finish(timeout=120)
        self.assertNotEqual(r.rc, -9, r)
        if lock_cut:
            self.assertNotEqual(r.rc, 0, f"{what}: the run lost its lock sessions but exited 0: {r}")
            self.assertEqual(r.rc, 1, f"{what}: {r}")
            self.assertEqual(self.state(sc), before, f"{what}: goarchive committed after its lock sessions were cut")
        else:
            self.assertIn(r.rc, (0, 1), f"{what}: {r}")
            if r.rc == 0:
                STATS["proxy_retried_ok"] += 1
            else:
                STATS["proxy_stopped"] += 1
        note(f"{what} -> exit {r.rc}")
        self.check(sc, snap, expect, r.rc == 0, f"after {what}")
        time.sleep(refuse)
        if r.rc != 0:
            self.rerun(sc, cfg, "archive", what)
            self.check(sc, snap, expect, True, f"after the rerun {what}")
        self.assert_finished(sc, cfg, what=what)
        STATS["faults_survived"] += 1
        return r

    def test_d1_proxy_cuts_everything_and_refuses_for_a_while(self):
        self.proxy_round("sfd1", ["source", "destination"], "all", refuse=1.5)

    def test_d2_proxy_cuts_source_data_connections(self):
        r = self.proxy_round("sfd2", ["source"], "data")
        print(f"\n  source data connections cut, lock session kept: exit {r.rc}"
              f"{' (retried and finished)' if r.rc == 0 else ''}", file=sys.stderr)

    def test_d3_proxy_cuts_destination_data_connections(self):
        r = self.proxy_round("sfd3", ["destination"], "data")
        print(f"\n  destination data connections cut, lock session kept: exit {r.rc}"
              f"{' (retried and finished)' if r.rc == 0 else ''}", file=sys.stderr)

    def test_d4_proxy_cuts_at_random_instants(self):
        rng = random.Random(f"{SEED}:proxy")
        for i in range(6):
            sides = rng.choice([["source"], ["destination"], ["source", "destination"]])
            scope = rng.choice(["all", "data"])
            self.proxy_round(f"sfd4{i}", sides, scope, after_batch=rng.randint(1, 6),
                             extra_delay=round(rng.uniform(0, 0.12), 3), refuse=rng.choice([0.0, 0.5]))


# ==================================================================================================================
PCG_TABLES = ["p", "c", "g"]
PCG_RELATIONS = [("c", ["pid"], "p", ["id"]), ("g", ["cid"], "c", ["id"])]
PCG = Tree("p", PCG_TABLES, PCG_RELATIONS)


def pcg_tree(sc, roots=100, dst_dbs=()):
    """p -> c -> g, with foreign keys: ROOTS p rows, two c per p, two g per c."""
    ddl = ["CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
           "CREATE TABLE c (id INT PRIMARY KEY, pid INT NOT NULL, w VARCHAR(20), KEY (pid), "
           "CONSTRAINT fk_c_p FOREIGN KEY (pid) REFERENCES p (id)) ENGINE=InnoDB",
           "CREATE TABLE g (id INT PRIMARY KEY, cid INT NOT NULL, x VARCHAR(20), KEY (cid), "
           "CONSTRAINT fk_g_c FOREIGN KEY (cid) REFERENCES c (id)) ENGINE=InnoDB"]
    for stmt in ddl:
        sc.both(stmt)
        for db in dst_dbs:
            gatest.sql("destination", stmt, db=db)
    sc.src(f"INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_{roots}")
    sc.src(f"INSERT INTO c SELECT seq, (seq + 1) DIV 2, CONCAT('c', seq) FROM seq_1_to_{2 * roots}")
    sc.src(f"INSERT INTO g SELECT seq, (seq + 1) DIV 2, CONCAT('g', seq) FROM seq_1_to_{4 * roots}")


def pcg_job(where):
    return {"root_table": "p", "where": where,
            "relations": [{"table": "c", "foreign_key": "pid"}, {"table": "g", "parent": "c", "foreign_key": "cid"}]}


SLOW = {"batch_size": 5, "delete_batch_size": 4, "sleep": 0.15}


class Connections(Base):
    """Preflight: an archive run needs at least four source and four destination connections (max_connections). These
    servers are this suite's own, so lowering max_connections disturbs nobody."""

    def too_few(self, server, needed):
        sc, cfg, snap, expect = self.shop(f"maxconn_{server[:3]}", orders=20)
        before = self.state(sc)
        old = gatest.sql(server, "SELECT @@max_connections")[0][0]
        gatest.sql(server, "SET GLOBAL max_connections = 10")  # the server's minimum
        idle = []
        try:
            # Idle sessions so that, with goarchive's first connection, one connection fewer than a run needs is
            # left.
            while int(gatest.sql(server, "SHOW GLOBAL STATUS LIKE 'Threads_connected'")[0][1]) - 1 < 11 - needed:
                idle.append(gatest.connect(server))
            r = sc.go("archive", cfg, "old")
        finally:
            for c in idle:
                c.close()
            gatest.sql(server, f"SET GLOBAL max_connections = {old}")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("preflight refused", r.err)
        self.assertIn(f"a run needs at least {needed} {server} connections", r.err)
        self.assertEqual(self.state(sc), before, "a refused run changed something")
        self.rerun(sc, cfg, "archive", "max_connections was restored")
        self.check(sc, snap, expect, True, "after the rerun")

    def test_too_few_source_connections_refused(self):
        self.too_few("source", 4)

    def test_too_few_destination_connections_refused(self):
        self.too_few("destination", 4)


class Overlaps(Base):
    """Runs that collide: exactly one works, the others exit 4 and change nothing; every row moves exactly once."""

    def collide(self, sc, starts, stagger=0.0):
        """Starts (command, cfg, job) runs together (STAGGER seconds apart); returns their Results in order."""
        bgs = []
        for command, cfg, job in starts:
            bgs.append(sc.background(command, cfg, job))
            if stagger:
                time.sleep(stagger)
        results = [bg.finish(timeout=180) for bg in bgs]
        STATS["overlaps_tried"] += 1
        rcs = [r.rc for r in results]
        self.assertEqual(sorted(rcs), [0] + [4] * (len(rcs) - 1), "\n\n".join(map(repr, results)))
        STATS["refused_4"] += rcs.count(4)
        for r in results:
            if r.rc == 4:
                self.assertTrue(any(s in r.err for s in ("is already running", "is in use by another GoArchive run",
                                                         "running or hold unfinished work")), r)
                self.assertRegex(r.err, r"did nothing|already running", r)
        note(f"overlap {[s[0] + ' ' + s[2] for s in starts]} -> exits {rcs}")
        return results

    def runs(self, sc, job_schema=None):
        return gatest.sql("destination", "SELECT COUNT(*) FROM runs", db=job_schema or sc.job_schema)[0][0]

    def test_ten_simultaneous_starts_of_one_job(self):
        sc = LockScenario(self, "ov10")
        pcg_tree(sc)
        cfg = sc.config({"old": pcg_job("id <= 60")}, processing=SLOW)
        snap = {t: table_rows("source", sc.src_db, t) for t in PCG_TABLES}
        expect = expectations(snap, dst=subtree("source", sc.src_db, PCG, snap, "id <= 60"))
        self.collide(sc, [("archive", cfg, "old")] * 10)
        self.assertEqual(self.runs(sc), 1, "the refused starts recorded runs")
        self.check(sc, snap, expect, True, "after ten simultaneous starts", tree=PCG)
        self.assert_finished(sc, cfg)

    def test_two_jobs_sharing_a_table(self):
        sc = LockScenario(self, "ovsh")
        for stmt in ["CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE n (id INT PRIMARY KEY, a_id INT NULL, b_id INT NULL, t VARCHAR(20), KEY (a_id), "
                     "KEY (b_id), CONSTRAINT fk_n_a FOREIGN KEY (a_id) REFERENCES a (id), "
                     "CONSTRAINT fk_n_b FOREIGN KEY (b_id) REFERENCES b (id)) ENGINE=InnoDB"]:
            sc.both(stmt)
        sc.src("INSERT INTO a SELECT seq, CONCAT('a', seq) FROM seq_1_to_100")
        sc.src("INSERT INTO b SELECT seq, CONCAT('b', seq) FROM seq_1_to_100")
        sc.src("INSERT INTO n SELECT seq, IF(seq % 2, (seq + 1) DIV 2, NULL), IF(seq % 2, NULL, seq DIV 2), "
               "CONCAT('n', seq) FROM seq_1_to_200")
        jobs = {"ja": {"root_table": "a", "where": "id <= 50", "relations": [{"table": "n", "foreign_key": "a_id"}]},
                "jb": {"root_table": "b", "where": "id <= 50", "relations": [{"table": "n", "foreign_key": "b_id"}]}}
        # Each job's archive lacks the other job's root table, which n's second foreign key points at: the archive
        # skips foreign-key checks (preflight refuses a destination foreign key to a table outside the job).
        cfg = sc.config(jobs, processing=SLOW, destination={"foreign_key_checks": False})
        tree = Tree(None, ["a", "b", "n"], [("n", ["a_id"], "a", ["id"]), ("n", ["b_id"], "b", ["id"])])
        snap = {t: table_rows("source", sc.src_db, t) for t in tree.tables}
        moved = subtree("source", sc.src_db, Tree("a", ["a", "n"], tree.relations[:1]), snap, "id <= 50")
        for t, keys in subtree("source", sc.src_db, Tree("b", ["b", "n"], tree.relations[1:]), snap,
                               "id <= 50").items():
            moved.setdefault(t, set()).update(keys)
        expect = expectations(snap, dst=moved)
        results = self.collide(sc, [("archive", cfg, "ja"), ("archive", cfg, "jb")])
        refused = ["ja", "jb"][[r.rc for r in results].index(4)]
        self.assertIn("n is in use by another GoArchive run", results[[r.rc for r in results].index(4)].err)
        self.rerun(sc, cfg, "archive", "its refusal", job=refused)
        self.check(sc, snap, expect, True, "after two jobs sharing table n", tree=tree)
        self.assert_finished(sc, cfg, "ja")
        self.assert_finished(sc, cfg, "jb")

    def test_archive_against_purge_on_the_same_tables(self):
        sc = LockScenario(self, "ovap")
        pcg_tree(sc)
        cfg = sc.config({"arch": pcg_job("id <= 40"), "purge": pcg_job("id > 70")}, processing=SLOW)
        snap = {t: table_rows("source", sc.src_db, t) for t in PCG_TABLES}
        expect = expectations(snap, dst=subtree("source", sc.src_db, PCG, snap, "id <= 40"),
                              gone=subtree("source", sc.src_db, PCG, snap, "id > 70"))
        results = self.collide(sc, [("archive", cfg, "arch"), ("purge", cfg, "purge")])
        if results[0].rc == 4:
            self.rerun(sc, cfg, "archive", "its refusal", job="arch")
        else:
            self.rerun(sc, cfg, "purge", "its refusal", job="purge")
        self.check(sc, snap, expect, True, "after archive against purge", tree=PCG)
        self.assert_finished(sc, cfg, "arch")
        self.assert_finished(sc, cfg, "purge")

    def test_one_source_two_destinations(self):
        sc = LockScenario(self, "ov2d")
        dst2 = sc.extra_db("destination", f"d2_{sc.id}")
        js2 = sc.extra_schema(f"ga2_{sc.id}")
        pcg_tree(sc, dst_dbs=[dst2])
        cfg1 = sc.config({"old": pcg_job("id <= 60")}, processing=SLOW)
        cfg2 = sc.config({"old": pcg_job("id <= 60")}, processing=SLOW,
                         destination={"database": dst2, "job_schema": js2})
        snap = {t: table_rows("source", sc.src_db, t) for t in PCG_TABLES}
        expect = expectations(snap, dst=subtree("source", sc.src_db, PCG, snap, "id <= 60"))
        results = self.collide(sc, [("archive", cfg1, "old"), ("archive", cfg2, "old")])
        later = [cfg1, cfg2][[r.rc for r in results].index(4)]
        r = self.rerun(sc, later, "archive", "its refusal")
        self.assertIn("nothing to do", r.out, "the second destination found rows the first had archived")
        self.check(sc, snap, expect, True, "after one source to two destinations", tree=PCG,
                   dst_dbs=[sc.dst_db, dst2])
        self.assert_finished(sc, cfg1)
        self.assert_finished(sc, cfg2)

    def test_cron_start_collides_with_manual_start(self):
        sc = LockScenario(self, "ovcr")
        pcg_tree(sc)
        cfg = sc.config({"old": pcg_job("id <= 60")}, processing=SLOW)
        snap = {t: table_rows("source", sc.src_db, t) for t in PCG_TABLES}
        expect = expectations(snap, dst=subtree("source", sc.src_db, PCG, snap, "id <= 60"))
        self.collide(sc, [("archive", cfg, "old"), ("archive", cfg, "old")], stagger=0.05)
        self.assertEqual(self.runs(sc), 1)
        self.check(sc, snap, expect, True, "after a cron start collided with a manual one", tree=PCG)
        self.assert_finished(sc, cfg)


if __name__ == "__main__":
    unittest.main()
