#!/bin/sh
# Make systemd see the new or changed units. A first install enables and
# starts nothing: configure /etc/default/evspool (rpm: /etc/sysconfig/evspool)
# first. An upgrade (deb: "configure" with the old version, rpm: 2 or more)
# restarts the units that run, so the new evspool takes over its spool;
# what is undelivered stays spooled across the restart.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	if { [ "$1" = configure ] && [ -n "$2" ]; } || { [ "$1" -ge 2 ] 2>/dev/null; }; then
		systemctl try-restart evspool.service evspool-ptp4l.service >/dev/null 2>&1 || true
	fi
fi
