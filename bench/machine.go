package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine is what the results were measured on.
type Machine struct {
	Date        string  `json:"date"`
	CPUs        int     `json:"cpus"`
	CPUModel    string  `json:"cpu_model"`
	GoVersion   string  `json:"go_version"`
	Kernel      string  `json:"kernel"`
	SpoolFS     string  `json:"spool_fs"`
	SpoolDir    string  `json:"spool_dir"`
	MemTotal    string  `json:"mem_total"`
	LoadAvgFrom string  `json:"loadavg_start"`
	LoadAvgTo   string  `json:"loadavg_end,omitempty"`
	Evspool     string  `json:"evspool_commit,omitempty"`
	WallSeconds float64 `json:"wall_seconds,omitempty"`
}

func machineFacts(spoolDir, root string) Machine {
	return Machine{
		Date:        time.Now().UTC().Format(time.RFC3339),
		CPUs:        runtime.NumCPU(),
		CPUModel:    procField("/proc/cpuinfo", "model name"),
		GoVersion:   runtime.Version(),
		Kernel:      strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		SpoolFS:     fsType(spoolDir),
		SpoolDir:    spoolDir,
		MemTotal:    procField("/proc/meminfo", "MemTotal"),
		LoadAvgFrom: loadAvg(),
		Evspool:     gitCommit(root),
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func loadAvg() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// fsType names the file system holding dir, from statfs(2)'s magic number.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	names := map[int64]string{
		0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs",
		0x794C7630: "overlayfs", 0x2FC12FC1: "zfs", 0x6969: "nfs", 0x65735546: "fuse",
	}
	if n, ok := names[int64(st.Type)]; ok {
		return n
	}
	return "0x" + strconv.FormatInt(int64(st.Type), 16)
}

// gitCommit is the evspool commit measured, with "+dirty" if the tree has
// changes; empty outside a git checkout.
func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty=+dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
