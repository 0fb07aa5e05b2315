//go:build linux

package emitter

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A receiver that restarts between the release of its idle connection and
// the start of the watch for its socket (a new socket where the released
// one was) is seen at once, not at the next event.
func TestWatchReturnSeesARestartBeforeIt(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "events.sock")
	listen := func() net.Listener {
		ln, err := net.Listen("unix", sock)
		require.NoError(t, err)
		return ln
	}
	ln := listen()
	released, err := os.Lstat(sock)
	require.NoError(t, err)
	opts := &Options{StateKey: JSONStateKey([]string{"k"}, ""), Network: "unix"}
	d := &drainer{addr: sock, opts: opts, ctx: context.Background()}
	d.w.releasedAt = released

	appeared, stop := d.watchReturn()
	select {
	case <-appeared:
		t.Fatal("the socket it released is no restart")
	default:
	}
	stop()

	ln.Close() // the receiver restarts: its socket goes and comes back
	os.Remove(sock)
	defer listen().Close()
	appeared, stop = d.watchReturn()
	defer stop()
	select {
	case <-appeared:
	default:
		t.Fatal("the socket replaced before the watch began was not seen")
	}
}
