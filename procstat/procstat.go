// Package procstat reads what Linux's /proc says of a process's memory and
// CPU time: the figures the benchmarks report (resident memory, CPU share
// over a window). It reads only; every function is safe for concurrent use.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of CPUTicks (100 on Linux).
const ClockTicks = 100

// CPUTicks returns the user and system clock ticks process pid has used
// (/proc/<pid>/stat). A process that is gone is an error.
func CPUTicks(pid int) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	// Fields after ")": state(0) … utime(11) stime(12).
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return u + st, nil
}

// KB returns the kB figure of the line starting with field in
// /proc/<pid>/<file>: "VmRSS:" in status (resident memory), "Pss:" in
// smaps_rollup (its proportional share). A process that is gone is an
// error.
func KB(pid int, file, field string) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/%s has no %s", pid, file, field)
}

// RSSKB is the resident memory of pid in kB (VmRSS).
func RSSKB(pid int) (int64, error) { return KB(pid, "status", "VmRSS:") }

// Process is one entry of /proc as List reads it.
type Process struct {
	PID, PPID int
	// State is the state letter of /proc/<pid>/stat ("R", "S", "Z" …).
	State string
	// Args is the command line (/proc/<pid>/cmdline split at NULs); nil
	// for a kernel thread or a zombie.
	Args []string
}

// List returns the processes of /proc; one that ends while it reads is
// left out.
func List() ([]Process, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 > len(s) {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		p := Process{PID: pid, PPID: ppid, State: f[0]}
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && len(cmd) > 0 {
			p.Args = strings.Split(strings.TrimSuffix(string(cmd), "\x00"), "\x00")
		}
		out = append(out, p)
	}
	return out, nil
}

// Under returns the pids of the processes whose working directory is dir
// or lies below it (those whose directory cannot be read are left out).
func Under(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, pid)
		}
	}
	return out
}
