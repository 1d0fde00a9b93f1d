package codex

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const fixtureDir = "testdata/fixtures"

// notStdout lists .jsonl files in the fixture directory that are not
// codex's stdout: stdin-modes.jsonl is the recorder's summary of the stdin
// cases, one JSON object per case.
var notStdout = map[string]bool{"stdin-modes": true}

type fixture struct {
	name   string
	stdout []byte
	stderr string
	rc     int
}

func loadFixture(t testing.TB, name string) fixture {
	t.Helper()
	fx := fixture{name: name}
	var err error
	if fx.stdout, err = os.ReadFile(filepath.Join(fixtureDir, name+".jsonl")); err != nil {
		t.Fatal(err)
	}
	stderr, err := os.ReadFile(filepath.Join(fixtureDir, name+".stderr"))
	if err != nil {
		t.Fatal(err)
	}
	fx.stderr = string(stderr)
	rc, err := os.ReadFile(filepath.Join(fixtureDir, name+".rc"))
	if err != nil {
		t.Fatal(err)
	}
	if fx.rc, err = strconv.Atoi(strings.TrimSpace(string(rc))); err != nil {
		t.Fatalf("%s.rc: %v", name, err)
	}
	return fx
}

func fixtureNames(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtureDir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		if !notStdout[name] {
			names = append(names, name)
		}
	}
	if len(names) < 90 {
		t.Fatalf("only %d fixtures in %s", len(names), fixtureDir)
	}
	return names
}

// readAll replays a stream through Reader, failing on any line error.
func readAll(t testing.TB, data []byte) []Event {
	t.Helper()
	r := NewReader(bytes.NewReader(data), 0)
	var evs []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatalf("line %d: %v", r.Line(), err)
		}
		evs = append(evs, ev)
	}
}

// expectedFailure is the class of the turn.failed message of every failing
// fixture, by scenario (the name without "retry-" and ".resume").
var expectedFailure = map[string]Failure{
	"quota":                      FailureQuota,
	"quota-noreset":              FailureQuota,
	"quota-pro":                  FailureQuota,
	"quota-plan-business":        FailureQuota,
	"quota-plan-edu":             FailureQuota,
	"quota-plan-enterprise":      FailureQuota,
	"quota-plan-free":            FailureQuota,
	"quota-plan-go":              FailureQuota,
	"quota-plan-none":            FailureQuota,
	"quota-plan-team":            FailureQuota,
	"quota-reset-next-day-tz":    FailureQuota,
	"insufficient_quota":         FailureQuota,
	"insufficient_quota429":      FailureQuota,
	"usage_not_included":         FailureAuth,
	"http401":                    FailureAuth,
	"context":                    FailureContextWindow,
	"context400":                 FailureContextWindow,
	"context-then-resume.1-fail": FailureContextWindow,
	"http500":                    FailureTransient,
	"overloaded":                 FailureTransient,
	"ratelimit429":               FailureTransient,
	"drop":                       FailureTransient,
	"eof":                        FailureTransient,
	"failed":                     FailureTransient,
	"idle-timeout":               FailureTransient,
}

func scenario(name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(name, "retry-"), ".resume")
}

func TestFixturesReplay(t *testing.T) {
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			fx := loadFixture(t, name)
			evs := readAll(t, fx.stdout)
			if len(evs) == 0 {
				if fx.rc == 0 {
					t.Fatalf("rc 0 with empty stdout")
				}
				checkStderrOnly(t, fx)
				return
			}
			checkStream(t, fx, evs)
		})
	}
}

func checkStderrOnly(t *testing.T, fx fixture) {
	t.Helper()
	want := map[string]Failure{"resume-unknown-uuid": FailureResumeMissing}[fx.name]
	if want == FailureNone {
		t.Fatalf("unexpected empty-stdout fixture (rc %d, stderr %q)", fx.rc, fx.stderr)
	}
	if got := ClassifyStderr(fx.stderr); got != want {
		t.Errorf("ClassifyStderr(%q) = %v, want %v", fx.stderr, got, want)
	}
}

