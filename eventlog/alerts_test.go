package eventlog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/textclip"
)

func TestAlertFor(t *testing.T) {
	turn := func(status protocol.TurnStatus, failure protocol.FailureKind, requeued bool) Event {
		return Event{Type: EvTurnFinished, Agent: "eng", Message: "m1", Detail: "codex exited 3",
			Data: TurnFinished{Status: string(status), Failure: string(failure), Requeued: requeued}}
	}
	fromJSON := func(line string) Event {
		e, err := Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name    string
		e       Event
		kind    string // "" = no alert
		message string
	}{
		{"quota", Event{Type: EvQuotaBlocked, Agent: "eng", Detail: "try again at 10:56 PM"}, AlertQuota, "quota exhausted (reported by eng): try again at 10:56 PM"},
		{"auth", Event{Type: EvAuthRequired, Agent: "eng", Detail: "401 — run codex login"}, AlertAuth, "codex needs a login (reported by eng): 401 — run codex login"},
		{"network", Event{Type: "network_waiting", Agent: "eng", Detail: "Reconnecting... waiting for network"}, AlertNetwork, "the API is unreachable (reported by eng): Reconnecting... waiting for network"},
		{"memory low", Event{Type: EvMemoryLow, Detail: "120 MiB available, below 512 MiB"}, AlertMemory, "free memory is low, no new turn starts: 120 MiB available, below 512 MiB"},
		{"app-server died", Event{Type: EvAppServerDied, Detail: "pid 7 (account main): signal: killed"}, AlertAppServer, "a shared codex app-server died and was started again; the turns it cut off are retried: pid 7 (account main): signal: killed"},
		{"memory recovered", Event{Type: EvMemoryRecovered, Detail: "600 MiB available"}, "", ""},
		{"context", Event{Type: EvContextExhaust, Agent: "eng", Detail: "window full"}, AlertContext, "eng's context window is full: window full"},
		{"message failed event", Event{Type: "message_failed", Agent: "eng", Message: "m1", Detail: "500 after 3 attempts"}, AlertMessageFailed, "message m1 to eng failed: 500 after 3 attempts"},
		{"turn failed", turn(protocol.TurnFailed, protocol.FailExit, false), AlertMessageFailed, "message m1 to eng failed (exit): codex exited 3"},
		{"turn failed, decoded from JSON", fromJSON(`{"type":"turn_finished","agent":"eng","message_id":"m1","data":{"status":"timed_out","requeued":false}}`), AlertMessageFailed, "message m1 to eng timed_out"},
		{"turn failed but requeued", turn(protocol.TurnFailed, protocol.FailQuota, true), "", ""},
		{"turn failed, told by message_failed", Event{Type: EvTurnFinished, Agent: "eng", Message: "m1",
			Data: TurnFinished{Status: string(protocol.TurnFailed), Failure: string(protocol.FailStream), Alerted: true}}, "", ""},
		{"turn failed, told by context_exhausted", Event{Type: EvTurnFinished, Agent: "eng", Message: "m1",
			Data: TurnFinished{Status: string(protocol.TurnFailed), Failure: string(protocol.FailContextWindow), Alerted: true}}, "", ""},
		{"turn interrupted to cancel its message", Event{Type: EvTurnFinished, Agent: "eng", Message: "m1",
			Data: TurnFinished{Status: string(protocol.TurnInterrupted), Cancelled: true}}, "", ""},
		{"cancelled", Event{Type: EvCancelled, Agent: "eng", Message: "m1", Detail: "cancelled by the user"}, "", ""},
		{"turn completed", turn(protocol.TurnCompleted, protocol.FailNone, false), "", ""},
		{"rejected", Event{Type: EvRejected, Agent: "eng", Message: "m2", Detail: "qa may not message eng (talks_to)"}, AlertMessageFailed, "message m2 to eng rejected: qa may not message eng (talks_to)"},
		{"agent failed", Event{Type: EvAgentFailed, Agent: "eng", Detail: "5 crashes within 1m0s"}, AlertAgentFailed, "eng failed: 5 crashes within 1m0s"},
		{"wedged", Event{Type: EvWedged, Agent: "eng", Detail: "no pong within 10s"}, AlertAgentWedged, "eng's shim stopped answering and was killed: no pong within 10s"},
		{"host unreachable", Event{Type: EvHostUnreachable, Agent: "eng-2", Detail: "ssh: connect to host b1 port 22: Connection refused", Data: Host{Host: "b1"}},
			AlertHost, "host b1 is unreachable; its agents wait: ssh: connect to host b1 port 22: Connection refused"},
		{"host reachable", Event{Type: EvHostReachable, Data: Host{Host: "b1"}}, "", ""},
		{"parked", Event{Type: EvAgentParked, Agent: "eng", Detail: "codex not found"}, AlertAgentParked, "eng is parked: codex not found"},
		{"reply", Event{Type: EvReply, Agent: "eng", Message: "r1", Data: Reply{Preview: "done, tests pass"}}, AlertReply, "eng replied to you: done, tests pass"},
		{"schedule failed", Event{Type: EvScheduleFailed, Message: "s-1", Detail: "failed exit: codex exited 3", Data: Schedule{Schedule: "nightly"}},
			AlertSchedule, "schedule nightly failed: failed exit: codex exited 3"},
		{"schedule stopped", Event{Type: EvScheduleStopped, Data: Schedule{Schedule: "nightly"}}, "", ""},
		{"reply without preview", Event{Type: EvReply, Agent: "eng"}, AlertReply, "eng replied to you"},
		{"no agent", Event{Type: EvQuotaBlocked}, AlertQuota, "quota exhausted (reported by the team)"},
		{"quota, every agent switched", Event{Type: EvQuotaBlocked, Agent: "eng", Data: QuotaBlocked{Switched: true}}, "", ""},
		{"account switched", Event{Type: EvAccountSwitched, Agent: "eng", Detail: "account work hit its usage limit: eng continues on spare"}, AlertAccount, "account work hit its usage limit: eng continues on spare"},
		{"quota warning", Event{Type: EvQuotaWarning, Detail: "account work used 92% of its 5h window"}, AlertQuotaWarning, "account work used 92% of its 5h window"},
		{"delivered", Event{Type: EvDelivered, Agent: "eng"}, "", ""},
		{"warning", Event{Type: EvWarning, Agent: "eng", Detail: "x"}, "", ""},
		{"paused", Event{Type: EvPaused, Detail: "quota"}, "", ""},
		{"shim exited", Event{Type: EvShimExited, Agent: "eng"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ok := AlertFor(tc.e)
			if ok != (tc.kind != "") || a.Kind != tc.kind || a.Message != tc.message {
				t.Fatalf("AlertFor = %v %q %q, want %q %q", ok, a.Kind, a.Message, tc.kind, tc.message)
			}
			if ok && (a.Agent != tc.e.Agent || a.Event != tc.e.Type || a.MessageID != tc.e.Message) {
				t.Fatalf("alert %+v does not carry the event's agent, type and message", a)
			}
		})
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a\x00b", 10, "a\x00b"}, // cleaned for the environment by alertEnv
		{"abcdefghij", 6, "abc…"},
		{"ééééé", 7, "éé…"}, // é is 2 bytes, … is 3: never half a rune
	} {
		if got := textclip.Bytes(tc.in, tc.n, textclip.Ellipsis); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// A reply between agents is no alert (the feed shows it); a reply to the
// human is (alert_on_reply decides whether on_alert hears of it); a failed
// outcome write is.
func TestAlertForRepliesAndRecording(t *testing.T) {
	if _, ok := AlertFor(Event{Type: EvReply, Agent: "eng", Data: Reply{To: "arch"}}); ok {
		t.Error("a reply to an agent is an alert")
	}
	if a, ok := AlertFor(Event{Type: EvReply, Agent: "eng", Data: Reply{To: "human"}}); !ok || a.Kind != AlertReply {
		t.Errorf("a reply to the human: %+v %v", a, ok)
	}
	if a, ok := AlertFor(Event{Type: EvReply, Agent: "eng", Data: Reply{To: "human", Outcome: "completed"}}); !ok || a.Kind != AlertReply {
		t.Errorf("an answer to the human: %+v %v", a, ok)
	}
	// Word of a failure: its message_failed alert tells it, not a second one.
	if a, ok := AlertFor(Event{Type: EvReply, Agent: "eng", Data: Reply{To: "human", Outcome: "failed"}}); ok {
		t.Errorf("word of a failure to the human is a reply alert: %+v", a)
	}
	if a, ok := AlertFor(Event{Type: EvRecordFailed, Agent: "eng", Detail: "no space"}); !ok || a.Kind != AlertRecordFailed || a.Message != "eng cannot record an outcome: no space" {
		t.Errorf("record_failed: %+v %v", a, ok)
	}
	if _, ok := AlertFor(Event{Type: EvRecordRecovered, Agent: "eng"}); ok {
		t.Error("record_recovered is an alert")
	}
	if a, ok := AlertFor(Event{Type: EvLandingFailed, Agent: "eng-1", Detail: "conflict in a.go"}); !ok || a.Kind != AlertLandingFailed || a.Message != "eng-1's branch did not land: conflict in a.go" {
		t.Errorf("landing_failed: %+v %v", a, ok)
	}
	if a, ok := AlertFor(Event{Type: EvReviewWaiting, Agent: "eng-1", Data: ReviewWaiting{Request: "r1"}}); !ok || a.Kind != AlertReviewWaiting ||
		a.Message != "eng-1's branch passed verify and waits for your review: batty review, then batty approve eng-1 or batty reject eng-1 --reason ..." || a.Data != (ReviewWaiting{Request: "r1"}) {
		t.Errorf("review_waiting: %+v %v", a, ok)
	}
	for _, typ := range []string{EvLanded, EvLandingQueued, EvLandingWaiting, EvWorkspaceCommitted, EvWorkspaceCreated, EvWorkspaceSynced,
		EvLandingApproved, EvLandingRejected} {
		if _, ok := AlertFor(Event{Type: typ, Agent: "eng-1"}); ok {
			t.Errorf("%s is an alert", typ)
		}
	}
}

// The JSON on_alert reads holds the event's data as the log does, and
// reads back as the alert it was.
func TestAlertJSONReadsBack(t *testing.T) {
	e := Event{Time: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Type: EvTurnFinished, Agent: "eng", Message: "m1", Detail: "boom",
		Data: TurnFinished{Status: "failed", Failure: "exit", Attempt: 2}}
	a, ok := AlertFor(e)
	if !ok {
		t.Fatal("no alert")
	}
	a.Team = "t"
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"data":{"status":"failed","failure":"exit","attempt":2,"requeued":false}`) {
		t.Fatalf("alert JSON %s", b)
	}
	var back Alert
	a.Detail = "" // the event's detail stays in the process (the message has it)
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, a) {
		t.Fatalf("read back as %+v, %v; want %+v", back, err, a)
	}
}
