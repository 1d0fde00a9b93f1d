package cockpit

import (
	"strings"
	"testing"
	"time"
)

func TestTitle(t *testing.T) {
	for _, tc := range []struct {
		v    AgentView
		want string
	}{
		{AgentView{Name: "architect", State: "idle"}, "architect · idle"},
		{AgentView{Name: "e-1", State: "working", Busy: true, Working: 30 * time.Second}, "e-1 · working <1m"},
		{AgentView{Name: "e-1", State: "working", Busy: true, Working: 2*time.Minute + 5*time.Second, Waiting: 3}, "e-1 · working 2m · 3 waiting"},
		{AgentView{Name: "e-1", State: "working", Busy: true, Working: 65 * time.Minute}, "e-1 · working 1h05m"},
		{AgentView{Name: "e-1", State: "idle", Pause: PauseQuota, Waiting: 1}, "e-1 · quota paused · 1 waiting"},
		{AgentView{Name: "e-1", State: "idle", Pause: PauseAuth}, "e-1 · login needed"},
		{AgentView{Name: "e-1", State: "idle", Pause: PauseManual}, "e-1 · paused"},
		{AgentView{Name: "e-1", State: "working", Busy: true, Network: true}, "e-1 · waiting for network"},
		{AgentView{Name: "e-1", State: "waiting_for_network", Busy: true, Waiting: 1}, "e-1 · waiting for network · 1 waiting"},
		{AgentView{Name: "e-1", State: "finishing", Busy: true, Network: true, Working: 3 * time.Minute}, "e-1 · finishing"},
		{AgentView{Name: "e-1", State: "idle", Held: true}, "e-1 · held: no network"},
		{AgentView{Name: "e-1", State: "failed", Pause: PauseQuota}, "e-1 · failed"},
		{AgentView{Name: "e-1", State: "restarting"}, "e-1 · restarting"},
		{AgentView{Name: "e-1", State: "parked", Parked: "not_logged_in", Waiting: 2}, "e-1 · parked (not logged in) · 2 waiting"},
		{AgentView{Name: "e-1", State: "parked"}, "e-1 · parked"},
		{AgentView{Name: "e-1", State: "spawning"}, "e-1 · starting"},
		{AgentView{Name: "e-1", State: "stopped"}, "e-1 · stopped"},
		{AgentView{Name: "e\x1b[31m", State: "idle"}, "e · idle"},
		// A worktree agent: its branch and the commits it is ahead.
		{AgentView{Name: "eng-1", State: "idle", Branch: "batty/eng-1", Ahead: 3}, "eng-1 · idle · batty/eng-1 +3"},
		{AgentView{Name: "eng-1", State: "working", Busy: true, Working: 2 * time.Minute, Waiting: 1, Branch: "batty/eng-1"}, "eng-1 · working 2m · 1 waiting · batty/eng-1 +0"},
		{AgentView{Name: "eng-1", State: "idle", Branch: "batty/eng-1\x1b]0;x\x07", Ahead: 1}, "eng-1 · idle · batty/eng-1 +1"},
	} {
		if got := Title(tc.v); got != tc.want {
			t.Errorf("Title(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestFeedTitle(t *testing.T) {
	at := time.Date(2030, 1, 2, 14, 32, 0, 0, time.Local)
	for _, tc := range []struct {
		v    FeedView
		want string
	}{
		{FeedView{Team: "demo"}, "orchestrator · demo · dispatch running"},
		{FeedView{Team: "demo", Pause: PauseQuota, ResumeAt: at}, "orchestrator · demo · quota paused until 14:32"},
		{FeedView{Team: "demo", Pause: PauseManual, Reason: "lunch"}, "orchestrator · demo · paused: lunch"},
		{FeedView{Team: "demo", TeamChanged: true}, "orchestrator · demo · dispatch running · team.yaml changed: batty restart applies it"},
		// A pause reason may be a model's text: no escape sequence, no
		// line break, no bidirectional control reaches the pane border.
		{FeedView{Team: "demo", Pause: PauseManual, Reason: "a\x1b]52;c;eA==\x07b\x1b]0;pwned\x1b\\\r\nc\u202ed\u2066"},
			`orchestrator · demo · paused: ab c\u202ed\u2066`},
	} {
		if got := FeedTitle(tc.v); got != tc.want {
			t.Errorf("FeedTitle(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := FeedTitle(FeedView{Team: "t", Pause: PauseManual, Reason: strings.Repeat("x", 500)}); len([]rune(got)) > 201 {
		t.Errorf("a long reason is not cut: %d runes", len([]rune(got)))
	}
}

func TestNames(t *testing.T) {
	a, b := SocketName("/src/my project"), SocketName("/other/my project")
	if a == b || !strings.HasPrefix(a, "batty-my-project-") || a != SocketName("/src/my project/") {
		t.Errorf("SocketName: %q, %q", a, b)
	}
	if got := SocketName("/"); !strings.HasPrefix(got, "batty-project-") {
		t.Errorf("SocketName(/) = %q", got)
	}
	if got := SessionName("my.team:1"); got != "my-team-1" {
		t.Errorf("SessionName = %q", got)
	}
}

func TestClassifiers(t *testing.T) {
	for _, tc := range []struct {
		msg            string
		noServer, gone bool
	}{
		{"no server running on /tmp/tmux-0/batty-x", true, false},
		{"error connecting to /tmp/tmux-0/batty-x (No such file or directory)", true, true},
		{"server exited unexpectedly", true, true},
		{"can't find session: =demo", true, false},
		{"create window failed: index in use", false, false},
	} {
		err := &Error{Args: []string{"x"}, Msg: tc.msg}
		if got := NoServer(err); got != tc.noServer {
			t.Errorf("NoServer(%q) = %v", tc.msg, got)
		}
		if got := serverGone(err); got != tc.gone {
			t.Errorf("serverGone(%q) = %v", tc.msg, got)
		}
	}
	if NoServer(nil) || serverGone(nil) {
		t.Error("nil is no tmux error")
	}
}

func TestTmuxArg(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a;": `a\;`, ";": `\;`, "a;b": "a;b"} {
		if got := tmuxArg(in); got != want {
			t.Errorf("tmuxArg(%q) = %q, want %q", in, got, want)
		}
	}
}