func checkStream(t *testing.T, fx fixture, evs []Event) {
	t.Helper()
	if evs[0].Type != TypeThreadStarted || !IsThreadID(evs[0].ThreadID) {
		t.Fatalf("first event %+v, want thread.started with a thread id", evs[0])
	}
	counts := map[string]int{}
	started := map[string]Item{}
	for i, ev := range evs {
		counts[ev.Type]++
		if ev.IsTerminal() && i != len(evs)-1 {
			t.Errorf("event %d: %s before the end", i, ev.Type)
		}
		switch ev.Type {
		case TypeThreadStarted, TypeTurnStarted, TypeTurnCompleted, TypeTurnFailed, TypeError:
		case TypeItemStarted, TypeItemCompleted:
			it := ev.Item
			if it == nil || it.Type == "" || !strings.HasPrefix(it.ID, "item_") {
				t.Fatalf("event %d: bad item %+v", i, it)
			}
			if ev.Type == TypeItemStarted {
				if it.Status != StatusInProgress && it.Type != ItemWebSearch {
					t.Errorf("event %d: started item status %q", i, it.Status)
				}
				started[it.ID] = *it
			} else if s, ok := started[it.ID]; ok && s.Type != it.Type {
				t.Errorf("event %d: item %s changed type %s -> %s", i, it.ID, s.Type, it.Type)
			}
		default:
			t.Errorf("event %d: unexpected type %q", i, ev.Type)
		}
	}
	if counts[TypeThreadStarted] != 1 || counts[TypeTurnStarted] != 1 {
		t.Errorf("counts %v: want one thread.started and one turn.started", counts)
	}
	last := evs[len(evs)-1]
	switch fx.rc {
	case 0:
		if last.Type != TypeTurnCompleted || last.Usage.InputTokens <= 0 || last.Usage.OutputTokens <= 0 {
			t.Fatalf("rc 0: last event %+v, want turn.completed with usage", last)
		}
		for _, ev := range evs {
			if ev.Type == TypeError && !ev.IsRetryNotice() {
				t.Errorf("rc 0 with a fatal error event %q", ev.Message)
			}
		}
	case 1:
		if last.Type != TypeTurnFailed || last.Message == "" {
			t.Fatalf("rc 1: last event %+v, want turn.failed", last)
		}
		prev := evs[len(evs)-2]
		if prev.Type != TypeError || prev.Message != last.Message || prev.IsRetryNotice() {
			t.Errorf("event before turn.failed: %+v, want error with the same message", prev)
		}
		for _, ev := range evs[:len(evs)-2] {
			if ev.Type == TypeError && !ev.IsRetryNotice() {
				t.Errorf("fatal error event %q before the last one", ev.Message)
			}
		}
		want, ok := expectedFailure[scenario(fx.name)]
		if !ok {
			t.Fatalf("no expected class for failing fixture; message %q", last.Message)
		}
		if got := Classify(last.Message); got != want {
			t.Errorf("Classify(%q) = %v, want %v", last.Message, got, want)
		}
		if fx.stderr != "" {
			t.Errorf("stderr %q, want empty", fx.stderr)
		}
	default:
		// Killed by the recorder (connection-refused retries forever).
		if last.IsTerminal() {
			t.Errorf("rc %d but terminal event %s", fx.rc, last.Type)
		}
		for _, ev := range evs[2:] {
			if !ev.IsRetryNotice() {
				t.Errorf("rc %d: event %+v, want only retry notices", fx.rc, ev)
			}
		}
	}
}

func fixtureEvents(t *testing.T, name string) []Event {
	t.Helper()
	return readAll(t, loadFixture(t, name).stdout)
}

func itemsOf(evs []Event, typ string) []*Item {
	var items []*Item
	for _, ev := range evs {
		if ev.Type == TypeItemCompleted && ev.Item.Type == typ {
			items = append(items, ev.Item)
		}
	}
	return items
}

