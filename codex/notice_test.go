package codex

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIsNetworkWait(t *testing.T) {
	cases := []struct {
		msg  string
		want bool
	}{
		{"Reconnecting... waiting for network (Connection failed: error sending request)", true},
		{"Reconnecting… Waiting for network", true},
		{"Reconnecting... 1/2 (stream disconnected before completion: Transport error: network error: error decoding response body)", false},
		{"Reconnecting... 1/2 (waiting for network)", true},
		{"waiting for network", false}, // not a notice: a fatal error that mentions it
		{"Connection failed: error sending request", false},
		{"", false},
	}
	for _, c := range cases {
		if got := IsNetworkWait(c.msg); got != c.want {
			t.Errorf("IsNetworkWait(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}

// TestNetworkWaitRecording: every error line of the real CLI's
// connection-refused run is a network-wait notice.
func TestNetworkWaitRecording(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "fixtures", "connection-refused.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range readAll(t, b) {
		if ev.Type == TypeError {
			n++
			if !IsNetworkWait(ev.Message) {
				t.Errorf("%q is not a network wait", ev.Message)
			}
		}
	}
	if n == 0 {
		t.Fatal("no notices in the recording")
	}
}

func TestTransientCause(t *testing.T) {
	cases := []struct{ msg, want string }{
		{"We’re currently experiencing high demand, which may cause temporary errors.", "a server error"},
		{"unexpected status 502 Bad Gateway", "a server error"},
		{"Selected model is at capacity. Please try a different model.", "an overloaded model"},
		{"exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock_1", "a rate limit"},
		{"stream disconnected before completion: Transport error: network error: error decoding response body", "a dropped stream"},
		{"stream disconnected before completion: stream closed before response.completed", "a dropped stream"},
		{"stream disconnected before completion: idle timeout waiting for SSE", "a stalled stream"},
		{"Reconnecting... waiting for network (Connection failed: error sending request)", "an unreachable API"},
		{"stream disconnected before completion: error sending request", "an unreachable API"},
		{"You’ve hit your usage limit. Try again later.", ""},
		{"Codex ran out of room in the model's context window.", ""},
		{"unexpected status 401 Unauthorized: bad key", ""},
		{"something odd", ""},
		{"", ""},
	}
	for _, c := range cases {
		if got := TransientCause(c.msg); got != c.want {
			t.Errorf("TransientCause(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
	// Every transient message of the recordings has a named cause.
	for _, name := range []string{"http500", "overloaded", "ratelimit429", "drop", "eof", "failed", "idle-timeout"} {
		b, err := os.ReadFile(filepath.Join("testdata", "fixtures", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range readAll(t, b) {
			if ev.Type == TypeTurnFailed {
				if got := TransientCause(ev.Message); got == "" || got == "a transient failure" {
					t.Errorf("%s: TransientCause(%q) = %q", name, ev.Message, got)
				}
			}
		}
	}
}

func FuzzTransientCause(f *testing.F) {
	f.Add("Reconnecting... waiting for network (x)")
	f.Add("status 503")
	f.Fuzz(func(t *testing.T, s string) {
		c := TransientCause(s)
		if (c != "") != (Classify(s) == FailureTransient) {
			t.Fatalf("TransientCause(%q) = %q, Classify = %v", s, c, Classify(s))
		}
		_ = IsNetworkWait(s)
	})
}
