#!/usr/bin/env bash
# The goarchive demo: installs what it needs, builds, starts a throw-away source
# and destination server, loads the sample shop database (customers -> orders
# -> order_items, payments, shipments -> shipment_items; 4000 orders, half of
# them older than two years) and runs plan, dry-run, archive and jobs with
# examples/shop.toml, showing the row counts before and after.
# Everything printed is real output of the servers and of goarchive.
# The servers are left running; stop them with `scripts/servers.sh stop`.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly CONFIG=examples/shop.toml
readonly JOB=archive_old_orders
readonly ORDERS=4000
readonly TABLES=(customers orders order_items payments shipments shipment_items reviews)

step() { printf '\n==> %s\n' "$*"; }

# Runs a command after echoing it, the way a reader would type it.
show() {
  printf '$ %s\n' "$*"
  "$@"
}

sql() { bash scripts/servers.sh sql "$@"; }

# Prints one line per table: the row count in shop on the source and in
# shop_archive on the destination ("-" where the table does not exist).
counts() {
  local t src dst
  printf '%-16s %12s %14s\n' table "source shop" "dest archive"
  for t in "${TABLES[@]}"; do
    src=$(sql source -NBe "SELECT COUNT(*) FROM shop.\`$t\`" 2>/dev/null || echo -)
    dst=$(sql destination -NBe "SELECT COUNT(*) FROM shop_archive.\`$t\`" 2>/dev/null || echo -)
    printf '%-16s %12s %14s\n' "$t" "$src" "$dst"
  done
}

step "scripts/setup.sh (Debian packages; does nothing when all are installed)"
bash scripts/setup.sh

step "build (cmake, build directory: build)"
cmake -S . -B build >/dev/null
cmake --build build -j2
readonly GOARCHIVE=build/goarchive

step "servers: source and destination (scripts/servers.sh start is idempotent)"
bash scripts/servers.sh start source destination
eval "$(bash scripts/servers.sh env)"
export GA_PASSWORD  # examples/shop.toml reads the password from GA_PASSWORD (password_env)

step "load the shop database on the source (@orders = $ORDERS) and an empty archive on the destination"
sql source -e "DROP DATABASE IF EXISTS shop; CREATE DATABASE shop CHARACTER SET utf8mb4"
sql source shop <examples/shop_schema.sql
{
  echo "SET @orders = $ORDERS;"
  cat examples/shop_data.sql
} | sql source shop
sql destination -e "DROP DATABASE IF EXISTS shop_archive; CREATE DATABASE shop_archive CHARACTER SET utf8mb4;
                    DROP DATABASE IF EXISTS goarchive"
sql destination shop_archive <examples/shop_schema.sql
older=$(sql source -NBe "SELECT COUNT(*) FROM shop.orders WHERE created_at < NOW() - INTERVAL 2 YEAR")
echo "loaded: orders older than two years (the job's where condition): $older"
# A table outside the job that references orders (ON DELETE RESTRICT): the old orders it still references stay in
# the source, reported as blocked, and everything else moves (goarchive.toml(5), "References from outside the job").
sql source shop -e "CREATE TABLE reviews (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
                      order_id BIGINT UNSIGNED NOT NULL, stars TINYINT NOT NULL,
                      CONSTRAINT fk_reviews_order FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE RESTRICT
                    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
                    INSERT INTO reviews (order_id, stars)
                      SELECT id, 1 + id % 5 FROM orders WHERE created_at < NOW() - INTERVAL 2 YEAR ORDER BY id LIMIT 5"
echo "reviews (not in the job) still references 5 of those old orders: they stay in the source, reported as blocked"

step "row counts before"
counts

step "goarchive plan: the relation tree, copy and delete order, settings (config only, no server)"
show "$GOARCHIVE" plan -c "$CONFIG" -j "$JOB"

step "goarchive dry-run: preflight, the SQL per batch and the rows that would move (writes nothing)"
show "$GOARCHIVE" dry-run -c "$CONFIG" -j "$JOB"

step "goarchive archive: copy parent-first, verify (sha256), delete child-first, batch by batch"
show "$GOARCHIVE" archive -c "$CONFIG" -j "$JOB"

step "goarchive jobs: the tracking registry on the destination"
show "$GOARCHIVE" jobs -c "$CONFIG"

step "row counts after"
counts

customer=$(sql destination -NBe "SELECT customer_id FROM shop_archive.orders ORDER BY id LIMIT 1")
step "goarchive restore: customer $customer is back; their archived orders return to the source with every child row"
show "$GOARCHIVE" restore -c "$CONFIG" -j "$JOB" --where "customer_id = $customer"

step "row counts after the restore"
counts

step "done"
echo "The servers are still running (scripts/servers.sh status); stop them with: scripts/servers.sh stop"
