package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuSample is the CPU time (user + system) of a process and its
// descendants (a contender's own daemon, syslog-ng's) at one moment, read two
// ways: the sum of its threads' run time from /proc/<pid>/task/*/schedstat,
// in ns, and utime + stime from /proc/<pid>/stat, in clock ticks. Both count
// the same time (the kernel scales utime and stime to the run time); the
// ticks are 10 ms, too coarse for 200 events at 100/s, so the figures come
// from the run time and the ticks are kept as a check. A thread that exits
// between two samples takes its run time out of the sum: windows are taken
// with runBetween. The ticks count exited threads too.
type cpuSample struct {
	at    time.Time
	runNs int64
	ticks int64
	tasks map[string]int64 // "pid/tid" -> run time, ns: see runBetween
}

// runBetween is the run time, ns, the threads alive at b ran since a. A
// thread that exited in between (syslog-ng ends idle workers) takes its
// time out of b's sum, which would make the difference short, even
// negative; counting only b's threads, each from its reading at a (or from
// its start, if born since), leaves out just the exited threads' last
// moments.
func runBetween(a, b cpuSample) int64 {
	if a.tasks == nil || b.tasks == nil {
		return b.runNs - a.runNs
	}
	var ns int64
	for k, v := range b.tasks {
		ns += v - a.tasks[k]
	}
	return ns
}

// userHZ is the unit of /proc/<pid>/stat's times on Linux.
const userHZ = 100

func readCPU(pid int) (cpuSample, error) {
	s := cpuSample{at: time.Now(), tasks: map[string]int64{}}
	for i, p := range treePids(pid) {
		ns, ticks, err := processCPU(p, s.tasks)
		if err != nil {
			if i == 0 {
				return s, err
			}
			continue // a descendant that exited
		}
		s.runNs, s.ticks = s.runNs+ns, s.ticks+ticks
	}
	return s, nil
}

// processCPU is one process's threads' run time, ns, and its utime + stime,
// ticks; each thread's run time goes into tasks too, if not nil.
func processCPU(pid int, tasks map[string]int64) (runNs, ticks int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	if ticks, err = parseStatTicks(string(stat)); err != nil {
		return 0, 0, err
	}
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(paths) == 0 {
		return 0, 0, fmt.Errorf("no /proc/%d/task/*/schedstat", pid)
	}
	for _, t := range paths {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited
		}
		ns, err := parseSchedstat(string(b))
		if err != nil {
			return 0, 0, err
		}
		runNs += ns
		if tasks != nil {
			tasks[strconv.Itoa(pid)+"/"+filepath.Base(filepath.Dir(t))] = ns
		}
	}
	return runNs, ticks, nil
}

// treePids is pid and its descendants, pid first, from
// /proc/<pid>/task/*/children.
func treePids(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, k := range kids {
			b, err := os.ReadFile(k)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// parseStatTicks returns utime + stime from a /proc/<pid>/stat line. The
// command name, in parentheses, may hold spaces and parentheses, so fields
// are counted from the last ')'.
func parseStatTicks(line string) (int64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name in %q", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat: utime %q, stime %q", f[11], f[12])
	}
	return u + s, nil
}

// parseSchedstat returns the run time, ns, the first of schedstat's three
// fields.
func parseSchedstat(line string) (int64, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat: %q", line)
	}
	return strconv.ParseInt(f[0], 10, 64)
}
