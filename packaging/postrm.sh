#!/bin/sh
# postrm: systemd forgets the unit on removal; a purge also deletes the relay
# folders (the positions live on the targets, so nothing applied is lost).
# The gapless user stays, as Debian leaves system users in place.
set -e
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload
fi
if [ "$1" = purge ]; then
	rm -rf /var/lib/gapless
fi
