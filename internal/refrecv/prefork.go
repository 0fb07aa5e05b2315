package refrecv

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// The pre-fork receiver: a master process listens and a worker process it
// starts accepts and reads, as pre-fork servers, systemd socket activation
// (pid 1 listens) and socat's fork option do. SO_PEERCRED on a connection
// to it names the master; the worker is the one that reads, and it can die
// with lines unread while the master lives on and starts another.

// Environment variables that make the test binary a master or a worker.
const (
	preForkEnv       = "EVSPOOL_REFRECV_PREFORK"
	preForkWorkerEnv = "EVSPOOL_REFRECV_PREFORK_WORKER"
)

// PreForkConfig describes a pre-fork receiver on a Unix socket. Its worker
// serves each connection as the cloud-event-proxy child does (CEPConfig):
// a goroutine, a default bufio.Scanner reading ahead, PerLine to handle a
// line before it is appended to Out.
type PreForkConfig struct {
	Addr    string        // socket path
	Out     string        // handled lines, one a line
	PerLine time.Duration // handling time of one line
}

// Workers is the file each worker appends its pid to once it accepts.
func (c PreForkConfig) Workers() string { return c.Out + ".workers" }

// MaybeRunPreFork runs a pre-fork master or worker and never returns if
// this process was started as one; otherwise it returns at once. A test
// binary calls it first thing in TestMain.
func MaybeRunPreFork() {
	role, raw := "worker", os.Getenv(preForkWorkerEnv)
	if raw == "" {
		role, raw = "master", os.Getenv(preForkEnv)
	}
	if raw == "" {
		return
	}
	var cfg PreForkConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "refrecv prefork: bad config:", err)
		os.Exit(2)
	}
	var err error
	if role == "worker" {
		err = runWorker(cfg)
	} else {
		err = runMaster(cfg, raw)
	}
	fmt.Fprintf(os.Stderr, "refrecv prefork %s: %v\n", role, err)
	os.Exit(1)
}

// runMaster listens, then starts a worker, handing it the listener, and
// starts another each time one exits. Workers die with the master.
func runMaster(cfg PreForkConfig, raw string) error {
	runtime.LockOSThread() // Pdeathsig follows the thread that started the worker
	_ = os.Remove(cfg.Addr)
	ln, err := net.Listen("unix", cfg.Addr)
	if err != nil {
		return err
	}
	lf, err := ln.(*net.UnixListener).File()
	if err != nil {
		return err
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, preForkEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, preForkWorkerEnv+"="+raw)
	for {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env, cmd.Stderr, cmd.ExtraFiles = env, os.Stderr, []*os.File{lf}
		cmd.SysProcAttr = workerAttr()
		if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
			return fmt.Errorf("start worker: %w", err)
		}
	}
}

// runWorker accepts on the listener the master handed it (fd 3) and serves
// each connection like the cloud-event-proxy child.
func runWorker(cfg PreForkConfig) error {
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
	}
	out, err := os.OpenFile(cfg.Out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := appendLine(cfg.Workers(), fmt.Sprint(os.Getpid())); err != nil {
		return err
	}
	serve := CEPConfig{Network: "unix", Addr: cfg.Addr, Out: cfg.Out, PerLine: cfg.PerLine, RestartLine: DefaultRestartLine}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go cepServe(serve, c, out, false)
	}
}
