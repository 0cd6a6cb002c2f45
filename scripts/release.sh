#!/usr/bin/env bash
# release.sh (make release) writes what a release ships into dist/: a static
# gapless (CGO_ENABLED=0, -trimpath) stamped with its version, commit and
# build date, its man pages (one per command, from the commands' own help)
# and shell completions (bash, zsh, fish), as
#   dist/gapless_VERSION_linux_ARCH.tar.gz   the files, to unpack anywhere
#   dist/gapless_DEBVERSION_ARCH.deb         the Debian package (packaging/)
# VERSION, COMMIT and DATE come from the Makefile (git describe, the commit,
# the date); the Debian package is made with nfpm (packaging/main.go).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${VERSION:?set by make release}" "${COMMIT:?set by make release}" "${DATE:?set by make release}"
arch=$($GO env GOARCH)
name=gapless_${VERSION}_linux_${arch}
stage=dist/$name
rm -rf "$stage" "$stage.tar.gz" dist/gapless_*.deb
mkdir -p "$stage/man" "$stage/completions"

CGO_ENABLED=0 $GO build -trimpath \
	-ldflags "-X main.version=$VERSION -X main.commit=$COMMIT -X main.date=$DATE" \
	-o "$stage/gapless" ./cmd/gapless
"$stage/gapless" man --dir "$stage/man"
gzip -9n "$stage"/man/*.1
"$stage/gapless" completion bash >"$stage/completions/gapless.bash"
"$stage/gapless" completion zsh >"$stage/completions/_gapless"
"$stage/gapless" completion fish >"$stage/completions/gapless.fish"
cp README.md "$stage/"
cp -r docs "$stage/"
cp packaging/gapless@.service "$stage/"
cp packaging/example.cnf "$stage/example.cnf"

tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$DATE" \
	-C dist -czf "$stage.tar.gz" "$name"
echo "$stage.tar.gz"
(cd packaging && $GO run . --stage "../$stage" --version "$VERSION" --date "$DATE" --arch "$arch" --out ../dist)
