#!/usr/bin/env bash
# ci-package.sh (make test-package, run by .ci/run after make test) checks
# the Debian package make release wrote into dist/ the way an operator
# meets it, on this Debian machine, as root:
#   - dpkg -i installs it (the gapless user, /etc/gapless, /var/lib/gapless);
#   - systemd-analyze verify accepts gapless@.service (it reads the unit
#     files alone, so it runs in a container without systemd as PID 1;
#     the unit is not started, as no service manager runs there);
#   - the unit's own ExecStart line, %i replaced, run as the gapless user,
#     replicates a sandbox to --until from /etc/gapless/STREAM.cnf (every
#     setting there), and gapless verify finds the tables equal;
#   - man gapless-replicate renders, and gapless --version names the commit.
# The package is purged at the end (this machine may be shared).
set -euo pipefail
cd "$(dirname "$0")/.."
stream=ci
dir=$(mktemp -d /tmp/gapless-ci-package.XXXXXX)
chmod 0755 "$dir"
say() { echo "== $*"; }
fail() { echo "ci-package: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (dpkg -i, a system user)"
deb=$(ls dist/gapless_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no dist/gapless_*.deb: run make release first"
missing=()
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v man >/dev/null || missing+=(man-db)
command -v mariadbd >/dev/null || missing+=(mariadb-server)
command -v mariadb >/dev/null || missing+=(mariadb-client)
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cleanup() {
	status=$?
	/usr/bin/gapless sandbox down --dir "$dir/sandbox" --remove >/dev/null 2>&1 || true
	rm -f "/etc/gapless/$stream.cnf"
	dpkg --purge gapless >/dev/null 2>&1 || true
	rm -rf "$dir"
	exit $status
}
trap cleanup EXIT

say "dpkg -i $deb"
dpkg -i "$deb" >/dev/null
getent passwd gapless >/dev/null || fail "the package made no gapless user"
[ "$(stat -c '%a %U' /var/lib/gapless)" = "700 gapless" ] || fail "/var/lib/gapless is $(stat -c '%a %U' /var/lib/gapless), want 700 gapless"

say "gapless --version"
version=$(/usr/bin/gapless --version)
echo "$version"
commit=$(git rev-parse --short=12 HEAD)
case "$version" in *"commit $commit"*) ;; *) fail "--version does not name the commit $commit" ;; esac

say "systemd-analyze verify gapless@$stream.service"
unit=/usr/lib/systemd/system/gapless@.service
# verify checks the instance's ExecStart binary, User, and its man: link.
out=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify:\n$out"
[ -z "$out" ] || fail "systemd-analyze verify warns:
$out"

say "man gapless-replicate"
MANWIDTH=80 man gapless-replicate 2>/dev/null | grep -q -- '--defaults-file' || fail "man gapless-replicate does not render the page"

say "a sandbox, a workload, /etc/gapless/$stream.cnf"
/usr/bin/gapless sandbox up --dir "$dir/sandbox" >/dev/null
eval "$(/usr/bin/gapless sandbox env --dir "$dir/sandbox")"
client=(mariadb --defaults-file="$dir/sandbox/primary/my.cnf")
"${client[@]}" -e "CREATE DATABASE shop; USE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY, qty INT);
	INSERT INTO shop.orders SELECT seq, seq % 7 FROM seq_1_to_5000; UPDATE shop.orders SET qty = qty + 1 WHERE id % 3 = 0;"
until=$("${client[@]}" -N -e "SELECT @@gtid_binlog_pos")
install -m 0640 -o root -g gapless /dev/stdin "/etc/gapless/$stream.cnf" <<CNF
[gapless]
source = $GAPLESS_SOURCE
target = $GAPLESS_TARGET
workers = 4
progress = 0
log-format = json
[gapless-$stream]
until = $until
CNF
/usr/bin/gapless replicate --defaults-file "/etc/gapless/$stream.cnf" --stream "$stream" --print-defaults

execstart=$(sed -n 's/^ExecStart=//p' "$unit" | sed "s/%i/$stream/g")
say "as the unit runs it, user gapless: $execstart"
install -d -m 0700 -o gapless -g gapless "/var/lib/gapless/$stream" # the unit's StateDirectory=
start=$(date +%s)
runuser -u gapless -- $execstart || fail "the unit's command line failed"
say "reached --until $until in $(($(date +%s) - start)) s"
/usr/bin/gapless verify --defaults-file "/etc/gapless/$stream.cnf"
say "the package works"
