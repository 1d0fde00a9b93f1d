package shim

import (
	"testing"
)

// TestShimReleasesStartUpMemory: by the time a shim says it is ready,
// it has handed back the pages of its binary its start touched (every
// package's initialisation): a busy shim, never idle long enough for
// the idle trim, does not keep them. Measured on the test binary: a ready
// shim that did not trim kept 9–11 MB of it (with and without -race), one
// that did 4–5 MB.
func TestShimReleasesStartUpMemory(t *testing.T) {
	h := startShim(t, nil)
	got := rssFileKB(t, h.p.Pid())
	t.Logf("RssFile of a ready shim: %d kB", got)
	if got > 7<<10 {
		t.Errorf("a ready shim keeps %d kB of file-backed memory, want at most 7 MB", got)
	}
}
