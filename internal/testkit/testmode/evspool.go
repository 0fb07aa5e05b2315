package testmode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BinaryEnv names an evspool binary built beforehand. make test builds one,
// with -race, and hands it to every package whose tests run evspool, so it
// is built once a run; each TestMain builds its own when it is unset.
const BinaryEnv = "EVSPOOL_TEST_BINARY"

// Evspool returns the evspool binary for the tests to run: BinaryEnv's when
// set, else one built into dir (with -race if race). It also sets
// GORACE=atexit_sleep_ms=0 for the processes the tests start: a binary
// built with -race sleeps 1 s at every exit by default.
func Evspool(dir string, race bool) (string, error) {
	if err := os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")); err != nil {
		return "", err
	}
	if bin := os.Getenv(BinaryEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s: %w", BinaryEnv, err)
		}
		return bin, nil
	}
	bin := filepath.Join(dir, "evspool")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/evspool/evspool/cmd/evspool")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build evspool: %w\n%s", err, out)
	}
	return bin, nil
}
