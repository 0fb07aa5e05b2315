package main

import (
	"os"
	"path/filepath"
	"strings"
)

// Where each package keeps the settings evspool.service reads: Debian's
// /etc/default, the rpm distributions' /etc/sysconfig. The sources say
// /etc/default/evspool; the rpm gets copies with the path replaced.
const (
	debSettings = "/etc/default/evspool"
	rpmSettings = "/etc/sysconfig/evspool"
)

// writeRPMUnits writes the rpm's evspool.service and settings file into
// work and returns their paths: the sources with every debSettings
// replaced by rpmSettings.
func writeRPMUnits(work string) (unit, settings string, err error) {
	unit = filepath.Join(work, "evspool.service.rpm")
	settings = filepath.Join(work, "evspool.sysconfig")
	for src, dst := range map[string]string{"evspool.service": unit, "evspool.default": settings} {
		raw, err := os.ReadFile(src)
		if err != nil {
			return "", "", err
		}
		if err := os.WriteFile(dst, []byte(strings.ReplaceAll(string(raw), debSettings, rpmSettings)), 0o644); err != nil {
			return "", "", err
		}
	}
	return unit, settings, nil
}
