#!/usr/bin/env bash
# The performance benchmark of issue 5: goarchive against pt-archiver and against the no-safety floor, on its
# own source and destination servers with production durability (innodb_flush_log_at_trx_commit=1,
# sync_binlog=1, binlog ROW), every run on identical fresh data and verified (row counts and content checksums
# on both sides against the pristine data).
#
#   scripts/bench.sh            full run (1,000,000 events, 200,000 orders, 100,000 employees, 500,000 rows of
#                               each key table, scaling at 250,000 / 1,000,000)
#   scripts/bench.sh --quick    small sizes, for CI (a few minutes)
#
# Scenarios: 1 single table (goarchive sha256, pt-archiver fastest and plain), 2 FK tree (goarchive, pt-archiver
# once per table child-first), 3 the floor (one streamed export, LOAD DATA LOCAL, DELETE in 50,000-id chunks) for
# the single table and both trees, 4 scaling (goarchive at N and 4N: wall time and peak RSS), 5 the employees tree
# (composite child keys with DATE columns; pt-archiver per table child-first, children selected by a subquery on
# employees), 6 a CHAR(36) UUID primary key, 7 a composite (tenant_id, id) root key, 8 a composite (id, DATE) key
# into an empty archive table, 9 the same rows into an archive that already holds 10 times as many (the time per
# row must not grow with the archive: issue 34), 10 purge of a log table (AUTO_INCREMENT key, DATETIME `where`)
# against pt-archiver --purge --bulk-delete, 11 restore of the shop tree (archived first, untimed): goarchive restore
# --where 1=1 against pt-archiver the other way (per table, parents first, bulk), and against scenario 2's archive
# time, 12 an events table in 24 monthly RANGE COLUMNS(created) partitions and a MAXVALUE one, keyed by (id, created),
# its older half (whole partitions) archived: goarchive purge and archive (partition path, `partitions` at its default
# "auto") against pt-archiver --purge --bulk-delete and pt-archiver bulk, goarchive's row path on the same table
# (`partitions = "off"`) against pt-archiver bulk, the source's binlog bytes per archived row of each, and the
# application's waits measured by a probe (scripts/bench_probe.py, one single-row statement every 5 ms, each waits
# as long as the server makes it): during goarchive's detaches, without and with a transaction that holds a row of
# the table for BENCH_HOLD seconds; and its UPDATEs of rows near the archive's front during a row-path archive, of
# goarchive and of pt-archiver (p50 / p99 / max ms; the 2 s before each tool starts give the idle figures). A
# goarchive that does not know the `partitions` key yet takes the row path everywhere (the report says so). Each
# tool/dataset pair runs
# BENCH_REPEAT times, alternating, on fresh identical data; the table shows medians and the min-max spread, and for
# goarchive the median seconds per phase (from the run summary in the registry's runs.summary). Every row also
# shows the machine's busy CPU seconds during the run (/proc/stat: both servers, the tool, the kernel), and the
# report ends with what that CPU allows: no run can be shorter than its CPU work spread over every CPU, so
# goarchive's speed ratio over pt-archiver cannot exceed pt-archiver's seconds / (goarchive's CPU s / CPUs). It
# also splits that CPU between the source server, the destination server (each mariadbd's own /proc/PID/stat) and
# the rest (the tool and the kernel), and gives the ceiling goarchive's server CPU alone allows.
#
# Exits 1 when a run fails or its result does not verify; the performance targets are informative only.
# Environment:
#   BENCH_DIR=/tmp/goarchive-bench   server data, configs, logs (wiped at start, and at the end unless BENCH_KEEP=1)
#   BENCH_SOURCE_PORT=24306 BENCH_REPLICA_PORT=24307 BENCH_DEST_PORT=24308
#   BENCH_EVENTS, BENCH_ORDERS, BENCH_EMPLOYEES, BENCH_KEY_ROWS, BENCH_SCALE_N, BENCH_DATED, BENCH_LOGS, BENCH_PARTS
#                                    sizes (defaults by mode; scenario 9's archive holds 10 x BENCH_DATED / 2;
#                                    BENCH_PARTS: scenario 12's partitioned table, 2,000,000 rows, quick 60,000)
#   BENCH_HOLD=5                     seconds scenario 12's long transaction holds its row of the table
#   BENCH_REPEAT=3                   runs of every tool/dataset pair (pt-archiver plain runs once)
#   BENCH_TIMEOUT=seconds            per run (default 3600, quick 300)
#   BENCH_KEEP=1                     leave the servers running and their data in place
#   BENCH_ONLY="2 6"                 run only these scenarios (1, 2, 4 to 12 above; 3, the floors, runs with
#                                    1, 2 and 5); targets of scenarios not run print SKIP
#   BENCH_BIN=path                   measure this goarchive binary instead of building build-release (A/B runs)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

QUICK=0
for arg; do
  case $arg in
    --quick) QUICK=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "bench.sh: unknown argument $arg (use --quick or --help)" >&2
      exit 2
      ;;
  esac
done

if ((QUICK)); then
  N_EVENTS=${BENCH_EVENTS:-20000} N_ORDERS=${BENCH_ORDERS:-4000} N_SCALE=${BENCH_SCALE_N:-5000}
  N_EMPLOYEES=${BENCH_EMPLOYEES:-2000} N_KEY_ROWS=${BENCH_KEY_ROWS:-10000}
  N_DATED=${BENCH_DATED:-20000} N_LOGS=${BENCH_LOGS:-20000} N_PARTS=${BENCH_PARTS:-60000}
  RUN_TIMEOUT=${BENCH_TIMEOUT:-300}
else
  N_EVENTS=${BENCH_EVENTS:-1000000} N_ORDERS=${BENCH_ORDERS:-200000} N_SCALE=${BENCH_SCALE_N:-250000}
  N_EMPLOYEES=${BENCH_EMPLOYEES:-100000} N_KEY_ROWS=${BENCH_KEY_ROWS:-500000}
  N_DATED=${BENCH_DATED:-240000} N_LOGS=${BENCH_LOGS:-344000} N_PARTS=${BENCH_PARTS:-2000000}
  RUN_TIMEOUT=${BENCH_TIMEOUT:-3600}
fi
REPEAT=${BENCH_REPEAT:-3}
HOLD=${BENCH_HOLD:-5}
ONLY=${BENCH_ONLY:-}
for n in $ONLY; do
  [[ $n =~ ^([124-9]|1[012])$ ]] || {
    echo "bench.sh: BENCH_ONLY takes scenario numbers 1, 2 and 4 to 12 (e.g. BENCH_ONLY=\"2 6\"; the floors, 3, run with 1, 2 and 5), not $n" >&2
    exit 2
  }
done
if [ -n "${BENCH_BIN:-}" ] && [ ! -x "$BENCH_BIN" ]; then
  echo "bench.sh: BENCH_BIN=$BENCH_BIN is not an executable file; build it or unset BENCH_BIN" >&2
  exit 2
