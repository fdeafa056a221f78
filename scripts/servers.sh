#!/usr/bin/env bash
# Throw-away local MariaDB servers for the tests and the demo: no systemd,
# loopback only, nothing read from /etc/mysql. Data: $GOARCHIVE_TEST_DIR/<name>.
#   source (server_id 1, GTID domain 1) --GTID replication--> replica (2, domain 2)
#   destination (3, domain 3): the archive server
# `status` exits 3 when a named server is down.
set -euo pipefail

BASE_DIR=$(realpath -m -- "${GOARCHIVE_TEST_DIR:-/tmp/goarchive-servers}")
readonly BASE_DIR
readonly ALL_NAMES=(source replica destination)
readonly APP_USER=goarchive APP_PASSWORD=goarchive-test-pw
readonly REPL_USER=repl REPL_PASSWORD=repl-pw
readonly MONITOR_USER=monitor MONITOR_PASSWORD=monitor-pw
readonly START_TIMEOUT=60 STOP_TIMEOUT=60 REPLICATION_TIMEOUT=30

die() {
  echo "servers.sh: $*" >&2
  exit 1
}

usage() {
  cat >&2 <<'EOF'
usage: servers.sh start|stop|status|reset [source|replica|destination ...]
       servers.sh env                 (eval "$(scripts/servers.sh env)")
       servers.sh sql NAME [ARGS...]  (the mariadb client as root on NAME)
EOF
  exit 2
}

port_of() {
  case $1 in
    source) echo "${GA_SOURCE_PORT:-23306}" ;;
    replica) echo "${GA_REPLICA_PORT:-23307}" ;;
    destination) echo "${GA_DEST_PORT:-23308}" ;;
  esac
}
server_id_of() { case $1 in source) echo 1 ;; replica) echo 2 ;; destination) echo 3 ;; esac }
dir_of() { echo "$BASE_DIR/$1"; }
sock_of() { echo "$BASE_DIR/$1/mysqld.sock"; }
cnf_of() { echo "$BASE_DIR/$1/my.cnf"; }
# Own tmpdir per instance: a starting mariadbd deletes every #sql* file in its
# tmpdir, i.e. the temporary tables of any other server sharing it (seen with
# the parallel bootstraps in /tmp). Outside the datadir: a directory there
# would show up as a database.
tmp_of() { echo "$BASE_DIR/tmp/$1"; }

# The mariadb client as root (unix_socket auth) on the named server.
client() {
  local name=$1
  shift
  mariadb --no-defaults -S "$(sock_of "$name")" -uroot --default-character-set=utf8mb4 "$@"
}

# True when PID is a live mariadbd started with NAME's defaults file. A zombie
# has an empty cmdline, so it counts as gone.
is_ours() {
  local pid=$1 name=$2 cmdline
  cmdline=$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null) || return 1
  [[ $cmdline == *"--defaults-file=$(cnf_of "$name") "* ]]
}

