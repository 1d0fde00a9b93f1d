package slots

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ProcMemory is the Memory of this machine: MemAvailable of /proc/meminfo.
func ProcMemory() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read free memory: %w", err)
	}
	defer f.Close()
	return MemAvailable(f)
}

// MemAvailable reads MemAvailable (given in kB) from a meminfo's lines and
// returns it in bytes.
func MemAvailable(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo: MemAvailable %q: %w", strings.TrimSpace(rest), err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	return 0, errors.New("meminfo has no MemAvailable")
}