fi
# want N: scenario N runs (every one when BENCH_ONLY is empty; the floors, 3, go with the scenario they price).
want() {
  [ -z "$ONLY" ] && return 0
  local n
  for n in $ONLY; do [ "$n" = "$1" ] && return 0; done
  return 1
}
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: BENCH_REPEAT must be a positive integer" >&2; exit 2; }
[[ $HOLD =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: BENCH_HOLD must be a positive number of seconds" >&2; exit 2; }
if [[ ! $N_PARTS =~ ^[1-9][0-9]*$ ]] || ((N_PARTS < 1000)); then
  echo "bench.sh: BENCH_PARTS must be a whole number of at least 1000" >&2
  exit 2
fi
readonly QUICK N_EVENTS N_ORDERS N_EMPLOYEES N_KEY_ROWS N_SCALE N_DATED N_LOGS N_PARTS RUN_TIMEOUT REPEAT HOLD
readonly CHUNK=50000 # ids per DELETE statement of the floor
readonly BATCH=1000  # goarchive batch_size, pt-archiver --limit

# Our own servers: never the default ports or directory that the tests and other sessions use.
export GOARCHIVE_TEST_DIR=${BENCH_DIR:-/tmp/goarchive-bench}
export GA_SOURCE_PORT=${BENCH_SOURCE_PORT:-24306}
export GA_REPLICA_PORT=${BENCH_REPLICA_PORT:-24307}
export GA_DEST_PORT=${BENCH_DEST_PORT:-24308}
case " $GA_SOURCE_PORT $GA_REPLICA_PORT $GA_DEST_PORT " in
  *" 23306 "* | *" 23307 "* | *" 23308 "*) echo "bench.sh: refusing the default test server ports" >&2; exit 2 ;;
esac
[ "$(realpath -m -- "$GOARCHIVE_TEST_DIR")" != /tmp/goarchive-servers ] ||
  { echo "bench.sh: refusing the default test server directory" >&2; exit 2; }

SECONDS=0
log() { printf '[bench %4ds] %s\n' "$SECONDS" "$*" >&2; }
die() {
  echo "bench.sh: $*" >&2
  exit 1
}

# -- setup: packages, binary, servers ---------------------------------------------------------------------------
bash scripts/setup.sh
log "building the Release binary in build-release"
build_ok=0
[ -z "${BENCH_BIN:-}" ] || build_ok=1
for attempt in 1 2 3; do
  ((!build_ok)) || break
  if cmake -S "$ROOT" -B "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$ROOT/build-release" -j2 --target goarchive >"${TMPDIR:-/tmp}/bench-build.$$.log" 2>&1; then
    build_ok=1
    break
  fi
  log "build attempt $attempt failed; retrying in 20s"
  sleep 20
done
if ((!build_ok)); then
  tail -n 40 "${TMPDIR:-/tmp}/bench-build.$$.log" >&2
  die "cannot build goarchive (log: ${TMPDIR:-/tmp}/bench-build.$$.log)"
fi
rm -f "${TMPDIR:-/tmp}/bench-build.$$.log"
BIN=${BENCH_BIN:-$ROOT/build-release/goarchive}
command -v pt-archiver >/dev/null || die "pt-archiver is missing (scripts/setup.sh installs percona-toolkit)"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (scripts/setup.sh installs time)"

SERVERS=(source destination)
FAILED=0
finish() {
  local rc=$?
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    log "BENCH_KEEP=1: servers left running in $GOARCHIVE_TEST_DIR"
  elif ((rc == 0 && FAILED == 0)); then
    rm -rf "${WORK:-$GOARCHIVE_TEST_DIR/work}"
    bash scripts/servers.sh reset "${SERVERS[@]}" >/dev/null 2>&1 || true
  else
    bash scripts/servers.sh stop "${SERVERS[@]}" >&2 || true
    log "data and logs kept in $GOARCHIVE_TEST_DIR for inspection"
  fi
}

log "starting fresh servers in $GOARCHIVE_TEST_DIR (source :$GA_SOURCE_PORT, destination :$GA_DEST_PORT)"
bash scripts/servers.sh reset "${SERVERS[@]}" >/dev/null
trap finish EXIT
bash scripts/servers.sh start "${SERVERS[@]}" >&2
eval "$(bash scripts/servers.sh env)"
WORK=$GA_SERVERS_DIR/work
mkdir -p "$WORK"
chmod 700 "$WORK"

sock_of() { case $1 in source) echo "$GA_SOURCE_SOCKET" ;; destination) echo "$GA_DEST_SOCKET" ;; esac; }
port_of() { case $1 in source) echo "$GA_SOURCE_PORT" ;; destination) echo "$GA_DEST_PORT" ;; esac; }
# Root on SERVER's socket (administration, loading, verification): tab-separated, no headers.
sq() {
  local server=$1
  shift
  mariadb --no-defaults -S "$(sock_of "$server")" -uroot --default-character-set=utf8mb4 -NB "$@"
}
# The application account over TCP, as the tools connect (the floor's client side).
cat >"$WORK/client.cnf" <<EOF
[client]
host=127.0.0.1
user=$GA_USER
password=$GA_PASSWORD
default-character-set=utf8mb4
EOF
chmod 600 "$WORK/client.cnf"
app() {
  local server=$1
  shift
  mariadb --defaults-file="$WORK/client.cnf" -P "$(port_of "$server")" "$@"
}

# Production durability, and a buffer pool that holds the data (both dynamic).
for s in "${SERVERS[@]}"; do
  sq "$s" -e "SET GLOBAL innodb_flush_log_at_trx_commit = 1, GLOBAL sync_binlog = 1,
              GLOBAL innodb_buffer_pool_size = 1073741824"
done
for s in "${SERVERS[@]}"; do
  deadline=$((SECONDS + 120))
  # The resize runs in the background; its status is empty or "Completed ..." once done.
  until [ "$(sq "$s" -e "SELECT @@innodb_buffer_pool_size")" = 1073741824 ] &&
    [[ $(sq "$s" -e "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                     WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_RESIZE_STATUS'") =~ ^(Completed.*)?$ ]]; do
    ((SECONDS < deadline)) || die "$s: innodb_buffer_pool_size did not reach 1G"
    sleep 0.5
  done
  got=$(sq "$s" -e "SELECT CONCAT_WS(' ', @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@log_bin, @@binlog_format,
                               @@local_infile, @@innodb_buffer_pool_size)")
  [ "$got" = "1 1 ON ROW ON 1073741824" ] ||
    die "$s does not run with production durability: flush_log_at_trx_commit, sync_binlog, log_bin, binlog_format, local_infile, buffer pool = $got"
  log "$s: innodb_flush_log_at_trx_commit=1 sync_binlog=1 log_bin=ON binlog_format=ROW buffer_pool=1G"
done
DIRTY_PCT=$(sq source -e "SELECT @@innodb_max_dirty_pages_pct")

sq source -e "CREATE DATABASE bench; CREATE DATABASE bench_pristine"
sq destination -e "CREATE DATABASE bench_archive"

# -- datasets ---------------------------------------------------------------------------------------------------
# A dataset names its tables (copy order) and, per table, the join and condition that select its archived rows
# (alias t for the table, o for orders); @DB@ is the database the statement runs against.
declare -A JOIN COND TABLES MID PTWHERE SCHEMA FKS
EVENT_COND="t.created_at < '@MID@'"

# Pristine events table bench_pristine.events_ROWS; MID[events_ROWS] = created_at of the first row kept.
make_events() {
  local rows=$1 ds=events_$1
  [ -z "${MID[$ds]:-}" ] || return 0
  log "generating $rows events"
  {
    echo "SET SESSION sql_log_bin = 0; USE bench_pristine; SET @rows = $rows;"
    cat bench/events.sql bench/events_data.sql
    echo "RENAME TABLE events TO $ds; ANALYZE TABLE $ds;"
  } | sq source >/dev/null
  MID[$ds]=$(sq source -e "SELECT created_at FROM bench_pristine.$ds WHERE id = $((rows / 2 + 1))")
  TABLES[$ds]=events
  JOIN[$ds.events]=""
  COND[$ds.events]=${EVENT_COND//@MID@/${MID[$ds]}}
  expectations "$ds"
}

make_shop() {
  local ds=shop
  log "generating $N_ORDERS orders and their children"
  {
    echo "SET SESSION sql_log_bin = 0; USE bench_pristine; SET @orders = $N_ORDERS;"
    cat bench/shop_schema.sql bench/shop_data.sql
    echo "ANALYZE TABLE orders, order_items, payments, shipments, shipment_items;"
  } | sq source >/dev/null
  MID[$ds]=$(sq source -e "SELECT created_at FROM bench_pristine.orders WHERE id = $((N_ORDERS / 2 + 1))")
  TABLES[$ds]="orders order_items payments shipments shipment_items"
  local old="o.created_at < '${MID[$ds]}'"
  JOIN[$ds.orders]="" COND[$ds.orders]="t.created_at < '${MID[$ds]}'"
  JOIN[$ds.order_items]="JOIN @DB@.orders o ON o.id = t.order_id" COND[$ds.order_items]=$old
  JOIN[$ds.payments]="JOIN @DB@.orders o ON o.id = t.order_id" COND[$ds.payments]=$old
  JOIN[$ds.shipments]="JOIN @DB@.orders o ON o.id = t.order_id" COND[$ds.shipments]=$old
  JOIN[$ds.shipment_items]="JOIN @DB@.shipments s ON s.id = t.shipment_id JOIN @DB@.orders o ON o.id = s.order_id"
  COND[$ds.shipment_items]=$old
  expectations "$ds"
}

make_employees() {
  local ds=employees t
  log "generating $N_EMPLOYEES employees and their children"
  {
    echo "SET SESSION sql_log_bin = 0; USE bench_pristine; SET @employees = $N_EMPLOYEES;"
    cat bench/employees_schema.sql bench/employees_departments.sql bench/employees_data.sql
    echo "ANALYZE TABLE employees, salaries, titles, dept_emp, dept_manager, departments;"
  } | sq source >/dev/null
  MID[$ds]=$(sq source -e "SELECT hire_date FROM bench_pristine.employees WHERE emp_no = $((10000 + N_EMPLOYEES / 2 + 1))")
  TABLES[$ds]="employees salaries titles dept_emp dept_manager"
  SCHEMA[$ds]=bench/employees_schema.sql FKS[$ds]=bench/employees_fks.sql
  JOIN[$ds.employees]="" COND[$ds.employees]="t.hire_date < '${MID[$ds]}'"
  for t in salaries titles dept_emp dept_manager; do
    JOIN[$ds.$t]="JOIN @DB@.employees o ON o.emp_no = t.emp_no" COND[$ds.$t]="o.hire_date < '${MID[$ds]}'"
    # As pt-archiver users write it: the children of the archived employees by a subquery.
    PTWHERE[$ds.$t]="emp_no IN (SELECT o.emp_no FROM bench.employees o WHERE ${COND[$ds.$t]})"
  done
  expectations "$ds"
}

# The single tables with a UUID key (uuid_items) and a composite root key (tenant_items): datasets uuid, tenant.
make_keys() {
  local ds t
  log "generating $N_KEY_ROWS rows of uuid_items and of tenant_items"
  {
    echo "SET SESSION sql_log_bin = 0; USE bench_pristine; SET @rows = $N_KEY_ROWS;"
    cat bench/keys_schema.sql bench/keys_data.sql
    echo "ANALYZE TABLE uuid_items, tenant_items;"
  } | sq source >/dev/null
  for ds in uuid tenant; do
    t=${ds}_items
    MID[$ds]=$(sq source -e "SELECT created_at FROM bench_pristine.$t ORDER BY created_at LIMIT 1 OFFSET $((N_KEY_ROWS / 2))")
    TABLES[$ds]=$t SCHEMA[$ds]=bench/keys_schema.sql
    JOIN[$ds.$t]="" COND[$ds.$t]="t.created_at < '${MID[$ds]}'"
    expectations "$ds"
  done
}

# The composite (id, DATE) key table: dataset dated (an empty archive) and dated10 (the same rows into an archive
# that already holds PREFILL[dated10] older rows, generated on the destination at every reset).
declare -A PREFILL
make_dated() {
  local ds
  log "generating $N_DATED dated events"
  {
    echo "SET SESSION sql_log_bin = 0; USE bench_pristine; SET @rows = $N_DATED;"
    cat bench/dated_schema.sql bench/dated_data.sql
    echo "ANALYZE TABLE dated_events;"
  } | sq source >/dev/null
  for ds in dated dated10; do
    MID[$ds]=$(sq source -e "SELECT created FROM bench_pristine.dated_events WHERE id = $((N_DATED / 2 + 1))")
    TABLES[$ds]=dated_events SCHEMA[$ds]=bench/dated_schema.sql
    JOIN[$ds.dated_events]="" COND[$ds.dated_events]="t.created < '${MID[$ds]}'"
    expectations "$ds"
  done
  PREFILL[dated10]=$((10 * ARCH_ROWS[dated10]))
}

# The partitioned events table (scenario 12): dataset parts, its older half (2023, whole partitions) archived.
make_parts() {
  local ds=parts
  log "generating $N_PARTS partitioned events"
  {
    echo "SET SESSION sql_log_bin = 0; USE bench_pristine; SET @rows = $N_PARTS;"
    cat bench/parts_schema.sql bench/parts_data.sql
    echo "ANALYZE TABLE part_events;"
  } | sq source >/dev/null
  MID[$ds]=2024-01-01
  TABLES[$ds]=part_events SCHEMA[$ds]=bench/parts_schema.sql
  JOIN[$ds.part_events]="" COND[$ds.part_events]="t.created < '${MID[$ds]}'"
  expectations "$ds"
}

pristine_table() { case $1 in events_*) echo "$1" ;; *) echo "$2" ;; esac; }
join_for() { local j=${JOIN[$1.$2]}; echo "${j//@DB@/$3}"; }

