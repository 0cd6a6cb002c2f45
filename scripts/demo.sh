#!/usr/bin/env bash
# The demo: a sandbox primary and target, a sysbench write workload on the
# primary, gapless replicating it with progress, and verify comparing every
# table. Settings through the environment: DEMO_SECONDS (workload length),
# DEMO_THREADS (sysbench clients), DEMO_DIR (sandbox folder).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${DEMO_SECONDS:-20}
threads=${DEMO_THREADS:-8}
dir=${DEMO_DIR:-./gapless-sandbox}
bin=./bin/gapless

$bin sandbox down --dir "$dir" --remove >/dev/null 2>&1 || true
rm -rf ./gapless-relay
echo "== starting a sandbox primary and target in $dir"
$bin sandbox up --dir "$dir"
eval "$($bin sandbox env --dir "$dir")"

port() { echo "$1" | sed -E 's#.*:([0-9]+)$#\1#'; }
sb=(sysbench oltp_write_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$(port "$GAPLESS_SOURCE")"
    --mysql-user=gapless --mysql-password=gapless --mysql-db=sbtest --tables=4 --table-size=10000)
mariadb --defaults-file="$dir/primary/my.cnf" -e "CREATE DATABASE IF NOT EXISTS sbtest"
echo "== sysbench: preparing 4 tables, then writing for ${seconds}s with $threads clients on the primary"
"${sb[@]}" prepare >/dev/null
"${sb[@]}" --threads="$threads" --time="$seconds" --report-interval=5 run | grep -E '^\[|transactions:'

until=$(mariadb --defaults-file="$dir/primary/my.cnf" -N -e "SELECT @@gtid_binlog_pos")
echo "== gapless replicate --until $until"
$bin replicate --until "$until"

echo "== gapless status"
$bin status
echo "== gapless verify"
$bin verify
echo
echo "the sandbox is still running: eval \"\$($bin sandbox env --dir $dir)\" to use it; $bin sandbox down --dir $dir --remove to delete it"
