package powercut

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tests that use bbolt or the spool run them in a child process (the
// test binary again, with childEnv set): see TestBoltOnPowercut for why.
const childEnv = "EVSPOOL_POWERCUT_CHILD"

func TestMain(m *testing.M) {
	if scenario := os.Getenv(childEnv); scenario != "" {
		if err := runScenario(scenario, os.Args[len(os.Args)-1]); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runScenario(scenario, arg string) error {
	switch {
	case strings.HasPrefix(scenario, "bolt-"):
		return boltChild(scenario, arg)
	case strings.HasPrefix(scenario, "spool-"):
		return spoolChild(scenario, arg)
	case scenario == "survey-events":
		return surveyChild(arg)
	}
	return fmt.Errorf("unknown scenario %q", scenario)
}

// runChild runs a scenario in a child process to its end and returns its
// output; it fails the test if the child fails.
func runChild(t *testing.T, scenario, arg string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
	// GORACE: a binary built with -race sleeps 1 s at exit by default.
	cmd.Env = append(os.Environ(), childEnv+"="+scenario, "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child %s: %s", scenario, out)
	return string(out)
}
