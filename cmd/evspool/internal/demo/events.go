package demo

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

// ptpEvents are real-shaped lines of linuxptp traffic to cloud-event-proxy.
//
//go:embed testdata/ptp-events.txt
var ptpEvents string

// stamp matches the "ptp4l[1095550.490]" prefix of a line.
var stamp = regexp.MustCompile(`^([A-Za-z0-9_-]+)\[[0-9.]+\]`)

// templates returns the lines that have a stamp to make unique.
func templates() []string {
	var out []string
	for _, l := range strings.Split(ptpEvents, "\n") {
		if stamp.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// event returns the i-th event: a template in turn, its stamp replaced by an
// uptime unique to i, so that every event can be told apart on arrival.
func event(tpl []string, i int) string {
	t := tpl[i%len(tpl)]
	loc := stamp.FindStringSubmatchIndex(t)
	return fmt.Sprintf("%s[%d.%03d]%s", t[loc[2]:loc[3]], 1095550+i/1000, i%1000, t[loc[1]:])
}
