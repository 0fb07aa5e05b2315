package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// formats are the packages made, in order.
var formats = []string{"deb", "rpm"}

type options struct {
	version  string    // package version; also what evspool --version prints
	arch     string    // GOARCH
	out      string    // output directory
	revision string    // the source revision (git commit), for the image's label and the changelog; optional
	date     time.Time // the image's created time (sourceDate); set by buildImage
}

type built struct {
	path string
	size int64
}

// validVersion is what both dpkg and rpm accept: a digit first, no '-'
// (rpm's separator of the release, which nfpm sets).
var validVersion = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~]*$`)

// build compiles evspool for o.arch and packages it in every format.
func build(o options) ([]built, error) {
	if !validVersion.MatchString(o.version) {
		return nil, fmt.Errorf("-version %q: give a version that starts with a digit, made of letters, digits and . + ~ (e.g. 0.1.0 or 0.1.0~git1a2b3c4d)", o.version)
	}
	date, err := sourceDate()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "evspool-package")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "evspool")
	if err := goBuild(o.arch, o.version, bin); err != nil {
		return nil, err
	}
	helpBin := bin // the man page is made from --help, so run a host binary
	if o.arch != runtime.GOARCH {
		helpBin = filepath.Join(work, "evspool-host")
		if err := goBuild(runtime.GOARCH, o.version, helpBin); err != nil {
			return nil, err
		}
	}
	man := filepath.Join(work, "evspool.1.gz")
	if err := writeManPage(helpBin, o.version, man); err != nil {
		return nil, err
	}
	copyright := filepath.Join(work, "copyright")
	chlog := filepath.Join(work, "changelog.yaml")
	overrides := filepath.Join(work, "lintian-overrides")
	if err := os.WriteFile(copyright, []byte(debCopyright(date.Year())), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(overrides, []byte(lintianOverrides), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(chlog, []byte(changelog(o.version, packageRelease, o.revision, date)), 0o644); err != nil {
		return nil, err
	}
	rpmUnit, rpmSettingsFile, err := writeRPMUnits(work)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{"VERSION": o.version, "RELEASE": packageRelease, "ARCH": o.arch, "BINARY": bin, "MANPAGE": man,
		"COPYRIGHT": copyright, "LINTIAN_OVERRIDES": overrides, "RPM_UNIT": rpmUnit, "RPM_SETTINGS": rpmSettingsFile}
	cfg, err := nfpm.ParseFileWithEnvMapping("nfpm.yaml", func(k string) string { return vars[k] })
	if err != nil {
		return nil, fmt.Errorf("nfpm.yaml: %w", err)
	}
	cfg.License, cfg.Changelog = licenseID, chlog
	var out []built
	for _, format := range formats {
		b, err := pack(&cfg, format, o.out, date)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", format, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// goBuild builds a static evspool (no cgo) whose --version is version.
func goBuild(arch, version, bin string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, "./cmd/evspool")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build (GOARCH=%s): %v\n%s", arch, err, out)
	}
	return nil
}

// packageRelease is the packages' release (the -1 of 0.1.0-1).
const packageRelease = "1"

// goBuildInstaller builds the image's evspool-install (installer/), static.
func goBuildInstaller(arch, bin string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./installer")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./installer (GOARCH=%s): %v\n%s", arch, err, out)
	}
	return nil
}

// pack writes one package under its conventional name, as nfpm's CLI does,
// every file in it dated date.
func pack(cfg *nfpm.Config, format, dir string, date time.Time) (built, error) {
	info, err := cfg.Get(format)
	if err != nil {
		return built{}, err
	}
	info.MTime = date
	info = nfpm.WithDefaults(info)
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return built{}, err
	}
	path := filepath.Join(dir, pkgr.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return built{}, err
	}
	info.Target = path
	err = pkgr.Package(info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return built{}, errors.Join(err, os.Remove(path))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return built{}, err
	}
	return built{path: path, size: fi.Size()}, nil
}
