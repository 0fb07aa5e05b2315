package emitter_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
)

type echoBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *echoBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *echoBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// FuzzWriter checks the Writer against a plain split of the same bytes,
// written in chunks of any size: every line within the limit is emitted
// whole and in order (seen in the echo), a longer one is refused, and the
// trailing partial line is emitted by Close.
func FuzzWriter(f *testing.F) {
	const limit = 16
	f.Add([]byte("a\nbb\n\nccc"), uint8(3))
	f.Add([]byte(strings.Repeat("x", 40)+"\nok\n"+strings.Repeat("y", 15)), uint8(7))
	f.Add([]byte("exactly 15 byte\n\r\x00\xff\n"), uint8(0))
	var echo echoBuffer
	dir := f.TempDir()
	em, err := emitter.Open(filepath.Join(dir, "none.sock"), filepath.Join(dir, "spool"),
		&emitter.Options{NoSync: true, MaxEventSize: limit, Stdout: &echo})
	require.NoError(f, err)
	f.Cleanup(func() { em.Close(context.Background()) })

	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		echo.take()
		w := em.Writer()
		step := int(chunk)%17 + 1
		for rest := data; len(rest) > 0; {
			n := min(step, len(rest))
			_, err := w.Write(rest[:n])
			if err != nil {
				require.ErrorIs(t, err, emitter.ErrEventTooLarge)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			require.ErrorIs(t, err, emitter.ErrEventTooLarge)
		}
		var want strings.Builder
		lines := bytes.Split(data, []byte{'\n'})
		for i, l := range lines {
			if (i == len(lines)-1 && len(l) == 0) || len(l)+1 > limit {
				continue
			}
			want.Write(l)
			want.WriteByte('\n')
		}
		require.Equal(t, want.String(), echo.take())
	})
}
