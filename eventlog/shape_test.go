package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/project"
)

// openLog opens an event log in a fresh state directory; errors are
// collected in errs.
func openLog(t *testing.T, errs *[]error) (*Log, project.Layout) {
	t.Helper()
	lay := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
	if err := lay.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(lay, func(err error) { *errs = append(*errs, err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, lay
}

// An observer in the daemon's process sees the event a reader of the log
// reads, its payload of its kind's type; an instant not known is left out
// of the line.
func TestObserverSeesTheShapeOfTheLog(t *testing.T) {
	var errs []error
	l, lay := openLog(t, &errs)
	var seen []Event
	l.SetObserver(func(e Event) { seen = append(seen, e) })
	at := time.Now().Add(time.Hour).Round(0)
	l.Append(Event{Type: EvQuotaBlocked, Agent: "a", Data: QuotaBlocked{Account: "work", Agents: []string{"a", "b"}, ResumeAt: at}})
	l.Close()
	if errs != nil {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(lay.EventsLog())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "retry_at") {
		t.Fatalf("a zero time was written: %s", b)
	}
	read, err := Decode([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !reflect.DeepEqual(seen[0], read) {
		t.Fatalf("observer saw %#v\nthe log holds %#v", seen, read)
	}
	q, ok := seen[0].Data.(QuotaBlocked)
	if !ok || !q.ResumeAt.Equal(at) || !q.RetryAt.IsZero() || q.Account != "work" || !reflect.DeepEqual(q.Agents, []string{"a", "b"}) {
		t.Fatalf("payload %#v", seen[0].Data)
	}
}

// A payload of another kind's type is written, and reported: its readers
// would not get it as built.
func TestAppendReportsAPayloadOfAnotherKind(t *testing.T) {
	var errs []error
	l, _ := openLog(t, &errs)
	var seen []Event
	l.SetObserver(func(e Event) { seen = append(seen, e) })
	l.Append(Event{Type: EvDelivered, Data: Reply{To: "a"}})
	l.Append(Event{Type: EvDelivered, Data: &Delivered{From: "a"}})
	l.Append(Event{Type: EvDelivered, Data: Delivered{From: "a"}})
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "eventlog.Reply") || !strings.Contains(errs[1].Error(), "*eventlog.Delivered") {
		t.Fatalf("errors %v", errs)
	}
	if len(seen) != 3 || seen[2].Data != (Delivered{From: "a"}) {
		t.Fatalf("seen %#v", seen)
	}
}

// Each kind's payload is written with the keys of its "data" pinned here
// and reads back as it was built. The keys are those of the lines written
// before the payloads had types (TestLinesWrittenBeforeTypesDecode).
func TestPayloadShapes(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	const atJSON = `"2030-01-02T03:04:05.000000006Z"`
	for _, tc := range []struct {
		kind string
		p    Payload
		want string
	}{
		{EvDaemonStarted, DaemonStarted{PID: 7, Team: "t"}, `{"pid":7,"team":"t"}`},
		{EvShimStarted, ShimStarted{PID: 8}, `{"pid":8,"thread_id":""}`},
		{EvAppServerDied, AppServerDied{PID: 9, Account: "/h/.codex", Agents: []string{"a", "b"}}, `{"pid":9,"account":"/h/.codex","agents":["a","b"]}`},
		{EvShimExited, ShimExited{ExitCode: 3}, `{"exit_code":3}`},
		{EvAgentFailed, AgentFailed{Failures: 2, RetryAt: at}, `{"failures":2,"retry_at":` + atJSON + `}`},
		{EvThreadChanged, ThreadChanged{ThreadID: "t2", Previous: "t1"}, `{"thread_id":"t2","previous":"t1"}`},
		{EvDelivered, Delivered{From: "a", Attempt: 1}, `{"from":"a","attempt":1}`},
		{EvDelivered, Delivered{From: "a", Attempt: 2, InReplyTo: "m0"}, `{"from":"a","attempt":2,"in_reply_to":"m0"}`},
		{EvTurnFinished, TurnFinished{Status: "failed", Failure: "quota", Attempt: 1, Requeued: true},
			`{"status":"failed","failure":"quota","attempt":1,"requeued":true}`},
		{EvTurnFinished, TurnFinished{Status: "completed", InputTokens: 10, OutputTokens: 2, DurationMS: 1500, ThreadID: "t", Attempt: 1, Alerted: true, Cancelled: true},
			`{"status":"completed","failure":"","input_tokens":10,"output_tokens":2,"duration_ms":1500,"thread_id":"t","attempt":1,"requeued":false,"alerted":true,"cancelled":true}`},
		{EvCancelled, Cancelled{From: "m", Queue: "@eng"}, `{"from":"m","queue":"@eng"}`},
		{EvCancelled, Cancelled{From: "m", Interrupted: true}, `{"from":"m","interrupted":true}`},
		{EvReply, Reply{To: "human", InReplyTo: "m1", Preview: "ok", Outcome: "completed"}, `{"to":"human","in_reply_to":"m1","preview":"ok","outcome":"completed"}`},
		{EvPaused, Paused{Kind: "auth"}, `{"kind":"auth"}`},
		{EvQuotaBlocked, QuotaBlocked{Account: "w", Agents: []string{"a"}, ResumeAt: at, RetryAt: at, Switched: true},
			`{"account":"w","agents":["a"],"resume_at":` + atJSON + `,"retry_at":` + atJSON + `,"switched":true}`},
		{EvQuotaProbe, QuotaProbe{Result: ProbeSent}, `{"result":"sent"}`},
		{EvQuotaProbe, QuotaProbe{Account: "w", Result: ProbeLimit, ResumeAt: at, FailedProbes: 2},
			`{"account":"w","result":"limit","resume_at":` + atJSON + `,"failed_probes":2}`},
		{EvQuotaResumed, QuotaResumed{Account: "w"}, `{"account":"w"}`},
		{EvQuotaResumed, QuotaResumed{Agents: []string{"a"}}, `{"agents":["a"]}`},
		{EvAccountSwitched, AccountSwitched{From: "w", To: "s", Agents: []string{"a"}, Reason: "limit", RetryAt: at},
			`{"from":"w","to":"s","agents":["a"],"reason":"limit","retry_at":` + atJSON + `}`},
		{EvQuotaWarning, QuotaWarning{Account: "w", Window: "primary", UsedPct: 85.5, WarnPct: 80, Agents: []string{"a"}, ResetsAt: at},
			`{"account":"w","window":"primary","used_pct":85.5,"warn_pct":80,"agents":["a"],"resets_at":` + atJSON + `}`},
		{EvBudgetWarning, Budget{Budget: "team/hour", For: "team", Per: "hour", UsedTokens: 900, BudgetTokens: 1000, WarnAtPct: 80, WindowStart: at, Until: at},
			`{"budget":"team/hour","for":"team","per":"hour","used_tokens":900,"budget_tokens":1000,"warn_at_pct":80,"window_start":` + atJSON + `,"until":` + atJSON + `}`},
		{EvBudgetReached, Budget{Budget: "a/day", For: "a", Per: "day", UsedTokens: 5, BudgetTokens: 5, WarnAtPct: 80},
			`{"budget":"a/day","for":"a","per":"day","used_tokens":5,"budget_tokens":5,"warn_at_pct":80}`},
		{EvBudgetResumed, BudgetResumed{Budget: "a/day", Until: at}, `{"budget":"a/day","until":` + atJSON + `}`},
		{EvAuthRequired, AuthRequired{Fix: "run: codex login"}, `{"fix":"run: codex login"}`},
		{EvContextExhaust, ContextExhausted{Attempts: 3, WindowTokens: 272000}, `{"attempts":3,"window_tokens":272000}`},
		{EvContextRetry, ContextRetry{Step: "fresh_thread", ThreadID: "t"}, `{"step":"fresh_thread","thread_id":"t"}`},
		{EvHandoff, Handoff{Archived: "t"}, `{"archived":"t"}`},
		{EvThreadReset, ThreadReset{Archived: "t"}, `{"archived":"t"}`},
		{EvAgentParked, AgentParked{Kind: "not_found", Fix: "install it"}, `{"kind":"not_found","fix":"install it"}`},
		{EvHostUnreachable, Host{Host: "b1"}, `{"host":"b1"}`},
		{EvHostReachable, Host{Host: "b1"}, `{"host":"b1"}`},
		{EvWarning, Warning{Account: "s", Kind: "auth"}, `{"account":"s","kind":"auth"}`},
		{EvWarning, Warning{Paths: []string{"sub"}}, `{"paths":["sub"]}`},
		{EvNetworkWaiting, Network{Account: "w", Since: at}, `{"account":"w","since":` + atJSON + `}`},
		{EvNetworkRestored, Network{Account: "w", Since: at, HeldMS: 40}, `{"account":"w","since":` + atJSON + `,"held_ms":40}`},
		{EvRetryScheduled, RetryScheduled{Attempt: 2, MaxAttempts: 3, Status: "failed", Failure: "stream", DelayMS: 15, NotBefore: at, Note: "n"},
			`{"attempt":2,"max_attempts":3,"status":"failed","failure":"stream","delay_ms":15,"not_before":` + atJSON + `,"note":"n"}`},
		{EvMessageFailed, MessageFailed{Attempts: 3, MaxAttempts: 3, Status: "failed", Failure: "stream"},
			`{"attempts":3,"max_attempts":3,"status":"failed","failure":"stream"}`},
		{EvMemoryLow, Memory{Free: 1 << 20, Min: 1 << 30}, `{"free":1048576,"min":1073741824}`},
		{EvMemoryRecovered, Memory{Free: 1 << 31, Min: 1 << 30}, `{"free":2147483648,"min":1073741824}`},
		{EvWorkspaceCreated, WorkspaceCreated{Branch: "batty/a", Base: "main"}, `{"branch":"batty/a","base":"main"}`},
		{EvWorkspaceCommitted, WorkspaceCommitted{Commit: "c", WIP: true}, `{"commit":"c","wip":true}`},
		{EvWorkspaceCommitted, WorkspaceCommitted{Commit: "c", Branch: "batty/a"}, `{"commit":"c","branch":"batty/a","wip":false}`},
		{EvWorkspaceConflict, WorkspaceConflict{Files: []string{"a.go"}}, `{"files":["a.go"]}`},
		{EvLandingQueued, LandingQueued{Request: "r", By: "a", Branch: "batty/a", Review: true}, `{"request":"r","by":"a","branch":"batty/a","review":true}`},
		{EvLandingWaiting, LandingWaiting{Request: "r"}, `{"request":"r"}`},
		{EvLanded, Landed{Request: "r", Commit: "c", Base: "main", Branch: "batty/a"}, `{"request":"r","commit":"c","base":"main","branch":"batty/a"}`},
		{EvLanded, Landed{Request: "r", Nothing: true, Base: "main", Branch: "batty/a"}, `{"request":"r","nothing":true,"base":"main","branch":"batty/a"}`},
		{EvLandingFailed, LandingFailed{Request: "r", Base: "main", Branch: "batty/a", Conflicts: []string{"a.go"}, Output: "red"},
			`{"request":"r","base":"main","branch":"batty/a","conflicts":["a.go"],"output":"red"}`},
		{EvReviewWaiting, ReviewWaiting{Request: "r", Branch: "batty/a", Base: "main", Tip: "t", Merged: "m"},
			`{"request":"r","branch":"batty/a","base":"main","tip":"t","merged":"m"}`},
		{EvLandingApproved, LandingApproved{Request: "r", Tip: "t", Branch: "batty/a"}, `{"request":"r","tip":"t","branch":"batty/a"}`},
		{EvLandingRejected, LandingRejected{Request: "r", Tip: "t", Branch: "batty/a"}, `{"request":"r","tip":"t","branch":"batty/a"}`},
		{EvScheduleRunStarted, Schedule{Schedule: "s", State: "running", RunsCompleted: 1, Run: 2, To: "eng"},
			`{"schedule":"s","state":"running","runs_completed":1,"run":2,"to":"eng"}`},
		{EvScheduleRunFinished, Schedule{Schedule: "s", State: "waiting", RunsCompleted: 2, NextDue: at, Run: 2},
			`{"schedule":"s","state":"waiting","runs_completed":2,"next_due":` + atJSON + `,"run":2}`},
		{EvScheduleStopped, Schedule{Schedule: "s", State: "stopped", RunsCompleted: 2}, `{"schedule":"s","state":"stopped","runs_completed":2}`},
		{EvScheduleFailed, Schedule{Schedule: "s", State: "failed"}, `{"schedule":"s","state":"failed","runs_completed":0}`},
	} {
		b, err := json.Marshal(Event{Time: at, Type: tc.kind, Data: tc.p})
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		var line struct{ Data json.RawMessage }
		if err := json.Unmarshal(b, &line); err != nil {
			t.Fatal(err)
		}
		if string(line.Data) != tc.want {
			t.Errorf("%s %T data\n got %s\nwant %s", tc.kind, tc.p, line.Data, tc.want)
		}
		e, err := Decode(b)
		if err != nil || !reflect.DeepEqual(e.Data, tc.p) {
			t.Errorf("%s reads back as %#v, %v; want %#v", tc.kind, e.Data, err, tc.p)
		}
	}
}

// The lines written before the payloads had types (one of each shape
// found in the event logs of test and demo runs) decode to their kind's
// payload, every field as it was; a field the typed payload leaves out is
// one that was zero.
func TestLinesWrittenBeforeTypesDecode(t *testing.T) {
	f, err := os.Open("testdata/untyped.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		e, err := Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if _, raw := e.Data.(Raw); raw || e.Data == nil {
			t.Errorf("line %d (%s): data not typed: %#v", n, e.Type, e.Data)
			continue
		}
		var was struct{ Data map[string]any }
		if err := json.Unmarshal(sc.Bytes(), &was); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		var is map[string]any
		if err := json.Unmarshal(b, &is); err != nil {
			t.Fatal(err)
		}
		for k, v := range was.Data {
			if w, ok := is[k]; ok && !sameValue(v, w) || !ok && !reflect.ValueOf(v).IsZero() {
				t.Errorf("line %d (%s): %s was %#v, is %#v", n, e.Type, k, v, is[k])
			}
		}
		for k, v := range is {
			if _, ok := was.Data[k]; !ok && !reflect.ValueOf(v).IsZero() {
				t.Errorf("line %d (%s): %s is %#v, was not there", n, e.Type, k, v)
			}
		}
	}
	if err := sc.Err(); err != nil || n < 50 {
		t.Fatalf("%d lines, %v", n, err)
	}
}

// sameValue says whether two values of decoded JSON are the same; two
// times are the same instant.
func sameValue(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		return false
	}
	ta, err1 := time.Parse(time.RFC3339Nano, as)
	tb, err2 := time.Parse(time.RFC3339Nano, bs)
	return err1 == nil && err2 == nil && ta.Equal(tb)
}

// Data that does not fit its kind's payload, and the data of a kind that
// has none here, are kept as read (Raw) and written back unchanged; the
// event's envelope still reads.
func TestDataThatDoesNotFitIsKeptRaw(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Payload
	}{
		{`{"type":"delivered","agent":"a","data":{"from":"b","attempt":"two"}}`, Raw(`{"from":"b","attempt":"two"}`)},
		{`{"type":"turn_finished","agent":"a","data":{"attempt":1e40}}`, Raw(`{"attempt":1e40}`)},
		{`{"type":"memory_low","agent":"a","data":{"free":-1}}`, Raw(`{"free":-1}`)},
		{`{"type":"landed","agent":"a","data":["x"]}`, Raw(`["x"]`)},
		{`{"type":"next_year's_kind","agent":"a","data":{"x":1}}`, Raw(`{"x":1}`)},
		{`{"type":"daemon_stopped","agent":"a","data":{"x":1}}`, Raw(`{"x":1}`)},
		{`{"type":"delivered","agent":"a","data":null}`, nil},
		{`{"type":"delivered","agent":"a"}`, nil},
		{`{"type":"agent_failed","agent":"a","data":{"retry_at":"yesterday"}}`, Raw(`{"retry_at":"yesterday"}`)},
	} {
		e, err := Decode([]byte(tc.line))
		if err != nil || e.Agent != "a" || !reflect.DeepEqual(e.Data, tc.want) {
			t.Errorf("%s: %#v, %v; want data %#v", tc.line, e, err, tc.want)
			continue
		}
		back := tc.line
		if tc.want == nil {
			back = `{"type":"delivered","agent":"a"}`
		}
		b, err := json.Marshal(e)
		if err != nil || "{"+strings.TrimPrefix(string(b), `{"time":"0001-01-01T00:00:00Z",`) != back {
			t.Errorf("%s written back as %s, %v", tc.line, b, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"reply","data":{"to":"a","resume_at":"2030-01-02T03:04:05Z"}}`))
	f.Add([]byte(`{"data":{"resume_at":5}}`))
	f.Add([]byte(`{"type":"quota_blocked","data":{"resume_at":"2030-01-02T03:04:05+01:00","agents":null}}`))
	if b, err := os.ReadFile("testdata/untyped.jsonl"); err == nil {
		for line := range bytes.Lines(b) {
			f.Add(bytes.TrimSpace(line))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := Decode(line)
		if err != nil {
			return
		}
		// What was read writes back, and reads back as the same: an
		// event is never read in a shape it cannot be written in.
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("%q read as %#v, which cannot be written: %v", line, e, err)
		}
		again, err := Decode(b)
		if err != nil {
			t.Fatalf("%s does not read back: %v", b, err)
		}
		b2, err := json.Marshal(again)
		if err != nil || !bytes.Equal(b, b2) || reflect.TypeOf(again.Data) != reflect.TypeOf(e.Data) {
			t.Fatalf("%s reads back as %s (%T, was %T), %v", b, b2, again.Data, e.Data, err)
		}
		AlertFor(e)
	})
}
