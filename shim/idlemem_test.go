package shim

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

func TestCleanFileSpans(t *testing.T) {
	const smaps = `00400000-00b28000 r-xp 00000000 fe:00 9986158                            /usr/bin/batty
Size:               7328 kB
Rss:                5368 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00b28000-0123b000 r--p 00728000 fe:00 9986158                            /usr/bin/batty
Rss:                4856 kB
Anonymous:             0 kB
0123b000-012a1000 rw-p 00e3b000 fe:00 9986158                            /usr/bin/batty
Rss:                 228 kB
Anonymous:           120 kB
3e07e2c00000-3e07e3400000 rw-p 00000000 00:00 0
Rss:                1488 kB
Anonymous:          1488 kB
7f44ef69c000-7f44ef6c2000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 148 kB
Anonymous:             0 kB
7f44ef86b000-7f44ef86f000 r--p 001cf000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                  16 kB
Anonymous:            16 kB
7f44ef870000-7f44ef871000 r--s 00000000 00:05 12                         /dev/shm/shared
Rss:                   4 kB
Anonymous:             0 kB
7f44ef872000-7f44ef873000 r-xp 00000000 fe:00 326270                     /usr/lib/not-yet-touched.so
Rss:                   0 kB
Anonymous:             0 kB
7f44ef874000-7f44ef875000 ---p 00000000 fe:00 326270                     /usr/lib/not-yet-touched.so
Rss:                   4 kB
Anonymous:             0 kB
7ffd1c3f0000-7ffd1c3f2000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   8 kB
Anonymous:             0 kB
7f44ef876000-7f44ef877000 r--p 00000000 fe:00 326271                     /usr/lib/no-anonymous-field.so
Rss:                   4 kB
`
	got, err := cleanFileSpans(strings.NewReader(smaps))
	if err != nil {
		t.Fatal(err)
	}
	// The binary's text and read-only data and the library's clean
	// read-only part; not the writable data, the heap, the relocated
	// (written) read-only part, a shared mapping, nothing resident, no
	// access, the vdso, nor a mapping whose own pages are not reported.
	want := []span{{0x400000, 0xb28000}, {0xb28000, 0x123b000}, {0x7f44ef69c000, 0x7f44ef6c2000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spans = %#v, want %#v", got, want)
	}
}

// rssFileKB is the file-backed resident memory of process pid, in kB.
func rssFileKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssFile:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no RssFile in /proc/%d/status", pid)
	return 0
}

// An idle shim drops the pages of its binary it mapped while starting and
// running a turn: after a turn its file-backed resident memory falls to
// less than half of what it was when the turn ended.
func TestIdleShimReleasesMemory(t *testing.T) {
	h := startShim(t, nil)
	h.send("m1", "hello")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.finished("m1", protocol.TurnCompleted)
	pid := h.p.Pid()
	after := rssFileKB(t, pid)
	deadline := time.Now().Add(eventWait)
	for {
		now := rssFileKB(t, pid)
		if now*2 < after {
			t.Logf("RssFile after the turn %d kB, idle %d kB", after, now)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle shim's RssFile still %d kB after %s (%d kB when the turn ended)", now, eventWait, after)
		}
		time.Sleep(50 * time.Millisecond) // the shim trims on its own timer
	}
}
