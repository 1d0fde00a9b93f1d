package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Machine says where a run happened.
type Machine struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
}

// String is the machine in one short line, for a table cell.
func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores, %s, %s", m.CPU, m.Cores, m.Kernel, m.Go)
}

// ThisMachine describes the machine it runs on: the CPU model from
// /proc/cpuinfo (else the architecture), the logical cores, the kernel
// (`uname -sr`: /proc/sys/kernel/{ostype,osrelease}), and goVersion (the
// toolchain that ran the benchmarks; runtime.Version() when empty).
func ThisMachine(goVersion string) Machine {
	m := Machine{CPU: runtime.GOARCH, Cores: runtime.NumCPU(), Kernel: runtime.GOOS, Go: goVersion}
	if m.Go == "" {
		m.Go = runtime.Version()
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if cpu := cpuModel(string(b)); cpu != "" {
			m.CPU = cpu
		}
	}
	ostype, err1 := os.ReadFile("/proc/sys/kernel/ostype")
	release, err2 := os.ReadFile("/proc/sys/kernel/osrelease")
	if err1 == nil && err2 == nil {
		m.Kernel = strings.TrimSpace(string(ostype)) + " " + strings.TrimSpace(string(release))
	}
	return m
}

// cpuModel returns the first "model name" of a /proc/cpuinfo text, with
// runs of spaces collapsed, or "".
func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}
