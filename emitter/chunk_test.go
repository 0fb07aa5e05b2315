package emitter

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/delivery"
)

// Every write ends at a line's end, so a sender killed between two writes
// never leaves a torn line for the receiver to take as an event.
func TestChunkEndsAtLineEnd(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("x", 99) + "\n"
	long := strings.Repeat("y", 3*delivery.ChunkBytes) + "\n"
	for name, buf := range map[string]string{
		"short lines":          strings.Repeat(line, 1000),
		"a line over a chunk":  line + long + line,
		"exactly one chunk":    strings.Repeat(strings.Repeat("z", delivery.ChunkBytes/4-1)+"\n", 4),
		"one line only":        long,
		"fits in one write":    line,
		"long line then short": long + strings.Repeat(line, 200),
	} {
		t.Run(name, func(t *testing.T) {
			b := []byte(buf)
			var chunks int
			for len(b) > 0 {
				n := chunkEnd(b)
				require.Positive(t, n)
				require.Equal(t, byte('\n'), b[n-1], "chunk %d must end with a newline", chunks)
				require.True(t, n <= delivery.ChunkBytes || bytes.Count(b[:n], []byte{'\n'}) == 1, "an oversized chunk holds one line")
				b = b[n:]
				chunks++
			}
		})
	}
}
