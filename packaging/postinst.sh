#!/bin/sh
# postinst: the system user gapless runs as, and its relay folder
# /var/lib/gapless, 0700, which only it reads (relay logs hold the source's rows).
set -e
if [ "$1" = configure ]; then
	if ! getent passwd gapless >/dev/null; then
		adduser --system --group --home /var/lib/gapless --no-create-home \
			--gecos "gapless replication applier" gapless
	fi
	install -d -m 0700 -o gapless -g gapless /var/lib/gapless
	# The option files hold passwords: readable by root and gapless only.
	chown root:gapless /etc/gapless
	chmod 0750 /etc/gapless
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload
	fi
fi
