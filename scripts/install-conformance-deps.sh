#!/usr/bin/env bash
# Installs what the conformance runner (make conformance) needs beyond
# make test's dependencies, from Debian's packages: mariadb-test (the
# mariadb-test program, mysqltest) and mariadb-test-data (MariaDB's test
# suites under /usr/share/mysql/mysql-test). Does nothing when both are there.
set -euo pipefail

"$(dirname "$0")/install-deps.sh"

need=()
command -v mariadb-test >/dev/null 2>&1 || need+=(mariadb-test)
[ -f /usr/share/mysql/mysql-test/include/mtr_warnings.sql ] || need+=(mariadb-test)
[ -d /usr/share/mysql/mysql-test/suite/rpl ] || need+=(mariadb-test-data)
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
echo "installing ${need[*]} from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
