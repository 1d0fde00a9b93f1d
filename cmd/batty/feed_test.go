package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRenderFeedLine(t *testing.T) {
	ts := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	hhmmss := ts.Local().Format("15:04:05")
	for _, tc := range []struct{ line, want string }{
		{`{"type":"delivered","agent":"eng-1","message_id":"20301102T030405.1Z-1f2e3d4c","data":{"from":"architect","attempt":2}}`,
			"→ eng-1 ← architect: message 1f2e3d4c (attempt 2)"},
		{`{"type":"delivered","agent":"architect","message_id":"20301102T030405.1Z-1f2e3d4c.reply","data":{"from":"eng-1","attempt":1,"in_reply_to":"20301102T030405.1Z-1f2e3d4c"}}`,
			"→ architect ← eng-1: reply to message 1f2e3d4c"},
		{`{"type":"turn_finished","agent":"eng-1","message_id":"x-ab","data":{"status":"completed","duration_ms":6200,"input_tokens":9526,"output_tokens":41}}`,
			"✔ eng-1: message ab done in 6.2s · tokens in 9526 out 41"},
		{`{"type":"turn_finished","agent":"eng-1","message_id":"x-ab","detail":"boom","data":{"status":"failed","failure":"exit"}}`,
			"✘ eng-1: message ab failed (exit): boom"},
		{`{"type":"turn_finished","agent":"eng-1","message_id":"x-ab","data":{"status":"failed","requeued":true,"duration_ms":100}}`,
			"↺ eng-1: message ab failed after 100ms; it goes back to the queue"},
		{`{"type":"quota_blocked","agent":"eng-2","detail":"limit","data":{"retry_at":"2030-01-02T03:04:05Z"}}`,
			"⚠ ALERT quota exhausted (eng-2): limit; the team waits until " + ts.Local().Format("15:04")},
		{`{"type":"auth_required","agent":"a","detail":"401"}`, "⚠ ALERT codex needs a login (a): run `codex login`, then `batty resume` — 401"},
		{`{"type":"agent_failed","agent":"a","detail":"5 crashes"}`, "✘ ALERT a failed: 5 crashes"},
		{`{"type":"agent_parked","agent":"a","detail":"codex not found","data":{"fix":"install it"}}`, "⏸ ALERT a parked, its messages wait: codex not found — install it"},
		{`{"type":"agent_unparked","agent":"a"}`, "▶ a: codex runs again; its messages go out"},
		{`{"type":"network_waiting","agent":"a","detail":"Reconnecting... waiting for network"}`, "⚠ ALERT a: codex waits for the network (Reconnecting... waiting for network); its account's agents start nothing new until the API answers"},
		{`{"type":"network_restored","agent":"a"}`, "▶ the API answers again (a); held work goes on"},
		{`{"type":"retry_scheduled","agent":"a","message_id":"x-ab","detail":"boom","data":{"attempt":2,"max_attempts":3,"delay_ms":1500}}`, "↺ a: message ab failed (boom), retried in 1.5s (attempt 2 of 3)"},
		{`{"type":"message_failed","agent":"a","message_id":"x-ab","detail":"boom","data":{"attempts":3,"max_attempts":3}}`, "✘ ALERT a: message ab failed on its last try (3 of 3): boom"},
		{`{"type":"schedule_run_started","message_id":"20300102T030405.000000000Z-schedule.nightly.3","data":{"schedule":"nightly","run":3,"to":"manager","state":"running","runs_completed":2}}`,
			"⏲ schedule nightly: run 3 sent to manager (message schedule.nightly.3)"},
		{`{"type":"schedule_run_finished","message_id":"x-schedule.nightly.3","data":{"schedule":"nightly","run":3,"state":"waiting","runs_completed":3,"next_due":"2030-01-02T03:04:05Z"}}`,
			"⏲ schedule nightly: run 3 done (3 completed); next run " + ts.Local().Format("2006-01-02 15:04:05")},
		{`{"type":"schedule_run_finished","message_id":"x-schedule.nightly.3","data":{"schedule":"nightly","run":3,"state":"stopped","runs_completed":3,"next_due":"0001-01-01T00:00:00Z"}}`,
			"⏲ schedule nightly: run 3 done (3 completed)"},
		{`{"type":"schedule_run_finished","message_id":"x-schedule.nightly.3","detail":"failed exit: boom","data":{"schedule":"nightly","run":3,"state":"failed","runs_completed":3}}`,
			"⏲ schedule nightly: run 3 failed: failed exit: boom"},
		{`{"type":"schedule_stopped","detail":"max_runs (3) reached","data":{"schedule":"nightly","state":"stopped","runs_completed":3}}`,
			"■ schedule nightly stopped: max_runs (3) reached"},
		{`{"type":"schedule_failed","detail":"failed exit: boom","data":{"schedule":"nightly","state":"failed","runs_completed":3}}`,
			"✘ schedule nightly failed: failed exit: boom"},
		{`{"type":"warning","detail":"x\u001b[31my\nz"}`, "⚠ -: xy z"},
		{`{"type":"reply","agent":"eng-1","message_id":"20301102T030405.1Z-1f2e3d4c.reply","data":{"to":"architect","in_reply_to":"20301102T030405.1Z-1f2e3d4c"}}`,
			"✉ eng-1 answered architect: reply 1f2e3d4c.reply to message 1f2e3d4c"},
		{`{"type":"reply","agent":"eng-1","message_id":"x-ab.reply","data":{"to":"human","in_reply_to":"x-ab"}}`, "✉ eng-1 answered you: batty inbox"},
		{`{"type":"record_failed","agent":"a","message_id":"x-ab","detail":"message x-ab: no space left on device; trying again in 1s"}`,
			"⚠ ALERT a: cannot record the outcome, it waits and tries again: message x-ab: no space left on device; trying again in 1s"},
		{`{"type":"memory_low","detail":"100 MiB available, below limits.min_free_memory 1024 MiB","data":{"free":104857600,"min":1073741824}}`,
			"⚠ ALERT free memory is low, no new turn starts here: 100 MiB available, below limits.min_free_memory 1024 MiB"},
		{`{"type":"memory_recovered","detail":"2048 MiB available"}`, "▶ free memory is back (2048 MiB available); turns start again"},
		{`{"type":"record_recovered","agent":"a","message_id":"x-ab","detail":"recorded after 3 failed tries since 2030-01-02T03:04:05Z"}`,
			"▶ a: outcome of message ab recorded (recorded after 3 failed tries since 2030-01-02T03:04:05Z); the agent goes on"},
		// Details are agents' and models' words: an OSC 52 (clipboard),
		// an OSC 0 (window title), a CR or a bidirectional control never
		// reaches the terminal.
		{`{"type":"agent_failed","agent":"a","detail":"x\u001b]52;c;Y3VybA==\u0007y\u001b]0;pwned\u001b\\\rz\u202eevil\u2066\u200f"}`,
			`✘ ALERT a failed: xy z\u202eevil\u2066\u200f`},
		{"not json \x1b]52;c;eA==\x07\u202e", `? not json \u202e`},
		{`{"type":"something_new","agent":"a","detail":"d"}`, "something_new a d"},
		{`{"type":"review_waiting","agent":"eng-1","detail":"batty/eng-1 passed verify merged onto main at 0123456789ab and waits for your review"}`,
			"⏸ eng-1: batty/eng-1 passed verify merged onto main at 0123456789ab and waits for your review; batty review, then batty approve or reject"},
		{`{"type":"landing_approved","agent":"eng-1","detail":"batty/eng-1 approved at 0123456789ab; it lands once verified on the latest main"}`,
			"✔ eng-1: batty/eng-1 approved at 0123456789ab; it lands once verified on the latest main"},
		{`{"type":"landing_rejected","agent":"eng-1","detail":"split it","data":{"request":"20300102T030405Z-1f2e3d4c"}}`,
			"✘ eng-1: landing rejected in review (request 1f2e3d4c): split it"},
		{`not json`, "? not json"},
	} {
		got := renderFeedLine([]byte(tc.line), false)
		got = strings.TrimPrefix(got, "--:--:-- ")
		if got != tc.want {
			t.Errorf("renderFeedLine(%s)\n got %q\nwant %q", tc.line, got, tc.want)
		}
	}
	if got := renderFeedLine([]byte(`{"type":"state_changed","agent":"a"}`), false); got != "" {
		t.Errorf("state changes are left to the titles, got %q", got)
	}
	line := `{"time":"2030-01-02T03:04:05Z","type":"agent_failed","agent":"a","detail":"d"}`
	if got := renderFeedLine([]byte(line), true); got != feedRed+hhmmss+" ✘ ALERT a failed: d"+feedReset {
		t.Errorf("coloured: %q", got)
	}
}

