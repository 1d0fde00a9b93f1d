package demo

import (
	"strings"
	"testing"
)

func TestCockpitKeysCmds(t *testing.T) {
	got := strings.Join(cockpitKeysCmds(4242), " ")
	if !strings.HasPrefix(got, "bind-key -n C-c run-shell -b kill -INT 4242 ; set-option -g status-right ") || !strings.Contains(got, "Ctrl-C: stop the demo") {
		t.Fatalf("cockpitKeysCmds = %q", got)
	}
}