func TestFixtureDetails(t *testing.T) {
	t.Run("multi", func(t *testing.T) {
		msgs := itemsOf(fixtureEvents(t, "multi"), ItemAgentMessage)
		if len(msgs) != 2 || msgs[1].Text != "ECHO:multi-fresh (final)" {
			t.Errorf("agent messages %+v", msgs)
		}
	})
	t.Run("empty", func(t *testing.T) {
		evs := fixtureEvents(t, "empty")
		if n := len(itemsOf(evs, ItemAgentMessage)); n != 0 {
			t.Errorf("%d agent messages, want 0", n)
		}
	})
	t.Run("reasoning", func(t *testing.T) {
		r := itemsOf(fixtureEvents(t, "reasoning"), ItemReasoning)
		if len(r) != 1 || r[0].Text != "Thinking about reasoning-fresh" {
			t.Errorf("reasoning %+v", r)
		}
	})
	t.Run("execfail", func(t *testing.T) {
		evs := fixtureEvents(t, "execfail")
		if evs[2].Type != TypeItemStarted || evs[2].Item.ExitCode != nil || evs[2].Item.Status != StatusInProgress {
			t.Errorf("started %+v", evs[2].Item)
		}
		c := itemsOf(evs, ItemCommandExecution)
		if len(c) != 1 || c[0].ExitCode == nil || *c[0].ExitCode != 3 || c[0].Status != StatusFailed ||
			c[0].AggregatedOutput != "EXEC_OK_execfail-fresh\nto-stderr\n" ||
			c[0].Command != "/bin/bash -lc 'echo EXEC_OK_execfail-fresh; echo to-stderr >&2; exit 3'" {
			t.Errorf("command %+v", c)
		}
	})
	t.Run("exectty", func(t *testing.T) {
		c := itemsOf(fixtureEvents(t, "exectty"), ItemCommandExecution)
		if len(c) != 1 || c[0].AggregatedOutput != "EXEC_OK_exectty-fresh\r\n" || *c[0].ExitCode != 0 {
			t.Errorf("command %+v", c)
		}
	})
	t.Run("patch", func(t *testing.T) {
		p := itemsOf(fixtureEvents(t, "patch"), ItemFileChange)
		want := []FileChange{{Path: "/srv/project/mock_patch_patch-fresh.txt", Kind: ChangeAdd}}
		if len(p) != 1 || p[0].Status != StatusCompleted || len(p[0].Changes) != 1 || p[0].Changes[0] != want[0] {
			t.Errorf("file change %+v", p)
		}
	})
	t.Run("websearch", func(t *testing.T) {
		evs := fixtureEvents(t, "websearch")
		for _, ev := range evs[2:4] {
			it := ev.Item
			if it.Type != ItemWebSearch || it.ID != "item_0" || it.CallID != "ws_000025" || it.Query != "mock query websearch-fresh" {
				t.Errorf("%s: %+v", ev.Type, it)
			}
		}
		if m := itemsOf(evs, ItemAgentMessage); m[0].ID != "item_1" || m[0].CallID != "" {
			t.Errorf("agent message %+v", m[0])
		}
	})
	t.Run("unknown-model-warning", func(t *testing.T) {
		evs := fixtureEvents(t, "unknown-model-warning")
		if evs[1].Type != TypeItemCompleted || evs[1].Item.Type != ItemError ||
			!strings.HasPrefix(evs[1].Item.Message, "Model metadata for `mock-model` not found.") || evs[2].Type != TypeTurnStarted {
			t.Errorf("events %+v %+v", evs[1], evs[2])
		}
	})
	t.Run("resume keeps thread id", func(t *testing.T) {
		evs := fixtureEvents(t, "context-then-resume.2-resume")
		if evs[0].ThreadID != "01a1fe08-c319-77a3-8452-6fd583b253e3" {
			t.Errorf("thread id %q", evs[0].ThreadID)
		}
	})
	t.Run("usage is cumulative", func(t *testing.T) {
		u2 := fixtureEvents(t, "context-then-resume.2-resume")[3].Usage
		u3 := fixtureEvents(t, "context-then-resume.3-resume-again")[3].Usage
		d := u3.Sub(u2)
		if d.InputTokens != 26927-17150 || d.OutputTokens != 14-9 || u2.Add(d) != u3 {
			t.Errorf("delta %+v", d)
		}
	})
	t.Run("retry notices", func(t *testing.T) {
		evs := fixtureEvents(t, "retry-flaky")
		if !evs[2].IsRetryNotice() || evs[len(evs)-1].Type != TypeTurnCompleted {
			t.Errorf("events %+v", evs)
		}
		a, m, cause, ok := ParseRetryNotice(evs[2].Message)
		if !ok || a != 1 || m != 2 || Classify(cause) != FailureTransient {
			t.Errorf("ParseRetryNotice = %d %d %q %v", a, m, cause, ok)
		}
	})
	t.Run("big", func(t *testing.T) {
		for _, name := range []string{"big", "big.resume"} {
			evs := fixtureEvents(t, name)
			msgs := itemsOf(evs, ItemAgentMessage)
			if len(msgs) != 1 || len(msgs[0].Text) != 5_000_000 || !strings.HasPrefix(msgs[0].Text, "BIG:big-") {
				t.Errorf("%s: agent message of %d bytes", name, len(msgs[0].Text))
			}
			if evs[len(evs)-1].Usage.OutputTokens < 1250000 {
				t.Errorf("%s: usage %+v", name, evs[len(evs)-1].Usage)
			}
		}
	})
}