// TestFeedWriterJoinsPartialLines: the follower hands over bytes as they
// come; a line split across writes is rendered once, whole.
func TestFeedWriterJoinsPartialLines(t *testing.T) {
	var out bytes.Buffer
	fw := &feedWriter{w: &out}
	in := `{"type":"agent_failed","agent":"a","detail":"d"}` + "\n" + `{"type":"reply","agent":"b"}` + "\n"
	for i := 0; i < len(in); i += 7 {
		fw.Write([]byte(in[i:min(i+7, len(in))]))
	}
	want := "--:--:-- ✘ ALERT a failed: d\n--:--:-- ✉ b answered you: batty inbox\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// FuzzRenderFeedLine: whatever a line of the event log holds, the feed
// renders at most one line of plain text (agents can write .batty/) and
// never panics.
func FuzzRenderFeedLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"turn_finished","agent":"a","data":{"duration_ms":"x","requeued":1}}`,
		`{"type":"delivered","data":{"attempt":1e300}}`,
		`{"type":"quota_blocked","data":{"retry_at":5}}`,
		`{"type":"","agent":"a"}`, `[]`, `{"data":null,"type":"reply"}`, "\x1b]0;title\x07",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got := renderFeedLine(line, false)
		if strings.ContainsAny(got, "\n\r\x1b\x07\u202e\u2066\u200f\u061c") {
			t.Fatalf("rendered %q", got)
		}
		if utf8.RuneCountInString(got) > 420 {
			t.Fatalf("rendered %d runes", utf8.RuneCountInString(got))
		}
	})
}
