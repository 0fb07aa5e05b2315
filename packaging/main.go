// Command packaging builds evspool's .deb and .rpm with nfpm (as a
// library, pinned in this module's go.mod, so that evspool's own module
// stays lean): the binary, a man page made from its --help texts, the
// systemd unit, /etc/default/evspool, and the alert rules, dashboard and
// examples of deploy/. Run it from this directory (make package does):
//
//	go run . -version 0.1.0 -arch amd64 -out ../dist
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	var o options
	flag.StringVar(&o.version, "version", "", "package version, e.g. 0.1.0 or 0.1.0~git1a2b3c4d (required)")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH to build for (amd64, arm64, ...)")
	flag.StringVar(&o.out, "out", "../dist", "directory the packages are written to")
	flag.Parse()
	pkgs, err := build(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "packaging: %v\n", err)
		os.Exit(1)
	}
	for _, p := range pkgs {
		fmt.Printf("%s  %d bytes\n", p.path, p.size)
	}
}
