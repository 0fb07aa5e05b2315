// Command packaging builds evspool's .deb and .rpm with nfpm (as a
// library, pinned in this module's go.mod, so that evspool's own module
// stays lean): the binary, a man page made from its --help texts, the
// systemd unit, /etc/default/evspool, and the alert rules, dashboard and
// examples of deploy/; with -image, the OCI image instead (image.go).
// Run it from this directory (make package and make image do):
//
//	go run . -version 0.1.0 -arch amd64 -out ../dist
//	go run . -image -version 0.1.0 -revision "$(git rev-parse HEAD)" -out ../dist
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
	flag.StringVar(&o.revision, "revision", "", "source revision for the image's label (git commit)")
	img := flag.Bool("image", false, "build the OCI image tarball, not the packages")
	flag.Parse()
	var pkgs []built
	var err error
	if *img {
		var b built
		b, err = buildImage(o)
		pkgs = []built{b}
	} else {
		pkgs, err = build(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "packaging: %v\n", err)
		os.Exit(1)
	}
	for _, p := range pkgs {
		fmt.Printf("%s  %d bytes\n", p.path, p.size)
	}
}
