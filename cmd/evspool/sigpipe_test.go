package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/verify"
)

// `evspool run ... | head -1`: the stdout reader goes away after one line.
// Before: killed by SIGPIPE (exit 141), lines read but not committed lost,
// no final log line. Now: the echo fails, is logged once, and every line is
// spooled and delivered; the exit status is the delivery's (0).
func TestStdoutReaderGoesAway(t *testing.T) {
	t.Parallel()
	const echoMsg = "stdout reader went away: events are still spooled and delivered, no longer echoed"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", []string{"run"}},
		{"exec", []string{"exec", "--", "sh", "-c", "while read l; do echo \"$l\"; done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock, spool := paths(t)
			rcv := startSink(t, sock)
			args := append([]string{tc.args[0], "--socket", sock, "--spool", spool, "--fsync=false",
				"--replay-linger", "20ms"}, tc.args[1:]...)
			cmd := exec.Command(binary, args...)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill() })

			sent := lines("ev", 0, 2000)
			_, err = io.WriteString(stdin, joinLines(sent[:100]))
			require.NoError(t, err)
			first, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, sent[0]+"\n", first)
			require.NoError(t, out.(*os.File).Close()) // head -1 exits
			_, err = io.WriteString(stdin, joinLines(sent[100:]))
			require.NoError(t, err, "evspool still reads its input")
			require.NoError(t, stdin.Close())

			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("evspool did not exit; logs:\n%s", stderr.String())
			}
			logs := stderr.String()
			require.Equal(t, 0, cmd.ProcessState.ExitCode(), logs)
			res := verify.Check(sent, waitLines(t, rcv, len(sent), 10*time.Second))
			require.True(t, res.OK(), res.String())
			require.Equal(t, 1, strings.Count(logs, echoMsg), logs)
			require.Contains(t, logs, "everything delivered")
		})
	}
}
