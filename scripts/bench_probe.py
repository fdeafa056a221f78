#!/usr/bin/python3
"""scripts/bench.sh, scenario 12: the application's probe on the partitioned events table.

Owns: one application session that writes single rows of bench.part_events every few milliseconds and records how
long each statement waited, and the summary (count, p50, p99, max) of a time window of those records. It never
changes the table's content for good: its UPDATEs set a column to its own value (they take the row lock and the
table's metadata lock like any update, and change nothing), and the rows it INSERTs it deletes again at the end.

  bench_probe.py run --port P --rows N --mode kept|front --out FILE --ready FILE [--interval-ms 5]
      kept:  alternately INSERTs a new row into the kept half (ids from 2,000,000,000, created 2024-06-15) and
             UPDATEs a random row of the kept half: the table's metadata lock, as any application statement.
      front: UPDATEs a row at most 2,000 ids past the lowest id left in the table (refreshed every 200 ms): the
             rows a row-by-row archiver is about to lock.
      Runs until SIGTERM or SIGINT; writes "epoch_seconds milliseconds error" per statement to FILE (error: 0, or
      the server's 1205 lock wait timeout or 1213 deadlock, which end the statement as an application sees it; the
      probe counts the wait and goes on).
  bench_probe.py summary FILE FROM TO
      "count p50 p99 max errors" (milliseconds) of the statements that started in [FROM, TO) (epoch seconds), or
      "0 - - - 0".

The password comes from the environment (GA_PASSWORD), the user from GA_USER. The table's `created` follows
id as bench/parts_data.sql generates it: 2023-01-01 + floor(id * 62,000,000 / rows) seconds.
"""
import argparse
import datetime
import os
import random
import signal
import sys
import time

START = datetime.datetime(2023, 1, 1)
SPAN = 62000000
PROBE_IDS = 2000000000


def created_of(row_id, rows):
    """The created date bench/parts_data.sql gives row_id of a table of rows rows."""
    return (START + datetime.timedelta(seconds=(row_id * SPAN) // rows)).date().isoformat()


def run(args):
    import pymysql

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    conn = pymysql.connect(host="127.0.0.1", port=args.port, user=os.environ.get("GA_USER", "goarchive"),
                           password=os.environ["GA_PASSWORD"], database="bench", autocommit=True)
    cur = conn.cursor()
    rng = random.Random(12)
    samples = []
    front, front_at, inserted, n = 1, 0.0, 0, 0
    kept_low = args.rows * 3 // 4
    update = "UPDATE part_events SET user_id = user_id WHERE id = %s AND created = %s"
    ready = False
    while not stop:
        now = time.time()
        if args.mode == "front":
            if now - front_at >= 0.2:
                cur.execute("SELECT MIN(id) FROM part_events")
                front = cur.fetchone()[0] or 1
                front_at = now
            target = min(front + rng.randrange(2000), args.rows - 10)
            stmt, params = update, (target, created_of(target, args.rows))
        elif n % 2 == 0:
            inserted += 1
            stmt = ("INSERT INTO part_events (id, created, kind, user_id, payload) "
                    "VALUES (%s, '2024-06-15', 'probe', 0, NULL)")
            params = (PROBE_IDS + inserted,)
        else:
            target = rng.randrange(kept_low, args.rows - 10)  # not the held last row
            stmt, params = update, (target, created_of(target, args.rows))
        n += 1
        t0 = time.perf_counter()
        error = 0
        try:
            cur.execute(stmt, params)
        except pymysql.err.OperationalError as e:
            if e.args[0] not in (1205, 1213):
                raise
            error = e.args[0]
        samples.append((now, (time.perf_counter() - t0) * 1000.0, error))
        if not ready:
            with open(args.ready, "w") as f:
                f.write("ready\n")
            ready = True
        time.sleep(args.interval_ms / 1000.0)
    if inserted:
        cur.execute("DELETE FROM part_events WHERE id >= %s AND created = '2024-06-15'", (PROBE_IDS,))
    conn.close()
    with open(args.out, "w") as f:
        for t, ms, error in samples:
            f.write(f"{t:.6f} {ms:.3f} {error}\n")


def percentile(sorted_values, p):
    """The nearest-rank p-th percentile of a sorted, non-empty list."""
    k = max(0, min(len(sorted_values) - 1, -(-len(sorted_values) * p // 100) - 1))
    return sorted_values[int(k)]


def summary(args):
    values, errors = [], 0
    with open(args.file) as f:
        for line in f:
            t, ms, error = line.split()
            if args.start <= float(t) < args.end:
                values.append(float(ms))
                errors += error != "0"
    if not values:
        print("0 - - - 0")
        return
    values.sort()
    print(f"{len(values)} {percentile(values, 50):.2f} {percentile(values, 99):.2f} {values[-1]:.2f} {errors}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--rows", type=int, required=True)
    r.add_argument("--mode", choices=("kept", "front"), required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--ready", required=True)
    r.add_argument("--interval-ms", type=float, default=5.0)
    s = sub.add_parser("summary")
    s.add_argument("file")
    s.add_argument("start", type=float)
    s.add_argument("end", type=float)
    args = parser.parse_args()
    run(args) if args.command == "run" else summary(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
