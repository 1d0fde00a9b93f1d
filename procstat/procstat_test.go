package procstat

import (
	"os"
	"testing"
)

func TestOwnProcess(t *testing.T) {
	pid := os.Getpid()
	if kb, err := RSSKB(pid); err != nil || kb <= 0 {
		t.Fatalf("RSSKB = %d, %v", kb, err)
	}
	sum := 0
	for i := range 20_000_000 {
		sum += i % 7
	}
	if ticks, err := CPUTicks(pid); err != nil || ticks <= 0 {
		t.Fatalf("CPUTicks = %d, %v (sum %d)", ticks, err, sum)
	}
	if _, err := KB(pid, "status", "NoSuchField:"); err == nil {
		t.Fatal("a missing field: no error")
	}
	if _, err := CPUTicks(-1); err == nil {
		t.Fatal("no process: no error")
	}
}

func TestListFindsThisProcess(t *testing.T) {
	ps, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.PID == os.Getpid() {
			if p.PPID != os.Getppid() || len(p.Args) == 0 || p.Args[0] != os.Args[0] {
				t.Fatalf("this process: %+v", p)
			}
			return
		}
	}
	t.Fatal("this process is not listed")
}
