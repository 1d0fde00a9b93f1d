package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		msg  string
		want Failure
	}{
		// Recorded (fixtures), U+2019 apostrophes as codex writes them.
		{"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 1:14 PM.", FailureQuota},
		{"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again later.", FailureQuota},
		{"You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase more credits or try again at 1:14 PM.", FailureQuota},
		{"You’ve hit your usage limit. Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus), or try again at 1:15 PM.", FailureQuota},
		{"You’ve hit your usage limit. To get more access now, send a request to your admin or try again at 1:15 PM.", FailureQuota},
		{"You’ve hit your usage limit. Try again at 1:15 PM.", FailureQuota},
		{"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Nov 22nd, 2026 12:21 AM.", FailureQuota},
		{"Quota exceeded. Check your plan and billing details.", FailureQuota},
		{"To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.", FailureAuth},
		{"unexpected status 401 Unauthorized: Incorrect API key provided: sk-mock. You can find your API key at https://platform.openai.com/account/api-keys., url: http://127.0.0.1:18557/v1/responses, request id: req_mock_1795263250044", FailureAuth},
		{"Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.", FailureContextWindow},
		{"We’re currently experiencing high demand, which may cause temporary errors.", FailureTransient},
		{"Selected model is at capacity. Please try a different model.", FailureTransient},
		{"exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock_1795263247331", FailureTransient},
		{"stream disconnected before completion: The model produced invalid content (mock server_error).", FailureTransient},
		{"stream disconnected before completion: Transport error: network error: error decoding response body", FailureTransient},
		{"stream disconnected before completion: stream closed before response.completed", FailureTransient},
		{"stream disconnected before completion: idle timeout waiting for SSE", FailureTransient},
		{"stream disconnected before completion: error sending request", FailureTransient},
		{"Reconnecting... waiting for network (Connection failed: error sending request)", FailureTransient},

		// Variants: ASCII apostrophe, case, source-described texts.
		{"You've hit your usage limit. Try again later.", FailureQuota},
		{"YOU’VE HIT YOUR USAGE LIMIT.", FailureQuota},
		{"You've hit your usage limit for GPT-5.5-Codex. Switch to another model now, or try again at 3:02 PM.", FailureQuota},
		{"Your workspace is out of credits. Add credits to continue.", FailureQuota},
		{"Your workspace is out of credits. Ask your workspace owner to refill in order to continue.", FailureQuota},
		{"You hit your spend cap set in your workspace. Increase your spend cap to continue.", FailureQuota},
		{"You hit your spend cap set by the owner of your workspace. Ask an owner to increase your spend cap to continue.", FailureQuota},
		{"unexpected status 429 Too Many Requests: You exceeded your current quota, please check your plan and billing details.", FailureQuota},
		{`unexpected status 429 Too Many Requests: {"error":{"type":"insufficient_quota"}}`, FailureQuota},
		{"Your access token could not be refreshed because your refresh token was already used. Please log out and sign in again.", FailureAuth},
		{"Your access token could not be refreshed because your refresh token has expired. Please log out and sign in again.", FailureAuth},
		{"Your access token could not be refreshed because you have since logged out or signed in to another account. Please sign in again.", FailureAuth},
		{"Failed to refresh token: 401 Unauthorized", FailureAuth},
		{"Not logged in", FailureAuth},
		{"Missing environment variable: `OPENAI_API_KEY`.", FailureAuth},
		{"unexpected status 400 Bad Request: This model's maximum context length is 128000 tokens.", FailureContextWindow},
		{`{"error":{"code":"context_length_exceeded"}}`, FailureContextWindow},
		{"Your input exceeds the context window of this model.", FailureContextWindow},
		{"unexpected status 502 Bad Gateway: upstream", FailureTransient},
		{"unexpected status 503 Service Unavailable: Unknown error", FailureTransient},
		{"exceeded retry limit, last status: 500 Internal Server Error", FailureTransient},
		{"Rate limit reached for gpt-5 in organization org-x on tokens per min", FailureTransient},

		// stderr-only failures.
		{"Error: thread/resume: thread/resume failed: no rollout found for thread id 01a1fdfc-0000-7000-8000-000000000000 (code -32600)", FailureResumeMissing},
		{"Error: thread/resume: thread/resume failed: thread 01a1fe06-da19-7320-bb56-f999f5fa1a4a already has an active writer (code -32600)", FailureActiveWriter},
		{"Error: thread/resume: thread/resume failed: session 01a23631-b3f6-7de1-867a-fd96f27c180c is archived. Run `codex unarchive 01a23631-b3f6-7de1-867a-fd96f27c180c` to unarchive it first. (code -32600)", FailureArchived},
		{"Error: thread/fork: thread/fork failed: session 01a23632-17cd-77a1-9b23-4bc79312e441 is archived. Run `codex unarchive 01a23632-17cd-77a1-9b23-4bc79312e441` to unarchive it first. (code -32600)", FailureArchived},
		{`Error: turn/start: turn/start failed: Input exceeds the maximum length of 1048576 characters. (code -32602), data: {"input_error_code":"input_too_large","max_chars":1048576,"actual_chars":1048601}`, FailureInputTooLarge},
		{InputTooLargeMessage, FailureInputTooLarge},

		// Not recognised.
		{"", FailureNone},
		{"Error: Model provider `nonexistent` not found", FailureNone},
		{"No prompt provided via stdin.", FailureNone},
		{"sandbox error: command timed out", FailureNone},
		{"unexpected status 400 Bad Request: Invalid value for 'reasoning.effort'", FailureNone},
	}
	for _, c := range cases {
		if got := Classify(c.msg); got != c.want {
			t.Errorf("Classify(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}

func TestClassifyStderr(t *testing.T) {
	cases := []struct {
		stderr string
		want   Failure
	}{
		{"Error: thread/resume: thread/resume failed: no rollout found for thread id 01a1fdfc-0000-7000-8000-000000000000 (code -32600)\n", FailureResumeMissing},
		{"2026-11-21T12:21:01.489932Z ERROR codex_core::session::session: failed to initialize thread persistence: thread-store conflict: thread 01a1fe06-da19-7320-bb56-f999f5fa1a4a already has an active writer\n" +
			"2026-11-21T12:21:01.489999Z ERROR codex_core::session: Failed to create session: thread-store conflict\n" +
			"Error: thread/resume: thread/resume failed: thread 01a1fe06-da19-7320-bb56-f999f5fa1a4a already has an active writer (code -32600)\n\nStack backtrace:\n   0: <unknown>\n", FailureActiveWriter},
		{"Error: Model provider `nonexistent` not found\n", FailureNone},
		{"No prompt provided via stdin.\n", FailureNone},
		{"Reading prompt from stdin...\n", FailureNone},
		{"WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries under temporary dir \"/tmp\" (codex_home: AbsolutePathBuf(\"/tmp/x\"))\n", FailureNone},
		{"Error: Not logged in. Run `codex login`.\n", FailureAuth},
		{"", FailureNone},
	}
	for _, c := range cases {
		if got := ClassifyStderr(c.stderr); got != c.want {
			t.Errorf("ClassifyStderr(%q) = %v, want %v", c.stderr, got, c.want)
		}
	}
}

func TestFailureString(t *testing.T) {
	want := map[Failure]string{
		FailureNone: "none", FailureQuota: "quota", FailureAuth: "auth",
		FailureContextWindow: "context_window", FailureResumeMissing: "resume_missing",
		FailureActiveWriter: "active_writer", FailureTransient: "transient", FailureInputTooLarge: "input_too_large",
		FailureArchived: "archived", Failure(42): "Failure(42)", Failure(-1): "Failure(-1)",
	}
	for f, s := range want {
		if f.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(f), f.String(), s)
		}
	}
	for _, f := range []Failure{FailureTransient, FailureActiveWriter} {
		if !f.Retryable() {
			t.Errorf("%v not retryable", f)
		}
	}
	for _, f := range []Failure{FailureNone, FailureQuota, FailureAuth, FailureContextWindow, FailureResumeMissing, FailureInputTooLarge} {
		if f.Retryable() {
			t.Errorf("%v retryable", f)
		}
	}
}

func TestIsRetryNotice(t *testing.T) {
	cases := []struct {
		msg          string
		want         bool
		attempt, max int
		cause        string
	}{
		{"Reconnecting... 1/2 (We’re currently experiencing high demand, which may cause temporary errors.)", true, 1, 2, "We’re currently experiencing high demand, which may cause temporary errors."},
		{"Reconnecting... 2/2 (exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock_1795263269802)", true, 2, 2, "exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock_1795263269802"},
		{"Reconnecting... 1/2 (stream disconnected before completion: The model produced invalid content (mock server_error).)", true, 1, 2, "stream disconnected before completion: The model produced invalid content (mock server_error)."},
		{"Reconnecting... waiting for network (Connection failed: error sending request)", true, 0, 0, "Connection failed: error sending request"},
		{"reconnecting... 3/5", true, 3, 5, ""},
		{"Reconnecting… 2/5 (x)", true, 2, 5, "x"},
		{"Reconnecting to the server", false, 0, 0, ""},
		{"We’re currently experiencing high demand, which may cause temporary errors.", false, 0, 0, ""},
		{"stream disconnected before completion: stream closed before response.completed", false, 0, 0, ""},
		{"Reconnect", false, 0, 0, ""},
		{"", false, 0, 0, ""},
	}
	for _, c := range cases {
		if got := IsRetryNotice(c.msg); got != c.want {
			t.Errorf("IsRetryNotice(%q) = %v, want %v", c.msg, got, c.want)
		}
		a, m, cause, ok := ParseRetryNotice(c.msg)
		if ok != c.want || a != c.attempt || m != c.max || cause != c.cause {
			t.Errorf("ParseRetryNotice(%q) = %d, %d, %q, %v", c.msg, a, m, cause, ok)
		}
		ev := Event{Type: TypeError, Message: c.msg}
		if ev.IsRetryNotice() != c.want {
			t.Errorf("Event.IsRetryNotice(%q) = %v", c.msg, !c.want)
		}
	}
	if (Event{Type: TypeTurnFailed, Message: "Reconnecting... 1/2 (x)"}).IsRetryNotice() {
		t.Error("turn.failed taken for a retry notice")
	}
}

// TestClassifyInputTooLargeRecording: the real CLI, given a prompt over
// MaxInputChars, prints only thread.started and exits 1 with the reason on
// stderr (testdata/input-too-large).
func TestClassifyInputTooLargeRecording(t *testing.T) {
	dir := filepath.Join("testdata", "input-too-large")
	stderr, err := os.ReadFile(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ClassifyStderr(string(stderr)); got != FailureInputTooLarge {
		t.Errorf("ClassifyStderr = %v, want %v", got, FailureInputTooLarge)
	}
	if !strings.Contains(string(stderr), InputTooLargeMessage) {
		t.Errorf("stderr lacks %q", InputTooLargeMessage)
	}
	stdout, err := os.ReadFile(filepath.Join(dir, "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if evs := readAll(t, stdout); len(evs) != 1 || evs[0].Type != TypeThreadStarted {
		t.Errorf("stdout events %+v, want only thread.started", evs)
	}
}
