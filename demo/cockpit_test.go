package demo

import (
	"bytes"
	"strings"
	"testing"
)

// The demo's attach drops tmux's exit lines, in whatever pieces they come,
// and passes everything else on.
func TestExitFilter(t *testing.T) {
	in := "batty: cockpit prefix C-a (yours: C-b): detach with C-a d to come back here\n[server exited]\n[detached (from session batty-demo)]\r\n[lost server]\nsome [server exited] in a line\n[exited]"
	for _, size := range []int{1, 3, len(in)} {
		var out bytes.Buffer
		f := &exitFilter{w: &out}
		for rest := in; rest != ""; {
			n := min(size, len(rest))
			if _, err := f.Write([]byte(rest[:n])); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		want := "batty: cockpit prefix C-a (yours: C-b): detach with C-a d to come back here\nsome [server exited] in a line\n"
		if out.String() != want {
			t.Errorf("pieces of %d: got %q, want %q", size, out.String(), want)
		}
	}
}

func TestCockpitKeysCmds(t *testing.T) {
	got := strings.Join(cockpitKeysCmds(4242), " ")
	if !strings.HasPrefix(got, "bind-key -n C-c run-shell -b kill -INT 4242 ; set-option -g status-right ") || !strings.Contains(got, "Ctrl-C: stop the demo") {
		t.Fatalf("cockpitKeysCmds = %q", got)
	}
}
