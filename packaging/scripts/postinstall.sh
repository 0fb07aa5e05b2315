#!/bin/sh
# Make systemd see the new or changed unit. The service is not enabled nor
# started: configure /etc/default/evspool first.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