# Content checksum of a row: count and the sum of a 60-bit slice of MD5 over every column (NULL-safe),
# order-independent, so a table's (count, sum) pair is compared across servers.
declare -A HASH COLS NULLABLE
columns_of() {
  local ds=$1 t=$2 c n cols="" nullable="" hash=""
  while IFS=$'\t' read -r c n; do
    cols+="${cols:+ }$c"
    [ "$n" = YES ] && nullable+=" $c "
    hash+="${hash:+,}IFNULL(CONCAT('v',t.\`$c\`),'N')"
  done < <(sq source -e "SELECT COLUMN_NAME, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA =
                         'bench_pristine' AND TABLE_NAME = '$(pristine_table "$ds" "$t")' ORDER BY ORDINAL_POSITION")
  COLS[$ds.$t]=$cols
  NULLABLE[$ds.$t]=$nullable
  HASH[$ds.$t]="CAST(CONV(LEFT(MD5(CONCAT_WS('|',$hash)),15),16,10) AS UNSIGNED)"
}

declare -A EXP_ARCH EXP_REST ARCH_ROWS
expectations() {
  local ds=$1 t pt lj flag total=0 r
  for t in ${TABLES[$ds]}; do
    columns_of "$ds" "$t"
    pt=$(pristine_table "$ds" "$t")
    lj=$(join_for "$ds" "$t" bench_pristine)
    flag="IFNULL(${COND[$ds.$t]}, 0)"
    r=$(sq source -e "SELECT COUNT(IF($flag, 1, NULL)), IFNULL(SUM(IF($flag, ${HASH[$ds.$t]}, 0)), 0),
                             COUNT(IF($flag, NULL, 1)), IFNULL(SUM(IF($flag, 0, ${HASH[$ds.$t]})), 0)
                      FROM bench_pristine.\`$pt\` t ${lj//JOIN/LEFT JOIN}")
    read -r a1 a2 r1 r2 <<<"$r"
    EXP_ARCH[$ds.$t]="$a1 $a2"
    EXP_REST[$ds.$t]="$r1 $r2"
    total=$((total + a1))
  done
  ARCH_ROWS[$ds]=$total
}

# Fresh working copies: the source tables from the pristine data, empty destination tables, no registry.
reset_dataset() {
  local ds=$1 t schema=${SCHEMA[$1]:-}
  case $ds in shop) schema=bench/shop_schema.sql ;; events_*) schema=bench/events.sql ;; esac
  {
    echo "SET SESSION sql_log_bin = 0, SESSION foreign_key_checks = 0;"
    echo "DROP DATABASE IF EXISTS bench; CREATE DATABASE bench; USE bench;" # no table of an earlier run survives
    cat "$schema"
    if [ "$ds" = employees ]; then
      cat bench/employees_departments.sql
      echo "INSERT INTO departments SELECT * FROM bench_pristine.departments;"
    fi
    for t in ${TABLES[$ds]}; do echo "INSERT INTO $t SELECT * FROM bench_pristine.\`$(pristine_table "$ds" "$t")\`;"; done
    case $ds in shop) cat bench/shop_fks.sql ;; *) [ -z "${FKS[$ds]:-}" ] || cat "${FKS[$ds]}" ;; esac
    echo "ANALYZE TABLE ${TABLES[$ds]// /, };"
  } | sq source >/dev/null
  {
    echo "SET SESSION sql_log_bin = 0;"
    echo "DROP DATABASE IF EXISTS bench_archive; CREATE DATABASE bench_archive; USE bench_archive;"
    cat "$schema"
    if [ -n "${PREFILL[$ds]:-}" ]; then
      echo "SET @prefill = ${PREFILL[$ds]};"
      cat bench/dated_prefill.sql
    fi
    echo "DROP DATABASE IF EXISTS goarchive_bench;"
  } | sq destination >/dev/null
  settle
}

# Every run starts from the same server state: dirty pages of the reload flushed, old binlogs gone.
settle() {
  local s dirty busy deadline=$((SECONDS + 120))
  for s in "${SERVERS[@]}"; do
    sq "$s" -e "SET GLOBAL innodb_max_dirty_pages_pct = 0; FLUSH BINARY LOGS;
                PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY" >/dev/null
  done
  while :; do
    busy=0
    for s in "${SERVERS[@]}"; do
      dirty=$(sq "$s" -e "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                          WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY'")
      ((dirty < 100)) || busy=1
    done
    ((busy && SECONDS < deadline)) || break
    sleep 0.5
  done
  for s in "${SERVERS[@]}"; do sq "$s" -e "SET GLOBAL innodb_max_dirty_pages_pct = $DIRTY_PCT"; done
}

# Compares every table of DS on both sides with the pristine data: the destination holds exactly the
# archived rows, the source exactly the rest.
# A purge run (PURGING=1) leaves the destination empty; a prefilled archive (PREFILL) keeps its older rows, which
# are counted apart (ids from 1,000,000,000).
verify() {
  local ds=$1 label=$2 t src dst ok=0 want old="" kept
  for t in ${TABLES[$ds]}; do
    want=${EXP_ARCH[$ds.$t]}
    ((!${PURGING:-0})) || want="0 0"
    [ -z "${PREFILL[$ds]:-}" ] || old="WHERE t.id < 1000000000"
    src=$(sq source -e "SELECT COUNT(*), IFNULL(SUM(${HASH[$ds.$t]}), 0) FROM bench.\`$t\` t" | tr '\t' ' ')
    dst=$(sq destination -e "SELECT COUNT(*), IFNULL(SUM(${HASH[$ds.$t]}), 0) FROM bench_archive.\`$t\` t $old" | tr '\t' ' ')
    if [ "$dst" != "$want" ]; then
      log "VERIFY FAILED ($label) destination $t: count checksum = $dst, expected $want"
      ok=1
    fi
    if [ -n "${PREFILL[$ds]:-}" ]; then
      kept=$(sq destination -e "SELECT COUNT(*) FROM bench_archive.\`$t\` WHERE id >= 1000000000")
      if [ "$kept" != "${PREFILL[$ds]}" ]; then
        log "VERIFY FAILED ($label) destination $t: $kept older rows, expected ${PREFILL[$ds]}"
        ok=1
      fi
    fi
    if [ "$src" != "${EXP_REST[$ds.$t]}" ]; then
      log "VERIFY FAILED ($label) source $t: count checksum = $src, expected ${EXP_REST[$ds.$t]}"
      ok=1
    fi
  done
  # No side table of the partition path left behind: the source database holds the partitioned table and the row
  # path's commit marks (goarchive_commits) alone.
  if [ "$ds" = parts ]; then
    src=$(sq source -e "SELECT GROUP_CONCAT(TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench'
                        AND TABLE_NAME NOT IN ('part_events', 'goarchive_commits')")
    if [ "$src" != NULL ]; then
      log "VERIFY FAILED ($label) the source database holds tables besides part_events: $src"
      ok=1
    fi
  fi
  ((ok == 0)) && log "verified ($label): ${ARCH_ROWS[$ds]} rows on the destination, the rest on the source, checksums match"
  return "$ok"
}

# -- the runs ---------------------------------------------------------------------------------------------------
now() { date +%s.%N; }
# Busy CPU time of the whole machine so far, in clock ticks (/proc/stat: every state but idle and iowait): both
# servers, the tool, the kernel. The machine is otherwise quiet, so a run's difference is the CPU work it caused.
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
TICKS=$(getconf CLK_TCK)
# CPU ticks (user + system, every thread) the SERVER's mariadbd has used so far: its share of a run's busy CPU.
# The rest of the busy CPU is the tool's and the kernel's work beside the servers (network, fsync, softirqs).
server_ticks() { awk '{ print $14 + $15 }' "/proc/$(cat "$GA_SERVERS_DIR/$1/mariadbd.pid")/stat"; }
# cpu_mark: the busy CPU and both servers' CPU now, as "busy source destination" ticks.
cpu_mark() { echo "$(busy) $(server_ticks source) $(server_ticks destination)"; }
# cpu_split START END: "busy source destination" CPU seconds between two cpu_marks.
cpu_split() {
  awk -v a="$1" -v b="$2" -v t="$TICKS" 'BEGIN { split(a, x, " "); split(b, y, " ")
    printf "%.2f %.2f %.2f", (y[1] - x[1]) / t, (y[2] - x[2]) / t, (y[3] - x[3]) / t }'
}
# Per result key: its scenario|tool|dataset, the seconds and peak RSS of every verified run (space-separated), the
# goarchive phase seconds per run, and the first failure.
KEYS=()
declare -A META SECS_ALL RSS_ALL CPU_ALL SRC_ALL DST_ALL PH_ALL STATUS SECS RSS CPU SRC DST BINLOG_ALL
# Bytes in the source's binary logs (settle leaves one fresh file): a run's difference is the binlog it caused.
binlog_bytes() { sq source -e "SHOW BINARY LOGS" | awk '{ s += $2 } END { printf "%.0f", s }'; }
BINLOG0=0 # binlog_bytes before the run record is called for

# record KEY SCENARIO TOOL DS SECONDS RSS_MB RC LOGFILE CPU_SPLIT: verifies and records one run (CPU_SPLIT:
# cpu_split's "busy source destination" seconds).
record() {
  local key=$1 scenario=$2 tool=$3 ds=$4 secs=$5 rss=$6 rc=$7 logf=$8 cpu src dst status=ok
  read -r cpu src dst <<<"$9"
  if [ -z "${META[$key]:-}" ]; then
    KEYS+=("$key")
    META[$key]="$scenario|$tool|$ds"
  fi
  if ((rc != 0)); then
    status="FAILED (exit $rc)"
    log "$tool failed with exit $rc; tail of $logf:"
    tail -n 15 "$logf" >&2 || true
  fi
  if ((${RESTORING:-0})); then
    verify_back "$tool" || status="VERIFY FAILED"
  else
    verify "$ds" "$tool" || status="VERIFY FAILED"
  fi
  if [ "$status" = ok ]; then
    local binlog
    binlog=$(($(binlog_bytes) - BINLOG0))
    BINLOG_ALL[$key]+=" $binlog"
    SECS_ALL[$key]+=" $secs"
    RSS_ALL[$key]+=" $rss"
    CPU_ALL[$key]+=" $cpu"
    SRC_ALL[$key]+=" $src"
    DST_ALL[$key]+=" $dst"
    log "$tool: ${ARCH_ROWS[$ds]} rows in ${secs}s, $binlog bytes of source binlog"
  else
    STATUS[$key]=${STATUS[$key]:-$status}
    FAILED=1
  fi
}

# The phase seconds of the last goarchive run (runs.summary): select copy verify delete, appended for KEY.
record_phases() {
  local key=$1 p
  p=$(sq destination -e "SELECT summary FROM goarchive_bench.runs ORDER BY id DESC LIMIT 1" 2>/dev/null |
    jq -r '.phase_seconds | "\(.select) \(.copy) \(.verify) \(.delete) \(.waiting_for_source)"' 2>/dev/null) || p=""
  read -r a b c d w <<<"$p"
  PH_ALL[$key.select]+=" ${a:-}" PH_ALL[$key.copy]+=" ${b:-}" PH_ALL[$key.verify]+=" ${c:-}"
  PH_ALL[$key.delete]+=" ${d:-}" PH_ALL[$key.wait]+=" ${w:-}"
  # The partition path's part of the run (scenario 12): partitions taken whole and left whole, DDL seconds.
  p=$(sq destination -e "SELECT summary FROM goarchive_bench.runs ORDER BY id DESC LIMIT 1" 2>/dev/null |
    jq -r 'if .partitions then "\(.partitions.taken_whole) \(.partitions.left_whole)" else "0 0" end' 2>/dev/null) || p=""
  PARTS_TAKEN[$key]=$p
}
declare -A PARTS_TAKEN

# median / min / max of space-separated numbers ("" when there are none)
stat_of() { # which values
  echo "$2" | tr ' ' '\n' | { grep -E '^[0-9.]+$' || true; } | sort -g | awk -v w="$1" '{ v[NR] = $1 } END {
    if (NR == 0) exit
    if (w == "min") printf "%.2f", v[1]; else if (w == "max") printf "%.2f", v[NR]
    else if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# goarchive COMMAND (default archive) on DS with its config template; peak RSS from /usr/bin/time -v.
# ga_config DS TEMPLATE CFG: the template with the servers and DS's `where` filled in, and JOB_EXTRA (a line of the
# job's section, the template's last) appended.
ga_config() {
  sed -e "s/@SOURCE_PORT@/$GA_SOURCE_PORT/; s/@DEST_PORT@/$GA_DEST_PORT/" \
    -e "s/@WHERE@/${COND[$1.$(first_table "$1")]#t.}/" "bench/$2" >"$3"
  [ -z "${JOB_EXTRA:-}" ] || echo "$JOB_EXTRA" >>"$3"
}
run_goarchive() {
  local key=$1 scenario=$2 tool=$3 ds=$4 template=$5 job=$6 command=${7:-archive} cfg="$WORK/$1.toml" logf="$WORK/$1.log"
  local t0 t1 b0 b1 rc=0 rss
  ga_config "$ds" "$template" "$cfg"
  reset_dataset "$ds"
  log "run: $scenario: $tool"
  BINLOG0=$(binlog_bytes)
  t0=$(now) b0=$(cpu_mark)
  timeout "$RUN_TIMEOUT" /usr/bin/time -v -o "$WORK/$key.time" "$BIN" "$command" -c "$cfg" -j "$job" --no-progress \
    >"$logf" 2>&1 || rc=$?
  t1=$(now) b1=$(cpu_mark)
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$WORK/$key.time" 2>/dev/null || true)
  record "$key" "$scenario" "$tool" "$ds" "$(secs "$t0" "$t1")" "${rss:--}" "$rc" "$logf" "$(cpu_split "$b0" "$b1")"
  record_phases "$key"
}
first_table() { echo "${TABLES[$1]%% *}"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

dsn() { # server db table
  echo "h=127.0.0.1,P=$(port_of "$1"),u=$GA_USER,p=$GA_PASSWORD,D=$2,t=$3,L=1"
}
# pt-archiver for TABLE of DS with the where clause on the working source database; MODE fast|plain.
# --charset utf8: pt-archiver 3.2 cannot write its bulk-insert file as "utf8mb4" (no such Perl encoding), and
# without a charset it writes Latin-1 bytes for decoded text. utf8 (utf8mb3) carries the data's non-ASCII text
# (all in the BMP) unchanged; --no-check-charset because the tables are utf8mb4.
pt_archiver() {
  local ds=$1 t=$2 mode=$3 where
  local j
  j=$(join_for "$ds" "$t" bench)
  if [ -n "${PTWHERE[$ds.$t]:-}" ]; then
    where=${PTWHERE[$ds.$t]}
  elif [ -z "$j" ]; then
    where=${COND[$ds.$t]//t./}
  elif [ "$t" = shipment_items ]; then
    where="shipment_id IN (SELECT s.id FROM bench.shipments s JOIN bench.orders o ON o.id = s.order_id WHERE ${COND[$ds.$t]})"
  else
    where="order_id IN (SELECT o.id FROM bench.orders o WHERE ${COND[$ds.$t]})"
  fi
  local args=(--source "$(dsn source bench "$t")" --where "$where"
    --limit "$BATCH" --commit-each --charset utf8 --no-check-charset --no-safe-auto-increment --why-quit)
  case $mode in
    fast) args+=(--dest "$(dsn destination bench_archive "$t")" --bulk-insert --bulk-delete) ;;
    purge) args+=(--purge --bulk-delete) ;; # pt-archiver's most common use: purging logs
    *) args+=(--dest "$(dsn destination bench_archive "$t")") ;;
  esac
  echo "+ pt-archiver ${args[*]//p=$GA_PASSWORD/p=...}"
  # Exits non-zero only on errors; a table left unfinished is caught by the verification.
  timeout "$RUN_TIMEOUT" pt-archiver "${args[@]}"
}

run_pt() {
  local key=$1 scenario=$2 tool=$3 ds=$4 mode=$5 logf="$WORK/$1.log" t0 t1 b0 b1 rc=0 t tables
  reset_dataset "$ds"
  tables=$(echo "${TABLES[$ds]}" | tr ' ' '\n' | tac | tr '\n' ' ') # child-first
  log "run: $scenario: $tool"
  BINLOG0=$(binlog_bytes)
  t0=$(now) b0=$(cpu_mark)
  (
    for t in $tables; do pt_archiver "$ds" "$t" "$mode" || exit $?; done
  ) >"$logf" 2>&1 || rc=$?
  t1=$(now) b1=$(cpu_mark)
  record "$key" "$scenario" "$tool" "$ds" "$(secs "$t0" "$t1")" - "$rc" "$logf" "$(cpu_split "$b0" "$b1")"
}

# The floor: per table one streamed export of the archived rows to a file (mariadb --batch --quick: the
# client's escaping is LOAD DATA's; nullable columns travel with an IS NULL flag because --batch prints NULL as
# the word NULL), LOAD DATA LOCAL INFILE on the destination, then DELETE child-first in CHUNK-id ranges.
floor_moves() {
  local ds=$1 t c sel load set j min max lo key
  for t in ${TABLES[$ds]}; do
    sel="" load="" set=""
    for c in ${COLS[$ds.$t]}; do
      if [[ ${NULLABLE[$ds.$t]} == *" $c "* ]]; then
        sel+="${sel:+, }t.\`$c\` IS NULL, t.\`$c\`"
        load+="${load:+, }@n_$c, @v_$c"
        set+="${set:+, }\`$c\` = IF(@n_$c, NULL, @v_$c)"
      else
        sel+="${sel:+, }t.\`$c\`"
        load+="${load:+, }\`$c\`"
      fi
    done
    j=$(join_for "$ds" "$t" bench)
    app source --batch --quick --skip-column-names \
      -e "SELECT $sel FROM bench.\`$t\` t $j WHERE ${COND[$ds.$t]}" >"$WORK/floor.$t.tsv" || return
    app destination --local-infile=1 -e "LOAD DATA LOCAL INFILE '$WORK/floor.$t.tsv' INTO TABLE bench_archive.\`$t\`
      CHARACTER SET utf8mb4 ($load) ${set:+SET $set}" || return
  done
  for t in $(echo "${TABLES[$ds]}" | tr ' ' '\n' | tac); do
    read -r min max < <(awk -F'\t' 'NR == 1 { lo = $1; hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 }
                                   END { print lo + 0, hi + 0 }' "$WORK/floor.$t.tsv")
    ((max > 0)) || continue
    j=$(join_for "$ds" "$t" bench)
    key=${COLS[$ds.$t]%% *} # the first column: an integer id or emp_no in every floor dataset
    for ((lo = min; lo <= max; lo += CHUNK)); do
      echo "DELETE t FROM bench.\`$t\` t $j WHERE t.\`$key\` BETWEEN $lo AND $((lo + CHUNK - 1)) AND ${COND[$ds.$t]};"
    done | app source -D bench || return
  done
  rm -f "$WORK"/floor.*.tsv
}

run_floor() {
  local key=$1 scenario=$2 tool=$3 ds=$4 logf="$WORK/$1.log" t0 t1 b0 b1 rc=0
  reset_dataset "$ds"
  log "run: $scenario: $tool"
  t0=$(now) b0=$(cpu_mark)
  floor_moves "$ds" >"$logf" 2>&1 || rc=$?
  t1=$(now) b1=$(cpu_mark)
  record "$key" "$scenario" "$tool" "$ds" "$(secs "$t0" "$t1")" - "$rc" "$logf" "$(cpu_split "$b0" "$b1")"
}

# Scenario 11, restore (issue 33): the shop tree archived by goarchive first (untimed, verified), then brought back
# whole: goarchive restore --where 1=1, or pt-archiver the other way (archive -> source, once per table, parents
# first, bulk). Verified: the source holds every pristine row again, the archive none.
prepare_restore() { # key
  local cfg="$WORK/$1.prep.toml"
  sed -e "s/@SOURCE_PORT@/$GA_SOURCE_PORT/; s/@DEST_PORT@/$GA_DEST_PORT/" \
    -e "s/@WHERE@/${COND[shop.orders]#t.}/" bench/shop.toml >"$cfg"
  reset_dataset shop
  "$BIN" archive -c "$cfg" -j bench_orders --no-progress >"$WORK/$1.prep.log" 2>&1 ||
    die "$1: the archive run before the restore failed (see $WORK/$1.prep.log)"
  verify shop "$1: archived before the restore" || die "$1: the archive before the restore does not verify"
  settle
}
verify_back() { # label
  local t src dst want ok=0
  for t in ${TABLES[shop]}; do
    # The whole pristine table (its checksum sum is too large for shell arithmetic: the server adds).
    want=$(sq source -e "SELECT COUNT(*), IFNULL(SUM(${HASH[shop.$t]}), 0) FROM bench_pristine.\`$t\` t" | tr '\t' ' ')
    src=$(sq source -e "SELECT COUNT(*), IFNULL(SUM(${HASH[shop.$t]}), 0) FROM bench.\`$t\` t" | tr '\t' ' ')
    dst=$(sq destination -e "SELECT COUNT(*) FROM bench_archive.\`$t\`")
    if [ "$src" != "$want" ] || [ "$dst" != 0 ]; then
      log "VERIFY FAILED ($1) $t: source count checksum = $src (expected $want), archive rows = $dst (expected 0)"
      ok=1
    fi
  done
  ((ok == 0)) && log "verified ($1): every pristine row back in the source, checksums match, the archive empty"
  return "$ok"
}
run_restore_ga() { # key scenario
  local key=$1 cfg="$WORK/$1.prep.toml" logf="$WORK/$1.log" t0 t1 b0 b1 rc=0 rss
  prepare_restore "$key"
  log "run: $2: goarchive restore"
  t0=$(now) b0=$(cpu_mark)
  timeout "$RUN_TIMEOUT" /usr/bin/time -v -o "$WORK/$key.time" "$BIN" restore -c "$cfg" -j bench_orders --where 1=1 \
    --no-progress >"$logf" 2>&1 || rc=$?
  t1=$(now) b1=$(cpu_mark)
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$WORK/$key.time" 2>/dev/null || true)
  RESTORING=1 record "$key" "$2" "goarchive restore (sha256)" shop "$(secs "$t0" "$t1")" "${rss:--}" "$rc" "$logf" \
    "$(cpu_split "$b0" "$b1")"
}
run_restore_pt() { # key scenario
  local key=$1 logf="$WORK/$1.log" t0 t1 b0 b1 rc=0 t
  prepare_restore "$key"
  log "run: $2: pt-archiver the other way"
  t0=$(now) b0=$(cpu_mark)
  (
    for t in ${TABLES[shop]}; do # parents first: the source's foreign keys need the parent back first
      echo "+ pt-archiver archive -> source: $t"
      timeout "$RUN_TIMEOUT" pt-archiver --source "$(dsn destination bench_archive "$t")" --where 1=1 \
        --dest "$(dsn source bench "$t")" --bulk-insert --bulk-delete --limit "$BATCH" --commit-each --charset utf8 \
        --no-check-charset --no-safe-auto-increment --why-quit || exit $?
    done
  ) >"$logf" 2>&1 || rc=$?
  t1=$(now) b1=$(cpu_mark)
  RESTORING=1 record "$key" "$2" "pt-archiver x5 parents-first (bulk)" shop "$(secs "$t0" "$t1")" - "$rc" "$logf" \
    "$(cpu_split "$b0" "$b1")"
}

# Scenario 12's application waits. probe_run KEY LABEL MODE TOOL [HOLD]: on fresh data, the probe
# (scripts/bench_probe.py, MODE kept: INSERTs and UPDATEs in the kept half; front: UPDATEs near the archive's
# front) runs 2 s alone (the idle figures), then beside TOOL (ga-auto, ga-off: goarchive archive with `partitions` at
# its default or "off"; pt: pt-archiver bulk); with HOLD, a transaction of the application updates the table's last
# row and holds it HOLD seconds, from just before the tool starts. A goarchive run that left rows behind (a detach
# given up while the transaction held the table) is run again, untimed, after the transaction ended; then the
# result is verified like any run. Records the probe's count, p50, p99 and max ms while the tool ran, and idle.
declare -A WAIT_ALL WAIT_META
WAIT_KEYS=()
probe_run() {
  local key=$1 label=$2 mode=$3 tool=$4 hold=${5:-} logf="$WORK/$1.log" out="$WORK/$1.probe" ready="$WORK/$1.ready"
  local cfg="$WORK/$1.toml" ppid hpid="" t_idle t0 t1 rc=0 reruns=0 left deadline ok=1 run idle
  [ -n "${WAIT_META[$key]:-}" ] || WAIT_KEYS+=("$key")
  WAIT_META[$key]=$label
  case $tool in
    ga-auto) JOB_EXTRA="" ga_config parts parts.toml "$cfg" ;;
    ga-off) ga_config parts parts.toml "$cfg" ;; # JOB_EXTRA from the caller
  esac
  reset_dataset parts
  rm -f "$out" "$ready"
  /usr/bin/python3 scripts/bench_probe.py run --port "$GA_SOURCE_PORT" --rows "$N_PARTS" --mode "$mode" \
    --out "$out" --ready "$ready" 2>"$WORK/$key.probe.err" &
  ppid=$!
  deadline=$((SECONDS + 30))
  until [ -e "$ready" ]; do
    if ! kill -0 "$ppid" 2>/dev/null || ((SECONDS >= deadline)); then
      cat "$WORK/$key.probe.err" >&2
      die "$key: the probe did not start"
    fi
    sleep 0.1
  done
  t_idle=$(now)
  sleep 2
  if [ -n "$hold" ]; then
    app source -D bench -N -e "BEGIN; UPDATE part_events SET user_id = user_id WHERE id = $N_PARTS
      AND created = '$(sq source -e "SELECT created FROM bench_pristine.part_events WHERE id = $N_PARTS")';
      SELECT SLEEP($hold); COMMIT" \
      >"$WORK/$key.hold.log" 2>&1 &
    hpid=$!
    deadline=$((SECONDS + 10))
    until [ "$(sq source -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP($hold)'")" = 1 ]; do
      ((SECONDS < deadline)) || die "$key: the long transaction did not start (see $WORK/$key.hold.log)"
      sleep 0.05
    done
  fi
  log "run: $label"
  t0=$(now)
  case $tool in
    pt) pt_archiver parts part_events fast >"$logf" 2>&1 || rc=$? ;;
    *) timeout "$RUN_TIMEOUT" "$BIN" archive -c "$cfg" -j bench_part_events --no-progress >"$logf" 2>&1 || rc=$? ;;
  esac
  t1=$(now)
  kill -TERM "$ppid" 2>/dev/null || true
  wait "$ppid" || { cat "$WORK/$key.probe.err" >&2; die "$key: the probe failed"; }
  [ -z "$hpid" ] || wait "$hpid" || die "$key: the long transaction failed (see $WORK/$key.hold.log)"
  if [ "$tool" != pt ]; then
    while ((reruns < 3)); do
      left=$(sq source -e "SELECT COUNT(*) FROM bench.part_events WHERE ${COND[parts.part_events]//t./}")
      ((rc != 0 || left > 0)) || break
      log "$key: goarchive exited $rc and left $left rows; running it again (untimed)"
      reruns=$((reruns + 1))
      rc=0
      "$BIN" archive -c "$cfg" -j bench_part_events --no-progress >>"$logf" 2>&1 || rc=$?
    done
  fi
  if ((rc != 0)); then
    log "$label: exit $rc; tail of $logf:"
    tail -n 15 "$logf" >&2 || true
    ok=0
  fi
  verify parts "$label" || ok=0
  if ((!ok)); then
    WAIT_META[$key.status]="FAILED"
    FAILED=1
    return 0
  fi
  run=$(/usr/bin/python3 scripts/bench_probe.py summary "$out" "$t0" "$t1")
  idle=$(/usr/bin/python3 scripts/bench_probe.py summary "$out" "$t_idle" "$t0")
  read -r n50 p50 p99 pmax errs <<<"$run"
  WAIT_ALL[$key.n]+=" $n50" WAIT_ALL[$key.p50]+=" $p50" WAIT_ALL[$key.p99]+=" $p99" WAIT_ALL[$key.max]+=" $pmax"
  WAIT_ALL[$key.errors]+=" $errs"
  read -r n50 p50 p99 pmax errs <<<"$idle"
  WAIT_ALL[$key.ip50]+=" $p50" WAIT_ALL[$key.ip99]+=" $p99" WAIT_ALL[$key.imax]+=" $pmax"
  WAIT_ALL[$key.secs]+=" $(secs "$t0" "$t1")" WAIT_ALL[$key.reruns]+=" $reruns"
  log "$label: ${ARCH_ROWS[parts]} rows in $(secs "$t0" "$t1")s ($reruns reruns); probe while it ran: $run (count p50 p99 max ms, errors), idle: $idle"
}

# -- scenarios --------------------------------------------------------------------------------------------------
EV=events_$N_EVENTS
! want 1 || make_events "$N_EVENTS"
{ ! want 2 && ! want 11; } || make_shop
! want 5 || make_employees
{ ! want 6 && ! want 7; } || make_keys
{ ! want 8 && ! want 9; } || make_dated
# Scenario 12's row path takes `partitions = "off"` when this goarchive knows the key (an older one refuses it as an
# unknown key and takes the row path anyway).
PARTS_OFF='partitions = "off"' PARTS_NOTE=""
if want 12; then
  make_parts
  JOB_EXTRA=$PARTS_OFF ga_config parts parts.toml "$WORK/parts-key.toml"
  if "$BIN" validate -c "$WORK/parts-key.toml" -j bench_part_events >"$WORK/parts-key.log" 2>&1 ||
    ! grep -q "unknown key [a-z_.]*partitions;" "$WORK/parts-key.log"; then
    log "this goarchive knows the partitions key: scenario 12 measures the partition path and the row path"
  else
    PARTS_OFF="" PARTS_NOTE=" [no partitions key: row path]"
    log "this goarchive does not know the partitions key: every scenario 12 run takes the row path"
  fi
fi
LG=events_$N_LOGS
! want 10 || make_events "$N_LOGS"
if want 4; then
  make_events "$N_SCALE"
  make_events "$((4 * N_SCALE))"
fi
S1="1 single table" S2="2 FK tree (5 tables)" S5="5 employees tree (5)" S6="6 UUID CHAR(36) key" S7="7 composite root key"
S8="8 (id, DATE) key, empty" S9="9 (id, DATE), archive 10N" S10="10 purge log table" S11="11 restore FK tree (5)"
S12P="12 partitions: purge" S12A="12 partitions: archive" S12R="12 partitioned, row path"
GA="goarchive archive (sha256)"
# The result a pt-archiver or floor row is compared with.
declare -A GA_FOR=([pt1fast]=ga1 [pt1plain]=ga1 [floor1]=ga1 [pt2]=ga2 [floor2]=ga2 [pt5]=ga5 [floor5]=ga5
  [pt6]=ga6 [pt7]=ga7 [pt8]=ga8 [pt9]=ga9 [pt10]=ga10 [pt11]=ga11 [pt12purge]=ga12purge [pt12arch]=ga12arch)
for ((rep = 1; rep <= REPEAT; rep++)); do
  log "== round $rep of $REPEAT"
  if want 1; then
    run_goarchive ga1 "$S1" "$GA" "$EV" events.toml bench_events
    run_pt pt1fast "$S1" "pt-archiver fastest (bulk)" "$EV" fast
    ((rep > 1)) || run_pt pt1plain "$S1" "pt-archiver plain" "$EV" plain
    run_floor floor1 "3 floor: events" "export + LOAD DATA + DELETE" "$EV"
  fi
  if want 2; then
    run_goarchive ga2 "$S2" "$GA" shop shop.toml bench_orders
    run_pt pt2 "$S2" "pt-archiver x5 child-first (bulk)" shop fast
    run_floor floor2 "3 floor: FK tree" "export + LOAD DATA + DELETE" shop
  fi
  if want 5; then
    run_goarchive ga5 "$S5" "$GA" employees employees.toml bench_employees
    run_pt pt5 "$S5" "pt-archiver x5 child-first (bulk)" employees fast
    run_floor floor5 "3 floor: employees tree" "export + LOAD DATA + DELETE" employees
  fi
  if want 6; then
    run_goarchive ga6 "$S6" "$GA" uuid uuid_items.toml bench_uuid_items
    run_pt pt6 "$S6" "pt-archiver fastest (bulk)" uuid fast
  fi
  if want 7; then
    run_goarchive ga7 "$S7" "$GA" tenant tenant_items.toml bench_tenant_items
    run_pt pt7 "$S7" "pt-archiver fastest (bulk)" tenant fast
  fi
  if want 8; then
    run_goarchive ga8 "$S8" "$GA" dated dated_events.toml bench_dated_events
    run_pt pt8 "$S8" "pt-archiver fastest (bulk)" dated fast
  fi
  if want 9; then
    run_goarchive ga9 "$S9" "$GA" dated10 dated_events.toml bench_dated_events
    run_pt pt9 "$S9" "pt-archiver fastest (bulk)" dated10 fast
  fi
  if want 10; then
    PURGING=1
    run_goarchive ga10 "$S10" "goarchive purge" "$LG" events.toml bench_events purge
    run_pt pt10 "$S10" "pt-archiver --purge --bulk-delete" "$LG" purge
    PURGING=0
  fi
  if want 11; then
    run_restore_ga ga11 "$S11"
    run_restore_pt pt11 "$S11"
  fi
  if want 12; then
    PURGING=1
    run_goarchive ga12purge "$S12P" "goarchive purge (partitions auto)$PARTS_NOTE" parts parts.toml bench_part_events purge
    run_pt pt12purge "$S12P" "pt-archiver --purge --bulk-delete" parts purge
    PURGING=0
    run_goarchive ga12arch "$S12A" "$GA, partitions auto$PARTS_NOTE" parts parts.toml bench_part_events
    run_pt pt12arch "$S12A" "pt-archiver fastest (bulk)" parts fast
    JOB_EXTRA=$PARTS_OFF run_goarchive ga12row "$S12R" "$GA, partitions off" parts parts.toml bench_part_events
    probe_run w12detach "goarchive archive (auto), no long transaction$PARTS_NOTE" kept ga-auto
    probe_run w12hold "goarchive archive (auto), a transaction holds a row ${HOLD}s$PARTS_NOTE" kept ga-auto "$HOLD"
    JOB_EXTRA=$PARTS_OFF probe_run w12rowga "goarchive archive (partitions off), front rows" front ga-off
    probe_run w12rowpt "pt-archiver fastest (bulk), front rows" front pt
    # "At equal or better throughput" (issue 34), seen from the other side: goarchive with `lock_time` set to
    # pt-archiver's p99 wait beside the probe (this round's), so that its batches shrink until their deletes hold
    # the rows no longer than that; its p99 and its speed are both checked against pt-archiver's.
    LOCKT=$(awk -v p="${WAIT_ALL[w12rowpt.p99]##* }" 'BEGIN { printf "%.4f", p / 1000 }')
    JOB_EXTRA="$PARTS_OFF"$'\n'"lock_time = $LOCKT" probe_run w12rowlock \
      "goarchive archive (partitions off), front rows, lock_time = pt's p99" front ga-off
  fi
  if want 4; then
    run_goarchive scaleN "4 scaling N=$N_SCALE" "$GA" "events_$N_SCALE" events.toml bench_events
    run_goarchive scale4N "4 scaling 4N=$((4 * N_SCALE))" "$GA" "events_$((4 * N_SCALE))" events.toml bench_events
  fi
done

# -- report -----------------------------------------------------------------------------------------------------
ratio() { # a / b, or empty when either is missing
  if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; fi
}
for key in "${KEYS[@]}"; do
  SECS[$key]=$(stat_of median "${SECS_ALL[$key]:-}")
  RSS[$key]=$(stat_of median "${RSS_ALL[$key]:-}")
  CPU[$key]=$(stat_of median "${CPU_ALL[$key]:-}")
  SRC[$key]=$(stat_of median "${SRC_ALL[$key]:-}")
  DST[$key]=$(stat_of median "${DST_ALL[$key]:-}")
done

echo
echo "goarchive benchmark ($([ "$QUICK" = 1 ] && echo quick || echo full) mode), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs,"
echo "MariaDB $(sq source -e 'SELECT VERSION()'), innodb_flush_log_at_trx_commit=1, sync_binlog=1, binlog ROW;"
echo "goarchive $("$BIN" version 2>/dev/null | head -n 1), batch_size $BATCH; pt-archiver $(pt-archiver --version | awk '{print $2}') --limit $BATCH --commit-each."
echo "Medians of $REPEAT runs (pt-archiver plain: 1), spread min-max; 'vs goarchive' = median seconds / goarchive's"
echo "median seconds on the same data (> 1: goarchive is faster). Phases: goarchive's median seconds selecting roots"
echo "and children (the reader thread) and deleting (the source worker), copying (the whole destination transaction, verify"
echo "included) and verifying, the main thread waiting for the source worker, and the rest of the wall time beside"
echo "copy + wait (connecting, preflight, locks, registry, the last batches' end). CPU s: the machine's busy CPU"
echo "seconds during the run (both servers, the tool and the kernel, all $(nproc) CPUs), median."
echo
fmt='%-24s %-34s %8s %8s %-13s %9s %7s %7s %6s  %-35s %s\n'
printf -- "$fmt" scenario "tool / mode" rows seconds "(min-max)" rows/s "vs ga" "RSS MB" "CPU s" \
  "phases sel/del|copy/ver|wait|other" result
printf -- "$fmt" "------------------------" "----------------------------------" "--------" "--------" "-------------" \
  "---------" "-------" "-------" "------" "-----------------------------------" "------"
for key in "${KEYS[@]}"; do
  IFS='|' read -r scenario tool ds <<<"${META[$key]}"
  secs=${SECS[$key]} status=${STATUS[$key]:-ok} rows=${ARCH_ROWS[$ds]}
  rps=$(awk -v r="$rows" -v s="$secs" 'BEGIN { if (s > 0) printf "%.0f", r / s }')
  spread="-"
  [ -z "$secs" ] || spread="($(stat_of min "${SECS_ALL[$key]}")-$(stat_of max "${SECS_ALL[$key]}"))"
  ga=${GA_FOR[$key]:-} vs=""
  [ -z "$ga" ] || vs=$(ratio "$secs" "${SECS[$ga]:-}")
  phases="-"
  if [ -n "${PH_ALL[$key.select]:-}" ] && [ -n "$secs" ]; then
    p_sel=$(stat_of median "${PH_ALL[$key.select]}") p_copy=$(stat_of median "${PH_ALL[$key.copy]}")
    p_ver=$(stat_of median "${PH_ALL[$key.verify]}") p_del=$(stat_of median "${PH_ALL[$key.delete]}")
    p_wait=$(stat_of median "${PH_ALL[$key.wait]:-}")
    phases=$(awk -v t="$secs" -v a="$p_sel" -v b="$p_copy" -v c="$p_ver" -v d="$p_del" -v w="${p_wait:-0}" \
      'BEGIN { o = t - b - w; printf "%.2f/%.2f|%.2f/%.2f|%.2f|%.2f", a, d, b, c, w, (o > 0 ? o : 0) }')
  fi
  printf -- "$fmt" "$scenario" "$tool" "$rows" "${secs:--}" "$spread" "${rps:--}" "${vs:--}" "${RSS[$key]:--}" \
    "${CPU[$key]:--}" "$phases" "$status"
done

echo
echo "targets (informative):"
check() { # description value comparison(awk expr on v) target-text
  local desc=$1 v=$2 cond=$3 target=$4 verdict
  if [ -z "$v" ] && [ -n "$ONLY" ]; then
    verdict=SKIP
    v="-"
  elif [ -z "$v" ]; then
    verdict="FAIL (no measurement)"
    v="-"
  elif awk -v v="$v" "BEGIN { exit !($cond) }"; then
    verdict=PASS
  else
    verdict=FAIL
  fi
  printf '  %-5s %-62s %8s  (target %s)\n' "$verdict" "$desc" "$v" "$target"
}
check "single table: goarchive speed / pt-archiver bulk" "$(ratio "${SECS[pt1fast]:-}" "${SECS[ga1]:-}")" "v >= 2" ">= 2"
check "single table: goarchive speed / pt-archiver plain" "$(ratio "${SECS[pt1plain]:-}" "${SECS[ga1]:-}")" \
  "v >= 10" ">= 10"
check "UUID key: goarchive speed / pt-archiver bulk" "$(ratio "${SECS[pt6]:-}" "${SECS[ga6]:-}")" "v >= 2" ">= 2"
check "composite root key: goarchive speed / pt-archiver bulk" "$(ratio "${SECS[pt7]:-}" "${SECS[ga7]:-}")" \
  "v >= 2" ">= 2"
check "shop tree: goarchive speed / pt-archiver per-table bulk" "$(ratio "${SECS[pt2]:-}" "${SECS[ga2]:-}")" \
  "v >= 3" ">= 3"
check "employees tree: goarchive speed / pt-archiver per-table bulk" "$(ratio "${SECS[pt5]:-}" "${SECS[ga5]:-}")" \
  "v >= 2" ">= 2"
check "single table: goarchive time / floor time" "$(ratio "${SECS[ga1]:-}" "${SECS[floor1]:-}")" "v <= 1.5" "<= 1.5"
check "shop tree: goarchive time / floor time" "$(ratio "${SECS[ga2]:-}" "${SECS[floor2]:-}")" "v <= 1.5" "<= 1.5"
check "employees tree: goarchive time / floor time" "$(ratio "${SECS[ga5]:-}" "${SECS[floor5]:-}")" "v <= 1.5" "<= 1.5"
check "(id, DATE) key: goarchive speed / pt-archiver bulk" "$(ratio "${SECS[pt8]:-}" "${SECS[ga8]:-}")" "v >= 2" ">= 2"
check "(id, DATE) key: time into an archive of 10N / into an empty one" "$(ratio "${SECS[ga9]:-}" "${SECS[ga8]:-}")" \
  "v <= 1.10" "<= 1.10"
check "restore FK tree: goarchive speed / pt-archiver the other way (bulk)" "$(ratio "${SECS[pt11]:-}" "${SECS[ga11]:-}")" \
  "v >= 2" ">= 2"
check "restore FK tree: goarchive restore time / its archive time (scenario 2)" \
  "$(ratio "${SECS[ga11]:-}" "${SECS[ga2]:-}")" "v <= 1.3" "<= 1.3"
check "purge log table: goarchive speed / pt-archiver --purge bulk" "$(ratio "${SECS[pt10]:-}" "${SECS[ga10]:-}")" \
  "v >= 2" ">= 2"
check "partitions: purge speed, goarchive / pt-archiver --purge bulk" \
  "$(ratio "${SECS[pt12purge]:-}" "${SECS[ga12purge]:-}")" "v >= 100" ">= 100"
check "partitions: archive speed, goarchive / pt-archiver bulk" "$(ratio "${SECS[pt12arch]:-}" "${SECS[ga12arch]:-}")" \
  "v >= 3" ">= 3"
check "partitioned, row path (partitions off): speed / pt-archiver bulk" \
  "$(ratio "${SECS[pt12arch]:-}" "${SECS[ga12row]:-}")" "v >= 2" ">= 2"
wait_of() { stat_of median "${WAIT_ALL[$1]:-}"; }
check "partitions: application's max wait (ms) during the detaches" "$(wait_of w12detach.max)" "v <= 1100" \
  "<= 1100: lock_wait_timeout 1 s + 10%"
check "partitions: same, a transaction holding a row ${HOLD}s (max ms)" "$(wait_of w12hold.max)" "v <= 1100" \
  "<= 1100: lock_wait_timeout 1 s + 10%"
check "row path: application's p99 update wait, goarchive / pt-archiver" \
  "$(ratio "$(wait_of w12rowga.p99)" "$(wait_of w12rowpt.p99)")" "v <= 1" "<= 1"
check "row path beside the probe: goarchive speed / pt-archiver's" \
  "$(ratio "$(wait_of w12rowpt.secs)" "$(wait_of w12rowga.secs)")" "v >= 1" ">= 1"
check "row path, lock_time = pt's p99: p99 update wait, goarchive / pt-archiver" \
  "$(ratio "$(wait_of w12rowlock.p99)" "$(wait_of w12rowpt.p99)")" "v <= 1" "<= 1"
check "row path, lock_time = pt's p99: goarchive speed / pt-archiver's" \
  "$(ratio "$(wait_of w12rowpt.secs)" "$(wait_of w12rowlock.secs)")" "v >= 1" ">= 1"
bpr() { # binlog bytes per archived row of KEY's median
  local b
  b=$(stat_of median "${BINLOG_ALL[$1]:-}")
  [ -z "$b" ] || awk -v b="$b" -v r="${ARCH_ROWS[parts]:-0}" 'BEGIN { if (r > 0) printf "%.2f", b / r }'
}
check "partitions: source binlog bytes per archived row (archive)" "$(bpr ga12arch)" "v < 1" "< 1: statements, no rows"
check "memory: peak RSS(4N) / RSS(N)" "$(ratio "${RSS[scale4N]:-}" "${RSS[scaleN]:-}")" "v <= 1.10" "<= 1.10"
check "memory: peak RSS(4N) in MB" "${RSS[scale4N]:-}" "v < 200" "< 200"
check "linear cost: time(4N) / time(N)" "$(ratio "${SECS[scale4N]:-}" "${SECS[scaleN]:-}")" "v <= 4.4" "<= 4.4"
echo
# What the CPU allows: a run cannot take less wall time than its CPU work spread over every CPU, so on this
# machine goarchive's speed over pt-archiver's can be at most pt-archiver's seconds / (goarchive's CPU s / CPUs).
echo "CPU work (informative): CPU s of pt-archiver / goarchive on the same data, and the highest speed ratio this"
echo "machine allows goarchive at its CPU cost (pt-archiver's seconds / (goarchive's CPU s / $(nproc) CPUs)):"
ceiling() { # label pt-key ga-key
  local work cap measured
  work=$(ratio "${CPU[$2]:-}" "${CPU[$3]:-}")
  cap=$(awk -v s="${SECS[$2]:-}" -v c="${CPU[$3]:-}" -v n="$(nproc)" 'BEGIN { if (s > 0 && c > 0) printf "%.2f", s / (c / n) }')
  measured=$(ratio "${SECS[$2]:-}" "${SECS[$3]:-}")
  printf '  %-40s CPU pt/ga %6s   ceiling %6s   measured %6s\n' "$1" "${work:--}" "${cap:--}" "${measured:--}"
}
ceiling "single table" pt1fast ga1
ceiling "UUID key" pt6 ga6
ceiling "composite root key" pt7 ga7
ceiling "shop tree" pt2 ga2
ceiling "employees tree" pt5 ga5
ceiling "(id, DATE) key" pt8 ga8
ceiling "(id, DATE) key, archive 10N" pt9 ga9
ceiling "purge log table" pt10 ga10
ceiling "partitions: purge" pt12purge ga12purge
ceiling "partitions: archive" pt12arch ga12arch
ceiling "partitioned, row path" pt12arch ga12row
linear=$(ratio "${CPU[scale4N]:-}" "${CPU[scaleN]:-}")
printf '  %-40s %s\n' "linear cost: CPU(4N) / CPU(N)" "${linear:--}"
echo
# Where that CPU goes: the servers' share is the work of the statements a tool sends (and the purge and flushing
# they cause); the rest is the tool's own work and the kernel's beside it. Even a tool that cost nothing itself
# could not beat pt-archiver by more than pt-archiver's seconds / (its servers' CPU s / CPUs).
echo "Where the CPU goes (informative): median CPU s of the source server, the destination server and the rest (the"
echo "tool and the kernel), and the highest speed ratio over pt-archiver goarchive's server CPU alone allows (the"
echo "ceiling above with the tool's own CPU taken as zero):"
split_of() { # key: "src dst rest"
  awk -v c="${CPU[$1]:-}" -v a="${SRC[$1]:-}" -v b="${DST[$1]:-}" \
    'BEGIN { if (c == "" || a == "" || b == "") print "- - -"; else printf "%.2f %.2f %.2f", a, b, c - a - b }'
}
where_cpu() { # label pt-key ga-key
  local g1 g2 g3 p1 p2 p3 cap
  read -r g1 g2 g3 <<<"$(split_of "$3")"
  read -r p1 p2 p3 <<<"$(split_of "$2")"
  cap=$(awk -v s="${SECS[$2]:-}" -v a="${SRC[$3]:-}" -v b="${DST[$3]:-}" -v n="$(nproc)" \
    'BEGIN { if (s > 0 && a + b > 0) printf "%.2f", s / ((a + b) / n) }')
  printf '  %-22s goarchive %5s %5s %5s   pt-archiver %5s %5s %5s   servers only: ceiling %6s\n' "$1" \
    "$g1" "$g2" "$g3" "$p1" "$p2" "$p3" "${cap:--}"
}
printf '  %-22s %-9s %5s %5s %5s   %-11s %5s %5s %5s\n' "" "" src dst rest "" src dst rest
where_cpu "single table" pt1fast ga1
where_cpu "UUID key" pt6 ga6
where_cpu "composite root key" pt7 ga7
where_cpu "shop tree" pt2 ga2
where_cpu "employees tree" pt5 ga5
where_cpu "(id, DATE) key" pt8 ga8
where_cpu "(id, DATE), archive 10N" pt9 ga9
where_cpu "purge log table" pt10 ga10
where_cpu "partitions: purge" pt12purge ga12purge
where_cpu "partitions: archive" pt12arch ga12arch
where_cpu "partitioned, row path" pt12arch ga12row
echo
whole() { [ -z "$1" ] || awk -v v="$1" 'BEGIN { printf "%.0f", v }'; } # a median as a whole number
if want 12; then
  # The binlog each tool made the source write for scenario 12's rows: the partition path writes statements (the
  # detach, the drop), the row paths a row image per deleted row.
  echo "Binlog (scenario 12, ${ARCH_ROWS[parts]} rows archived of $N_PARTS): bytes the source wrote to its binary log, median,"
  echo "and per archived row:"
  for key in ga12arch ga12purge ga12row pt12arch pt12purge; do
    [ -n "${META[$key]:-}" ] || continue
    IFS='|' read -r scenario tool ds <<<"${META[$key]}"
    taken=""
    if [ -n "${PARTS_TAKEN[$key]:-}" ]; then
      read -r a b <<<"${PARTS_TAKEN[$key]}"
      taken="   (last run: $a partitions taken whole, $b left whole)"
    fi
    printf '  %-24s %-48s %12s bytes %10s bytes/row%s\n' "$scenario" "$tool" \
      "$(whole "$(stat_of median "${BINLOG_ALL[$key]:-}")")" "$(bpr "$key")" "$taken"
  done
  echo
  echo "Application waits (scenario 12): the probe's single-row statements, ms, medians of $REPEAT runs; 'idle' = the 2 s"
  echo "before the tool started, 'while' = while it ran; kept = INSERTs and UPDATEs in the kept half (any statement waits"
  echo "for a detach's metadata lock), front = UPDATEs of rows at most 2000 ids past the lowest id left; errors: the"
  echo "probe's statements ended by a deadlock (1213) or a lock wait timeout (1205), median count:"
  printf '  %-72s %7s %8s %19s %19s %6s %6s\n' "run" seconds statements "idle p50/p99/max" "while p50/p99/max" errors reruns
  for key in "${WAIT_KEYS[@]}"; do
    if [ -n "${WAIT_META[$key.status]:-}" ] && [ -z "${WAIT_ALL[$key.p50]:-}" ]; then
      printf '  %-72s %s\n' "${WAIT_META[$key]}" "${WAIT_META[$key.status]}"
      continue
    fi
    printf '  %-72s %7s %8s %19s %19s %6s %6s%s\n' "${WAIT_META[$key]}" "$(wait_of "$key.secs")" \
      "$(whole "$(wait_of "$key.n")")" "$(wait_of "$key.ip50")/$(wait_of "$key.ip99")/$(wait_of "$key.imax")" \
      "$(wait_of "$key.p50")/$(wait_of "$key.p99")/$(wait_of "$key.max")" "$(whole "$(wait_of "$key.errors")")" \
      "$(whole "$(wait_of "$key.reruns")")" \
      "${WAIT_META[$key.status]:+  (a run ${WAIT_META[$key.status]})}"
  done
  echo
fi
log "done in ${SECONDS}s"
if ((FAILED)); then
  echo "bench.sh: at least one run failed or did not verify (see above); logs in $WORK" >&2
  exit 1
fi