// The fixtures were recorded with quotas resetting one hour after the
// request. The recording time is in the UUIDv7 thread id.
func TestFixtureRetryAt(t *testing.T) {
	cases := []struct {
		name string
		loc  *time.Location
	}{
		{"quota", time.UTC},
		{"quota-pro", time.UTC},
		{"quota-plan-team", time.UTC},
		{"quota-plan-none", time.UTC},
		{"retry-quota", time.UTC},
		// Recorded with TZ=Etc/GMT-11 (UTC+11): the reset falls on the next
		// local day, so codex printed the date.
		{"quota-reset-next-day-tz", time.FixedZone("UTC+11", 11*3600)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := fixtureEvents(t, c.name)
			now := uuidV7Time(t, evs[0].ThreadID)
			msg := evs[len(evs)-1].Message
			at, ok := ParseRetryAt(msg, now, c.loc)
			if !ok {
				t.Fatalf("ParseRetryAt(%q) failed", msg)
			}
			if d := at.Sub(now); d < 59*time.Minute || d > 61*time.Minute {
				t.Errorf("reset %v is %v after the request at %v, want 1h", at, d, now.UTC())
			}
			if at.Location() != time.UTC {
				t.Errorf("location %v, want UTC", at.Location())
			}
		})
	}
	at, ok := ParseRetryAt(fixtureEvents(t, "quota-reset-next-day-tz")[3].Message, time.Time{}, time.FixedZone("UTC+11", 11*3600))
	if want := time.Date(2026, 11, 21, 13, 21, 0, 0, time.UTC); !ok || !at.Equal(want) {
		t.Errorf("next-day reset = %v, %v; want %v", at, ok, want)
	}
	if _, ok := ParseRetryAt(fixtureEvents(t, "quota-noreset")[3].Message, time.Now(), time.UTC); ok {
		t.Error("quota-noreset: ok, want no reset time")
	}
}

// uuidV7Time returns the millisecond timestamp of a UUIDv7.
func uuidV7Time(t *testing.T, id string) time.Time {
	t.Helper()
	hex := strings.ReplaceAll(id, "-", "")[:12]
	ms, err := strconv.ParseInt(hex, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(ms)
}

func TestFixtureStderr(t *testing.T) {
	fx := loadFixture(t, "resume-unknown-uuid")
	if len(fx.stdout) != 0 || fx.rc != 1 {
		t.Fatalf("stdout %q rc %d", fx.stdout, fx.rc)
	}
	for _, name := range []string{"patch-readonly-sandbox", "prompt-argv"} {
		if got := ClassifyStderr(loadFixture(t, name).stderr); got != FailureNone {
			t.Errorf("%s: stderr of a successful run classified %v", name, got)
		}
	}
}

func TestStdinModesSummaryIsNotAnEventStream(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtureDir, "stdin-modes.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(data), 0)
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if !errors.Is(err, ErrNoType) || !IsLineError(err) {
			t.Fatalf("line %d: err %v, want a line error wrapping ErrNoType", r.Line(), err)
		}
	}
	if r.Line() != 8 {
		t.Errorf("read %d lines, want 8", r.Line())
	}
}
