#!/usr/bin/env bash
# soak: sysbench's scripts that no bench workload runs (inserts, deletes,
# read-write, bulk inserts, tables without a primary key, without
# AUTO_INCREMENT, on Aria and MyISAM), 8 clients each, in MIXED then in ROW
# format, each replicated by gapless --workers 8 onto a sandbox target and
# checked with gapless verify. Prints a line per run and exits 1 at the first
# run that fails or differs (its servers are left running).
#   make build && scripts/soak.sh            SECS (10) seconds of load per run
# Settings through the environment: SECS, SOAK_DIR (/tmp/gapless-soak), GAPLESS (bin/gapless),
# SOAK_SET (more of the primary's global variables, for example "binlog_row_image=MINIMAL"),
# SOAK_FLAGS (more flags for every gapless replicate, for example "--commit-order causal"),
# SOAK_INTERRUPT=1: gapless replicates while the load runs, and is stopped (SIGTERM, which must
# exit 0) or killed (SIGKILL) every 0.1-3 s and started again, before the last run to the position.
set -uo pipefail
cd "$(dirname "$0")/.."

bin=${GAPLESS:-./bin/gapless}
work=${SOAK_DIR:-/tmp/gapless-soak}
secs=${SECS:-10}
dir=$work/sandbox
relay=$work/relay

$bin sandbox down --dir "$dir" --remove >/dev/null 2>&1 || true
rm -rf "$relay"
mkdir -p "$work"
$bin sandbox up --dir "$dir" >/dev/null || exit 1
eval "$($bin sandbox env --dir "$dir")"
port=$(echo "$GAPLESS_SOURCE" | sed -E 's#.*:([0-9]+)$#\1#')
primary() { mariadb --defaults-file="$dir/primary/my.cnf" "$@"; }

# interrupted NAME PID: while the load PID runs, gapless replicates and is
# stopped or killed at random moments, then started again; a stop must exit 0.
interrupted() {
  local name=$1 load=$2 n=0 gl rc signal
  : >"$work/$name.live.out"
  : >"$work/$name.live.err"
  while kill -0 "$load" 2>/dev/null; do
    n=$((n + 1))
    $bin replicate --workers 8 --relay-dir "$relay" --progress 0 ${SOAK_FLAGS:-} >>"$work/$name.live.out" 2>>"$work/$name.live.err" &
    gl=$!
    sleep "$((RANDOM % 3)).$((RANDOM % 9 + 1))"
    signal=KILL
    [ $((RANDOM % 2)) = 0 ] && signal=TERM
    kill -s $signal "$gl" 2>/dev/null
    wait "$gl" 2>/dev/null
    rc=$?
    # 137: the kill; anything else but 0 is a failure of the run itself.
    if [ $rc != 0 ] && { [ $signal = TERM ] || [ $rc != 137 ]; }; then
      echo "$name: run $n (sent SIG$signal) exited $rc"; tail -5 "$work/$name.live.err"; wait "$load"; return 1
    fi
  done
  wait "$load"
  live="$n runs during the load, then "
}

# soak NAME FORMAT SCRIPT [sysbench flags...]
soak() {
  local name=$1 format=$2 script=$3
  shift 3
  primary -e "SET GLOBAL binlog_format=$format${SOAK_SET:+, GLOBAL $SOAK_SET}; CREATE DATABASE IF NOT EXISTS $name"
  local sb=(sysbench "$script" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=gapless
    --mysql-password=gapless --mysql-db="$name" --tables=4 --table-size=2000 --threads=8 --mysql-ignore-errors=1062,1213,1205 "$@")
  "${sb[@]}" prepare >"$work/$name.sysbench" 2>&1 || { echo "$name: sysbench prepare failed (see $work/$name.sysbench)"; return 1; }
  local live=
  if [ -n "${SOAK_INTERRUPT:-}" ]; then
    "${sb[@]}" --time="$secs" run >>"$work/$name.sysbench" 2>&1 &
    interrupted "$name" $! || return 1
  else
    "${sb[@]}" --time="$secs" run >>"$work/$name.sysbench" 2>&1
  fi
  local until start end
  until=$(primary -N -e "SELECT @@gtid_binlog_pos")
  start=$(date +%s.%N)
  if ! $bin replicate --workers 8 --until "$until" --relay-dir "$relay" --progress 0 ${SOAK_FLAGS:-} >"$work/$name.out" 2>"$work/$name.err"; then
    echo "$name $format $script $*: REPLICATE FAILED"; tail -5 "$work/$name.err"; return 1
  fi
  end=$(date +%s.%N)
  if ! $bin verify >"$work/$name.verify" 2>&1; then
    echo "$name $format $script $*: TARGET DIFFERS"; tail -5 "$work/$name.verify"; return 1
  fi
  printf '%s %s %s %s: equal, %s%s transactions applied in %.1f s\n' "$name" "$format" "$script" "$*" \
    "$live" "$(grep -oE 'applied [0-9]+' "$work/$name.out" "$work/$name.err" | tail -1 | cut -d' ' -f2)" "$(echo "$end - $start" | bc)"
}

for format in MIXED ROW; do
  f=${format,,}
  soak "ins_$f" "$format" oltp_insert || exit 1
  soak "del_$f" "$format" oltp_delete || exit 1
  soak "rw_$f" "$format" oltp_read_write || exit 1
  soak "bulk_$f" "$format" bulk_insert || exit 1
  soak "sec_$f" "$format" oltp_write_only --secondary=on || exit 1
  soak "noai_$f" "$format" oltp_write_only --auto_inc=off || exit 1
  soak "aria_$f" "$format" oltp_write_only --mysql-storage-engine=aria || exit 1
  soak "myi_$f" "$format" oltp_insert --mysql-storage-engine=myisam || exit 1
  soak "upk_$f" "$format" oltp_update_index --rand-type=uniform --secondary=on || exit 1
done
$bin sandbox down --dir "$dir" --remove >/dev/null 2>&1
