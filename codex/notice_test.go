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

func TestTransientKind(t *testing.T) {
	cases := []struct {
		msg  string
		want Transient
	}{
		{"We’re currently experiencing high demand, which may cause temporary errors.", TransientServer},
		{"unexpected status 502 Bad Gateway", TransientServer},
		{"Selected model is at capacity. Please try a different model.", TransientOverloaded},
		{"exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock_1", TransientRateLimit},
		{"stream disconnected before completion: Transport error: network error: error decoding response body", TransientDropped},
		{"stream disconnected before completion: stream closed before response.completed", TransientDropped},
		{"stream disconnected before completion: idle timeout waiting for SSE", TransientStalled},
		{"Reconnecting... waiting for network (Connection failed: error sending request)", TransientUnreachable},
		{"stream disconnected before completion: error sending request", TransientUnreachable},
		{"You’ve hit your usage limit. Try again later.", TransientNone},
		{"Codex ran out of room in the model's context window.", TransientNone},
		{"unexpected status 401 Unauthorized: bad key", TransientNone},
		{"something odd", TransientNone},
		{"", TransientNone},
	}
	for _, c := range cases {
		if got := TransientKind(c.msg); got != c.want {
			t.Errorf("TransientKind(%q) = %v, want %v", c.msg, got, c.want)
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
				if got := TransientKind(ev.Message); got == TransientNone || got == TransientOther {
					t.Errorf("%s: TransientKind(%q) = %v", name, ev.Message, got)
				}
			}
		}
	}
}

func FuzzTransientKind(f *testing.F) {
	f.Add("Reconnecting... waiting for network (x)")
	f.Add("status 503")
	f.Fuzz(func(t *testing.T, s string) {
		c := TransientKind(s)
		if (c != TransientNone) != (Classify(s) == FailureTransient) {
			t.Fatalf("TransientKind(%q) = %v, Classify = %v", s, c, Classify(s))
		}
		_ = IsNetworkWait(s)
	})
}
