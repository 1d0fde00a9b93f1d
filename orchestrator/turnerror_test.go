package orchestrator

import "testing"

// TestTurnError: an agent's last error names the status, the failure kind
// when there is one, and the error, without an empty kind between.
func TestTurnError(t *testing.T) {
	for _, tc := range []struct{ status, failure, err, want string }{
		{"interrupted", "", "turn interrupted", "interrupted: turn interrupted"},
		{"failed", "exit", "codex exited 3", "failed exit: codex exited 3"},
		{"timed_out", "", "no answer in 10m", "timed_out: no answer in 10m"},
	} {
		if got := turnError(tc.status, tc.failure, tc.err); got != tc.want {
			t.Errorf("turnError(%q, %q, %q) = %q, want %q", tc.status, tc.failure, tc.err, got, tc.want)
		}
	}
}
