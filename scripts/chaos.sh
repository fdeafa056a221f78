#!/usr/bin/env bash
# The randomized live-application test (tests/chaos/test_chaos.py), long: N rounds from one seed.
#   scripts/chaos.sh --rounds N [--seed S] [--seconds SECONDS_OF_LOAD_PER_ROUND] [--keep]
# Needs the Debug build (build/goarchive, or GOARCHIVE_BIN). Starts and stops its own servers (ports 26306-26308,
# /tmp/ga-chaos; CHAOS_SERVERS_DIR, CHAOS_SOURCE_PORT, CHAOS_REPLICA_PORT, CHAOS_DEST_PORT move them). Prints at the
# end: rounds, application writes committed, kills, fault points fired, shared-archive rounds and their refusals,
# restore rounds, partitioned rounds, faults beyond SIGKILL of each kind, lost / duplicated / stale / orphans.
# CHAOS_FORCE=partitions makes every round a partitioned one (test_chaos.py).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=20 seed=${CHAOS_SEED:-$(date +%s)} seconds=${CHAOS_SECONDS:-15}
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --keep) export CHAOS_KEEP=1; shift ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "chaos.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=${GOARCHIVE_BIN:-$PWD/build/goarchive}
[[ -x $bin ]] || { echo "chaos.sh: no goarchive binary at $bin (build the Debug build first)" >&2; exit 2; }
stats=$(mktemp /tmp/chaos-stats.XXXXXX.json)
trap 'rm -f "$stats"' EXIT
set +e
GOARCHIVE_BIN=$bin CHAOS_SEED=$seed CHAOS_ROUNDS=$rounds CHAOS_SECONDS=$seconds CHAOS_STATS_FILE=$stats \
  PYTHONPATH=$PWD/tests/integration PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 tests/chaos/test_chaos.py -v
rc=$?
set -e
/usr/bin/python3 - "$stats" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stats"]
g = lambda k: s.get(k, 0)
print(f"\nchaos.sh: seed {d['seed']}: rounds {g('rounds')} (failed {g('rounds_failed')}), application writes committed "
      f"{g('writes')}, kills {g('kills')}")
print(f"chaos.sh: lost {g('lost')} / duplicated {g('duplicated')} / stale {g('stale')} / orphans {g('orphans')} "
      f"(unarchived {g('unarchived')}, in diamond rounds {g('unarchived_diamond')}, uncopied {g('uncopied')}, "
      f"misplaced {g('misplaced')}, registry {g('registry')}, final runs failed {g('final_failed')})")
print(f"chaos.sh: rows of conflict roots {g('conflicts')}, deleted rows whose archived copy was kept after a kill in "
      f"the delete's commit window {g('kept')} (failures, allowed only with CHAOS_NO_PROOF=1)")
print(f"chaos.sh: allowed and reported: diamond roots blocked {g('blocked')}, roots blocked by another job's copy "
      f"(shared rounds) {g('blocked_shared')}, copy-only copies kept as the only version {g('only_version')}")
print(f"chaos.sh: held parents (the copy-only sweep keeping a row the source still holds as the parent of an only "
      f"version; fixed in bf74b08, a failure unless CHAOS_ALLOW_HELD_PARENT=1): {g('held_parent')} in "
      f"{g('rounds_held_parent')} rounds, rows wedged {g('wedged')}")
print(f"chaos.sh: restore rounds {g('rounds_restore')} (--keep-archive {g('rounds_restore_keep')}): roots restored "
      f"{g('restored_roots')} (written by the application after {g('restored_written')}), restore runs SIGKILLed {g('kills_restore')}, unrestored {g('unrestored')} (failures), "
      f"diamond roots blocked {g('restore_blocked')}, conflicts after --keep-archive {g('restore_keep_conflicts')}, "
      f"rows a --keep-archive rerun after a kill restored again (fixed in 7a08fd2, a failure unless CHAOS_ALLOW_RESURRECTED=1) {g('resurrected')} in "
      f"{g('rounds_resurrected')} rounds")
print(f"chaos.sh: partitioned rounds {g('rounds_partition')} (portable {g('rounds_partition_portable')}): partitions "
      f"taken whole {g('partitions_whole')}, rows that went back into the table {g('partition_rows_back')}, SIGKILLs "
      f"at partition points {g('kills_partition')}, runs held before a detach {g('pause_runs')}, invariant checks "
      f"while a partition step was unfinished {g('midway_checks')}")
print(f"chaos.sh: fault points that killed {len(d.get('points', {}))}: "
      + ", ".join(f"{p} {n}" for p, n in sorted(d.get("points", {}).items())))
print(f"chaos.sh: shared-archive rounds {g('rounds_shared')}: refused another mode of a killed job "
      f"{g('shared_refused_mode')}, another job (guard) {g('shared_refused_guard')}, a second registry or source "
      f"{g('shared_refused_owner')}")
print(f"chaos.sh: faults beyond SIGKILL {g('faults')} (in {g('rounds_fault')} rounds): source restarts "
      f"{g('fault_restart_source')}, destination restarts {g('fault_restart_destination')}, proxy cuts "
      f"{g('fault_proxy')} ({g('proxy_connections_cut')} connections), lock sessions killed {g('fault_lock_kill')}; "
      f"the faulted run ended rc 1 {g('fault_rc1')} / rc 0 {g('fault_rc0')}")
print(f"chaos.sh: rounds with lock_time set {g('rounds_lock_time')}")
for r in d["rounds"]:
    if r["failed"]:
        print(f"chaos.sh:   round {r['round']}: {r['kind']}: {r['summary']}")
PY
exit $rc
