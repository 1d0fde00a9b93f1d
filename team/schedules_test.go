package team

import (
	"strings"
	"testing"
	"time"
)

const scheduleRoles = "name: t\nroles:\n  - name: manager\n  - name: eng\n    instances: 2\n"

func TestParseSchedules(t *testing.T) {
	src := scheduleRoles + `schedules:
  - name: nightly
    to: manager
    prompt: summarise the day
    every: 24h
    start_at: 2026-01-02T03:00:00Z
    stop_at: "2026-02-02T03:00:00+01:00"
    max_runs: 0
    on_error: continue
  - name: poll
    to: eng
    prompt: check the queue
    every: 30m
`
	cfg, msg, _ := loadString(t, src)
	if msg != "" {
		t.Fatalf("unexpected problems:\n%s", msg)
	}
	if len(cfg.Schedules) != 2 {
		t.Fatalf("schedules = %+v", cfg.Schedules)
	}
	s := cfg.Schedules[0]
	if s.Name != "nightly" || s.To != "manager" || s.Prompt != "summarise the day" || s.Every != 24*time.Hour ||
		!s.StartAt.Equal(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)) ||
		!s.StopAt.Equal(time.Date(2026, 2, 2, 2, 0, 0, 0, time.UTC)) ||
		s.MaxRuns == nil || *s.MaxRuns != 0 || s.OnError != OnErrorContinue || s.Line != 7 {
		t.Errorf("first schedule = %+v", s)
	}
	p := cfg.Schedules[1]
	if p.To != "eng" || p.MaxRuns != nil || !p.StartAt.IsZero() || !p.StopAt.IsZero() || p.OnError != OnErrorStop {
		t.Errorf("second schedule = %+v", p)
	}
}

func TestParseScheduleErrors(t *testing.T) {
	tests := []struct {
		name, sched string
		want        string
	}{
		{"every zero", "{name: s, to: manager, prompt: p, every: 0s}", `team.yaml:7:46: schedule every must be positive, got 0s`},
		{"every negative", "{name: s, to: manager, prompt: p, every: -5m}", `team.yaml:7:46: schedule every must be positive, got -5m`},
		{"every garbage", "{name: s, to: manager, prompt: p, every: abc}", `team.yaml:7:46: schedule every: invalid duration "abc"`},
		{"every bare", "{name: s, to: manager, prompt: p, every: 30}", `schedule every must be a duration with a unit`},
		{"every null", "{name: s, to: manager, prompt: p, every: ~}", `schedule every must not be empty`},
		{"missing keys", "{name: s}", `schedule is missing required key "to"`},
		{"unknown key", "{name: s, to: manager, prompt: p, every: 1m, evry: 2m}", `unknown key "evry" in schedule`},
		{"bad name", "{name: S!, to: manager, prompt: p, every: 1m}", `invalid schedule name`},
		{"unknown to", "{name: s, to: managr, prompt: p, every: 1m}", `schedule "s": unknown recipient "managr": did you mean "manager"?`},
		{"human", "{name: s, to: human, prompt: p, every: 1m}", `to may not be "human"`},
		{"blank prompt", "{name: s, to: manager, prompt: '  ', every: 1m}", `schedule prompt must not be empty`},
		{"long prompt", "{name: s, to: manager, prompt: " + strings.Repeat("x", 1<<20) + ", every: 1m}", `Input exceeds the maximum length`},
		{"bad start", "{name: s, to: manager, prompt: p, every: 1m, start_at: tomorrow}", `schedule start_at: invalid time "tomorrow"`},
		{"no zone", "{name: s, to: manager, prompt: p, every: 1m, start_at: '2026-01-02T03:00:00'}", `invalid time`},
		{"stop before start", "{name: s, to: manager, prompt: p, every: 1m, start_at: 2026-01-02T03:00:00Z, stop_at: 2026-01-02T03:00:00Z}", `schedule stop_at (2026-01-02T03:00:00Z) is not after start_at`},
		{"max runs", "{name: s, to: manager, prompt: p, every: 1m, max_runs: -1}", `schedule max_runs must be between 0 and`},
		{"on_error", "{name: s, to: manager, prompt: p, every: 1m, on_error: retry}", `invalid schedule on_error "retry"`},
		{"not a list", "", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sched == "" {
				_, msg, _ := loadString(t, scheduleRoles+"schedules: {a: b}\n")
				if !strings.Contains(msg, "team.yaml:6:12: schedules must be a list") {
					t.Errorf("problems:\n%s", msg)
				}
				return
			}
			cfg, msg, _ := loadString(t, scheduleRoles+"schedules:\n  - "+tt.sched+"\n")
			if cfg != nil || !strings.Contains(msg, tt.want) {
				t.Errorf("problems:\n%.500s\nwant %q", msg, tt.want)
			}
		})
	}
}

func TestParseScheduleDuplicateName(t *testing.T) {
	src := scheduleRoles + "schedules:\n  - {name: s, to: manager, prompt: p, every: 1m}\n  - {name: s, to: eng-1, prompt: q, every: 1m}\n"
	_, msg, _ := loadString(t, src)
	if !strings.Contains(msg, `team.yaml:8:12: duplicate schedule name "s" (first defined at line 7)`) {
		t.Errorf("problems:\n%s", msg)
	}
}

// A problem in the roles is not repeated as unknown recipients.
func TestParseScheduleBadRolesNotResolved(t *testing.T) {
	src := "name: t\nroles:\n  - name: Bad!\nschedules:\n  - {name: s, to: bad, prompt: p, every: 1m}\n"
	_, msg, _ := loadString(t, src)
	if !strings.Contains(msg, "invalid role name") || strings.Contains(msg, "unknown recipient") {
		t.Errorf("problems:\n%s", msg)
	}
}
