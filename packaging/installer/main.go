// Command evspool-install copies the evspool binary of the image it ships
// in into a directory, for a Kubernetes init container: the daemon's
// container then runs evspool from a volume they share, whatever its own
// image holds. It writes a temporary file beside the target, syncs it and
// renames it into place, so a container never runs a half-copied binary.
//
//	evspool-install /opt/evspool/bin   # writes /opt/evspool/bin/evspool, 0755
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// source is where the image holds evspool (packaging/image.go's imageBin).
const source = "/usr/local/bin/evspool"

func main() {
	if len(os.Args) != 2 || os.Args[1] == "" || os.Args[1][0] == '-' {
		fmt.Fprintln(os.Stderr, "usage: evspool-install DIR   (copies "+source+" to DIR/evspool)")
		os.Exit(2)
	}
	dst, err := install(source, os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "evspool-install: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("evspool-install: %s installed as %s\n", source, dst)
}

// install copies src to dir/evspool, mode 0755, and returns that path.
func install(src, dir string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst := filepath.Join(dir, "evspool")
	tmp, err := os.CreateTemp(dir, ".evspool-*")
	if err != nil {
		return "", fmt.Errorf("%w: mount a writable volume (an emptyDir) on %s", err, dir)
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	_, err = io.Copy(tmp, in)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return "", fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return dst, nil
}
