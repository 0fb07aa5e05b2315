package emitter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// ipcMessage is linuxptp-daemon's ipc.Message (pkg/ipc) as its encoder
// writes it: one JSON object a line, profile and iface left out when empty.
type ipcMessage struct {
	Version   int    `json:"version"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp,omitempty"`
	Profile   string `json:"profile,omitempty"`
	IFace     string `json:"iface,omitempty"`
	Values    any    `json:"values,omitempty"`
}

// ipcSender takes the place of the daemon's ipc.Cache and ipc.Link. Send
// spools the message and returns; the emitter delivers it in order, keeps
// the newest message of every (type, profile, iface) and answers the
// proxy's status_request with them. The daemon keeps no cache of its own.
type ipcSender struct{ em *emitter.Emitter }

func (s ipcSender) Send(ctx context.Context, msg ipcMessage) error {
	if msg.Version == 0 {
		msg.Version = 1
	}
	if msg.Timestamp == "" {
		msg.Timestamp = time.Now().UTC().Format(time.RFC3339Nano)
	}
	line, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return s.em.Emit(ctx, line)
}

// A PTP daemon speaking to cloud-event-proxy v2 with state keys on type,
// profile and iface (docs/daemon.md, "cloud-event-proxy v2: state keys
// instead of ipc.Cache"). The proxy restarts and starts empty; the next
// connection starts with the newest message of every key, so after one
// change it holds the whole current state again, the keys that did not
// change included.
func Example_stateKeys() {
	dir, err := os.MkdirTemp("", "evspool-state")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "events.sock")
	proxy, err := refrecv.StartV2(sock, nil) // like v2: one connection at a time, status_request on accept
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Kill()

	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{
		Stdout:       io.Discard,
		StateKey:     emitter.JSONStateKey([]string{"type", "profile", "iface"}, "cache_clear"),
		StateRequest: emitter.JSONType("status_request"),
		ReleaseIdle:  2 * time.Second, // let the proxy serve its other clients once quiet
		// The proxy handles each line as it reads it: Flush need not wait
		// the default 2 s replay linger (docs/delivery.md).
		ReplayLinger: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	ipc := ipcSender{em}
	ctx := context.Background()
	state := func(s string) map[string]string { return map[string]string{"state": s} }
	for _, msg := range []ipcMessage{
		{Type: "ptp_state", Profile: "ptp4l.0.config", IFace: "ens1f0", Values: state("FREERUN")},
		{Type: "ptp_state", Profile: "ptp4l.0.config", IFace: "ens1f1", Values: state("LOCKED")},
		{Type: "ptp_state", Profile: "ptp4l.0.config", IFace: "ens1f0", Values: state("LOCKED")},
		{Type: "clock_class", Profile: "ptp4l.0.config", IFace: "ens1f0", Values: map[string]int{"clock_class": 6}},
		{Type: "os_clock_state", Profile: "phc2sys", Values: state("LOCKED")},
		{Type: "sync_state", Profile: "ptp4l.0.config", Values: state("LOCKED")},
	} {
		if err := ipc.Send(ctx, msg); err != nil {
			log.Fatal(err)
		}
	}
	printState(proxy, refrecv.V2Key{Type: "sync_state"}, "LOCKED")

	proxy.Kill() // the proxy restarts: its cache is empty
	if err := proxy.Restart(); err != nil {
		log.Fatal(err)
	}
	if err := ipc.Send(ctx, ipcMessage{Type: "ptp_state", Profile: "ptp4l.0.config", IFace: "ens1f1", Values: state("HOLDOVER")}); err != nil {
		log.Fatal(err)
	}
	printState(proxy, refrecv.V2Key{Type: "ptp_state", Iface: "ens1f1"}, "HOLDOVER")

	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := em.Flush(fctx); err != nil {
		log.Fatal(err)
	}
	if err := em.Close(fctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// clock_class/ens1f0 6
	// os_clock_state LOCKED
	// ptp_state/ens1f0 LOCKED
	// ptp_state/ens1f1 LOCKED
	// sync_state LOCKED
	//
	// clock_class/ens1f0 6
	// os_clock_state LOCKED
	// ptp_state/ens1f0 LOCKED
	// ptp_state/ens1f1 HOLDOVER
	// sync_state LOCKED
}

// printState waits until the proxy has handled the last message sent
// (its key holds value), and so every one before it, and prints its cache
// as its REST API lists the resources.
func printState(proxy *refrecv.V2, last refrecv.V2Key, value string) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for wait := true; wait && proxy.Current()[last] != value; {
		select {
		case <-tick.C:
		case <-deadline:
			wait = false
		}
	}
	byName := map[string]string{}
	for k, v := range proxy.Current() {
		byName[k.String()] = v
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		fmt.Println(name, byName[name])
	}
	fmt.Println()
}
