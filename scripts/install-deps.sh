#!/usr/bin/env bash
# Installs what gapless's demo, tests and benchmarks need from Debian's
# packages: MariaDB server and client, sysbench, mariadb-test with
# mariadb-test-data (MariaDB's test suites, for the conformance short list
# that make test runs), chromium (the live page's test in a headless
# browser, internal/e2e/http_test.go) and libfaketime (a source whose clock
# is off, internal/e2e/clock_test.go), galera-4 and rsync (a 3-node Galera
# cluster, internal/e2e/galera_test.go). Does nothing when they are already there.
set -euo pipefail

need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || need+=(mariadb-client)
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
command -v mariadb-test >/dev/null 2>&1 || need+=(mariadb-test)
[ -d /usr/share/mysql/mysql-test/suite/rpl ] || need+=(mariadb-test-data)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -e /usr/lib/galera/libgalera_smm.so ] || need+=(galera-4)
command -v rsync >/dev/null 2>&1 || need+=(rsync)
command -v lsof >/dev/null 2>&1 || command -v ss >/dev/null 2>&1 || need+=(lsof) # the rsync state transfer checks its port
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] || ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || need+=(libfaketime)
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "installing ${need[*]} from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
