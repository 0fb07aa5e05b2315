package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// sampler records the peak anonymous memory of the current producer process
// (with its descendants: a contender's own daemon) and the peak disk usage of
// its spool directory while a run goes on.
type sampler struct {
	dir      string
	pid      atomic.Int64
	peakRSS  atomic.Int64
	peakDisk atomic.Int64
	stop     chan struct{}
	cpu      map[int]int64 // run time, ns, last read of every process watched or descended from one; the loop's
	roots    map[int]bool  // the processes watched, the loop's
	done     chan struct{}
}

const (
	rssEvery  = 20 * time.Millisecond
	diskEvery = 100 * time.Millisecond
)

func startSampler(dir string) *sampler {
	s := &sampler{dir: dir, stop: make(chan struct{}), done: make(chan struct{}), cpu: map[int]int64{}, roots: map[int]bool{}}
	go s.loop()
	return s
}

// watch switches sampling to another process (a restarted producer).
func (s *sampler) watch(pid int) { s.pid.Store(int64(pid)) }

// takeRSS returns the peak anonymous memory seen so far and starts over.
func (s *sampler) takeRSS() int64 { return s.peakRSS.Swap(0) }

func (s *sampler) loop() {
	defer close(s.done)
	rss := time.NewTicker(rssEvery)
	defer rss.Stop()
	disk := time.NewTicker(diskEvery)
	defer disk.Stop()
	for {
		select {
		case <-rss.C:
			if pid := s.pid.Load(); pid > 0 {
				var rss int64
				s.roots[int(pid)] = true
				for _, p := range treePids(int(pid)) {
					rss += rssAnon(p)
					if ns, _, err := processCPU(p, nil); err == nil {
						s.cpu[p] = max(s.cpu[p], ns)
					}
				}
				raise(&s.peakRSS, rss)
			}
		case <-disk.C:
			raise(&s.peakDisk, duBytes(s.dir))
		case <-s.stop:
			raise(&s.peakDisk, duBytes(s.dir))
			return
		}
	}
}

// close stops sampling and returns the peaks and the CPU time, ns, of
// every producer process and its descendants over their lives, as last
// read (up to rssEvery of each process's end, after a SIGKILL or its close
// after the drain, goes uncounted), and the descendants' part of it.
func (s *sampler) close() (rss, disk, cpuNs, descNs int64) {
	close(s.stop)
	<-s.done
	for p, ns := range s.cpu {
		cpuNs += ns
		if !s.roots[p] {
			descNs += ns
		}
	}
	return s.peakRSS.Load(), s.peakDisk.Load(), cpuNs, descNs
}

func raise(peak *atomic.Int64, v int64) {
	for {
		old := peak.Load()
		if v <= old || peak.CompareAndSwap(old, v) {
			return
		}
	}
}

// rssAnon reads RssAnon from /proc/<pid>/status, in bytes; 0 if the
// process is gone.
func rssAnon(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// duBytes is what du reports for dir: the blocks allocated to its files.
func duBytes(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	return total
}