# Prints the PID of NAME's running server; fails when it is not running.
running_pid() {
  local pid
  pid=$(cat "$(dir_of "$1")/mariadbd.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && is_ours "$pid" "$1" || return 1
  echo "$pid"
}

init_datadir() {
  local dir
  dir=$(dir_of "$1")
  [ -e "$dir/.initialized" ] && return 0
  rm -rf "$dir" "$(tmp_of "$1")"
  mkdir -p "$dir" "$(tmp_of "$1")"
  if ! mariadb-install-db --no-defaults --user=root --datadir="$dir" --tmpdir="$(tmp_of "$1")" \
    --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \
    >"$dir/install.log" 2>&1; then
    tail -n 20 "$dir/install.log" >&2
    die "mariadb-install-db failed for $1 (log: $dir/install.log)"
  fi
  touch "$dir/.initialized"
}

write_cnf() {
  local name=$1 dir id
  dir=$(dir_of "$name")
  id=$(server_id_of "$name")
  cat >"$(cnf_of "$name")" <<EOF
[mysqld]
datadir=$dir
tmpdir=$(tmp_of "$name")
socket=$(sock_of "$name")
pid-file=$dir/mariadbd.pid
log_error=$dir/error.log
port=$(port_of "$name")
bind-address=127.0.0.1
skip-name-resolve
server_id=$id
gtid_domain_id=$id
# Explicit names: the defaults derive from the hostname, which may change.
log_bin=$dir/binlog
relay_log=$dir/relay-bin
binlog_format=ROW
log_slave_updates=ON
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
innodb_buffer_pool_size=128M
performance_schema=OFF
max_connections=200
local_infile=ON
# Fast, not durable: these servers are thrown away.
innodb_flush_log_at_trx_commit=2
sync_binlog=0
EOF
}

# Starts NAME's mariadbd in the background (its PID is then in $!), in its own
# session so that a Ctrl-C in the caller's terminal does not reach it.
launch() {
  local name=$1 sock
  sock=$(sock_of "$name")
  # sun_path holds 107 bytes plus the terminating NUL.
  ((${#sock} <= 107)) || die "socket path too long, shorten GOARCHIVE_TEST_DIR: $sock"
  rm -f "$(dir_of "$name")/mariadbd.pid"
  setsid nohup mariadbd --defaults-file="$(cnf_of "$name")" --user=root \
    </dev/null >>"$(dir_of "$name")/mariadbd.out" 2>&1 &
}

wait_ready() {
  local name=$1 pid=$2 deadline=$((SECONDS + START_TIMEOUT)) grace=$((SECONDS + 5))
  until mariadb-admin --no-defaults -S "$(sock_of "$name")" -uroot --connect-timeout=2 ping >/dev/null 2>&1; do
    # Right after the launch the pid may still be the forked shell, not yet mariadbd: give it a few seconds.
    if { ! is_ours "$pid" "$name" && ((SECONDS >= grace)); } || ((SECONDS >= deadline)); then
      echo "servers.sh: $name did not come up; tail of $(dir_of "$name")/error.log:" >&2
      tail -n 30 "$(dir_of "$name")/error.log" >&2 || true
      exit 1
    fi
    sleep 0.1
  done
}

# SQL creating USER with PRIVS (and OPTIONS) on *.* for TCP and socket logins.
account_sql() {
  local user=$1 password=$2 privs=$3 options=${4:-} host
  for host in 127.0.0.1 localhost; do
    echo "CREATE OR REPLACE USER '$user'@'$host' IDENTIFIED BY '$password';"
    echo "GRANT $privs ON *.* TO '$user'@'$host' $options;"
  done
}

# Accounts are (re)created on every start, so a half-finished earlier start
# heals. sql_log_bin=0: nothing replicates, GTID positions start empty.
setup_accounts() {
  local name=$1 stmts privs
  stmts="SET SESSION sql_log_bin=0;"
  stmts+=$(account_sql "$APP_USER" "$APP_PASSWORD" "ALL PRIVILEGES" "WITH GRANT OPTION")
  case $name in
    source) stmts+=$(account_sql "$REPL_USER" "$REPL_PASSWORD" "REPLICATION SLAVE, REPLICATION SLAVE ADMIN") ;;
    replica)
      privs="REPLICATION CLIENT"
      if client replica -NBe "SHOW PRIVILEGES" | grep -qi '^slave monitor'; then
        privs+=", SLAVE MONITOR"
      fi
      stmts+=$(account_sql "$MONITOR_USER" "$MONITOR_PASSWORD" "$privs")
      ;;
  esac
  client "$name" -NBe "$stmts"
}

slave_field() { sed -n "s/^ *$1: //p" <<<"$2"; }

# Points the replica at the source (once) and waits until both threads run.
# The IO thread can only run while the source is up.
setup_replication() {
  local status io sql need_io=true deadline=$((SECONDS + REPLICATION_TIMEOUT))
  if [ -z "$(client replica -NBe "SHOW SLAVE STATUS")" ]; then
    client replica -e "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$(port_of source),
      MASTER_USER='$REPL_USER', MASTER_PASSWORD='$REPL_PASSWORD',
      MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1"
  fi
  client replica -e "START SLAVE"
  if ! running_pid source >/dev/null; then
    need_io=false
    echo "servers.sh: source is down; the replica connects to it once it is up"
  fi
  while :; do
    status=$(client replica -e "SHOW SLAVE STATUS\G")
    io=$(slave_field Slave_IO_Running "$status")
    sql=$(slave_field Slave_SQL_Running "$status")
    if [ "$sql" = Yes ] && { [ "$io" = Yes ] || ! $need_io; }; then return 0; fi
    if ((SECONDS >= deadline)); then
      echo "servers.sh: replication did not start:" >&2
      grep -E 'Running:|Last_(IO|SQL)_Error:' <<<"$status" >&2
      exit 1
    fi
    sleep 0.1
  done
}

cmd_start() {
  local name pid i started=() pids=()
  [ "$(id -u)" -eq 0 ] || die "run as root (the servers authenticate root by unix socket)"
  mkdir -p "$BASE_DIR"
  for name; do
    running_pid "$name" >/dev/null || started+=("$name")
  done
  for name in "${started[@]}"; do
    init_datadir "$name" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  pids=()
  for name in "${started[@]}"; do
    write_cnf "$name"
    launch "$name"
    pids+=($!)
  done
  for i in "${!started[@]}"; do wait_ready "${started[i]}" "${pids[i]}"; done
  for name; do setup_accounts "$name"; done
  [[ " $* " != *" replica "* ]] || setup_replication
  for name; do
    echo "servers.sh: $name up on 127.0.0.1:$(port_of "$name")"
  done
}

cmd_stop() {
  local name pid i names=() pids=() deadline=$((SECONDS + STOP_TIMEOUT))
  for name; do
    pid=$(running_pid "$name") || continue
    kill -TERM "$pid"
    names+=("$name")
    pids+=("$pid")
  done
  for i in "${!names[@]}"; do
    while is_ours "${pids[i]}" "${names[i]}"; do
      if ((SECONDS >= deadline)); then
        echo "servers.sh: ${names[i]} ignored SIGTERM for ${STOP_TIMEOUT}s, sending SIGKILL" >&2
        kill -KILL "${pids[i]}" 2>/dev/null || true
      fi
      sleep 0.1
    done
    echo "servers.sh: ${names[i]} stopped"
  done
}

cmd_reset() {
  local name
  # A replica of a wiped source would ask it for GTIDs that no longer exist.
  if [[ " $* " == *" source "* && " $* " != *" replica "* ]]; then set -- "$@" replica; fi
  cmd_stop "$@"
  for name; do rm -rf "$(dir_of "$name")" "$(tmp_of "$name")"; done
  rmdir "$BASE_DIR/tmp" "$BASE_DIR" 2>/dev/null || true
}

cmd_status() {
  local name pid rc=0
  for name; do
    if pid=$(running_pid "$name"); then
      echo "$name: up (pid $pid, port $(port_of "$name"), socket $(sock_of "$name"))"
    else
      echo "$name: down"
      rc=3
    fi
  done
  return "$rc"
}

cmd_env() {
  printf 'export %s=%q\n' \
    GA_HOST 127.0.0.1 GA_USER "$APP_USER" GA_PASSWORD "$APP_PASSWORD" \
    GA_SOURCE_PORT "$(port_of source)" GA_REPLICA_PORT "$(port_of replica)" \
    GA_DEST_PORT "$(port_of destination)" GA_SOURCE_SOCKET "$(sock_of source)" \
    GA_REPLICA_SOCKET "$(sock_of replica)" GA_DEST_SOCKET "$(sock_of destination)" \
    GA_SERVERS_DIR "$BASE_DIR"
}

check_names() {
  local name
  for name; do
    [[ " ${ALL_NAMES[*]} " == *" $name "* ]] || die "unknown server '$name' (known: ${ALL_NAMES[*]})"
  done
}

main() {
  local cmd=${1:-}
  shift || true
  case $cmd in
    start | stop | status | reset)
      (($#)) || set -- "${ALL_NAMES[@]}"
      check_names "$@"
      "cmd_$cmd" "$@"
      ;;
    env) cmd_env ;;
    sql)
      (($#)) || usage
      check_names "$1"
      client "$@"
      ;;
    *) usage ;;
  esac
}

main "$@"
