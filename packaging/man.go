package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// manCommands are the commands whose --help the man page holds, in order.
var manCommands = []string{"run", "exec", "inspect", "sink", "demo"}

// writeManPage writes evspool(1), gzipped, made of the --help texts of bin
// (so that it cannot drift from them) and what the package installs.
func writeManPage(bin, version, path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH EVSPOOL 1 \"\" \"evspool %s\" \"User Commands\"\n", roffEscape(version))
	b.WriteString(".SH NAME\nevspool \\- deliver a daemon's event lines to a receiver through a durable on-disk spool\n")
	b.WriteString(".SH SYNOPSIS\n.B evspool\n.I command\n[flags]\n")
	top, err := helpText(bin)
	if err != nil {
		return err
	}
	b.WriteString(".SH DESCRIPTION\n" + literal(top))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range manCommands {
		text, err := helpText(bin, c)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, ".SS evspool %s\n%s", c, literal(text))
	}
	b.WriteString(manSystemd)
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression) // as gzip -9n, what Debian policy asks of a man page
	if err != nil {
		return err
	}
	if _, err := zw.Write([]byte(b.String())); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, gz.Bytes(), 0o644)
}

func helpText(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, append(args, "--help")...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s --help: %w", bin, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// literal sets text as is: no filling, escapes taken literally.
func literal(text string) string {
	var b strings.Builder
	b.WriteString(".nf\n")
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		line = roffEscape(line)
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			line = "\\&" + line // not a request
		}
		b.WriteString(line + "\n")
	}
	b.WriteString(".fi\n")
	return b.String()
}

func roffEscape(s string) string { return strings.ReplaceAll(s, `\`, `\e`) }

const manSystemd = `.SH SYSTEMD
The package installs
.I evspool.service
(Type=notify), which runs
.B evspool exec $EVSPOOL_OPTS \-\- $EVSPOOL_COMMAND
with both set in
.IR /etc/default/evspool ,
its spool under
.I /var/lib/evspool
(StateDirectory=).
Under a Type=notify unit (NOTIFY_SOCKET set) evspool sends READY=1 once its spool
is open and the command runs, a STATUS= line every 2 s (pending events, connected
or since when not, delivered, lost) that
.B systemctl status evspool
shows, WATCHDOG=1 only while its drainer moves (WatchdogSec=), and STOPPING=1 at a
stop signal. The command does not inherit NOTIFY_SOCKET.
.SH FILES
.TP
.I /etc/default/evspool
EVSPOOL_OPTS and EVSPOOL_COMMAND of evspool.service.
.TP
.I /var/lib/evspool
the unit's state directory; the spool is a subdirectory of it.
.TP
.I /usr/share/evspool/
Prometheus alert rules (alerts.yaml, prometheusrule.yaml) and a Grafana dashboard (dashboard.json).
.TP
.I /usr/share/doc/evspool/examples/
a unit for ptp4l, a Kubernetes DaemonSet with its metrics proxy, and a ServiceMonitor.
.SH SEE ALSO
.BR systemd.service (5),
.BR sd_notify (3)
`
