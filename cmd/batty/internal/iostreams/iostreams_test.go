package iostreams

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A test's streams are no terminal and carry no colour until set so;
// NO_COLOR turns colour off on a terminal too.
func TestTerminalAndColour(t *testing.T) {
	ios, in, out, errOut := Test()
	if ios.In != in || ios.Out != out || ios.ErrOut != errOut {
		t.Fatal("the streams are not the buffers")
	}
	if ios.IsStdinTTY() || ios.IsStdoutTTY() || ios.IsStderrTTY() || ios.ColorEnabled() || ios.ErrWidth() != 0 {
		t.Fatalf("a test's streams taken as a terminal: %+v", ios)
	}
	ios.SetStdinTTY(true)
	ios.SetStdoutTTY(true)
	ios.SetStderrTTY(true, 72)
	if !ios.IsStdinTTY() || !ios.IsStdoutTTY() || !ios.IsStderrTTY() || !ios.ColorEnabled() || ios.ErrWidth() != 72 {
		t.Fatalf("set as a terminal: %+v", ios)
	}
	ios.noColor = true
	if ios.ColorEnabled() {
		t.Fatal("colour with NO_COLOR set")
	}
	ios.SetStderrTTY(false, 72)
	if ios.ErrWidth() != 0 {
		t.Fatal("a width for a stream that is no terminal")
	}
}

// NO_COLOR set to anything but "" turns colour off (https://no-color.org).
func TestSystemReadsNoColor(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want bool
	}{{"", false}, {"1", true}, {"false", true}} {
		t.Setenv("NO_COLOR", tc.env)
		if got := System().NoColor(); got != tc.want {
			t.Errorf("NO_COLOR=%q: NoColor %v", tc.env, got)
		}
	}
}

// Buffer takes whole writes from several goroutines at once.
func TestBufferIsSafeForConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "%d-%d\n", i, j)
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
}
