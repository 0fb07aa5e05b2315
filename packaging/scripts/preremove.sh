#!/bin/sh
# On removal (deb: "remove", rpm: 0), not on upgrade: stop and disable the
# units. What is undelivered stays in /var/lib/evspool.
if [ -d /run/systemd/system ] && { [ "$1" = remove ] || [ "$1" = 0 ]; }; then
	systemctl --no-reload disable --now evspool.service evspool-ptp4l.service >/dev/null 2>&1 || true
fi
