package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/ledger"
)

// TestInspectDeadLetters lists dead letters, counts them in --json, and
// prints them raw for re-injection, bytes exact.
func TestInspectDeadLetters(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	leaveSpooled(t, sock, spool, lines("dl", 0, 3))
	rep := inspectJSON(t, "--spool", spool)
	require.Nil(t, rep.DeadLetters, "no dead-letter file, nothing shown")

	poison := []string{"CMD RESTART", "tab\there \x00 and \xff"}
	for i, p := range poison {
		require.NoError(t, ledger.AppendDeadLetter(spool, ledger.DeadLetter{Seq: uint64(10 + i), At: time.Now(), Attempts: 3, Data: []byte(p)}, 0))
	}
	rep = inspectJSON(t, "--spool", spool)
	require.NotNil(t, rep.DeadLetters)
	assert.Equal(t, 2, rep.DeadLetters.Events)
	assert.EqualValues(t, 2, rep.DeadLetteredEvents, "a field per loss kind")

	out, err := exec.Command(binary, "inspect", "--spool", spool, "--dead-letters").Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "seq=10")
	assert.Contains(t, string(out), "CMD RESTART")
	assert.Contains(t, string(out), `\x00`, "control bytes are quoted in the listing")

	raw, err := exec.Command(binary, "inspect", "--spool", spool, "--dead-letters", "--raw").Output()
	require.NoError(t, err)
	assert.Equal(t, strings.Join(poison, "\n")+"\n", string(raw), "bytes exact, one a line")

	out, err = exec.Command(binary, "inspect", "--spool", spool, "--raw").CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitUsage, ee.ExitCode())
	assert.Contains(t, string(out), "--raw goes with --dead-letters")
}
