package team

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/battyhq/batty/codex"
)

// Schedule on_error values.
const (
	// OnErrorStop stops a schedule as failed when a run fails (the default).
	OnErrorStop = "stop"
	// OnErrorContinue records a failed run's error and goes on.
	OnErrorContinue = "continue"
)

// MaxScheduleRuns is the largest max_runs a schedule may set.
const MaxScheduleRuns = math.MaxInt32

var (
	scheduleKeys = []string{"name", "to", "prompt", "every", "start_at", "stop_at", "max_runs", "on_error"}
	onErrors     = []string{OnErrorStop, OnErrorContinue}
)

// Schedule is one validated entry of the team file's schedules list: a
// prompt sent on the human's behalf to an agent or a role every Every.
// The semantics of each field are those of docs/config.md ("schedules");
// the package schedule computes when runs are due.
type Schedule struct {
	// Name identifies the schedule; it matches ValidName and is unique
	// among the team's schedules. Its persisted state is kept by name.
	Name string
	// To is the recipient as written: an agent, or a role (a role with
	// several instances is served through its queue). Never "human".
	To string
	// Prompt is the message body of every run: not blank and within the
	// length one turn of Codex takes (codex.CheckBodyLen).
	Prompt string
	// Every is the period, > 0.
	Every time.Duration
	// StartAt anchors the runs (start_at + k·Every); zero when absent, and
	// then the anchor is when the daemon first saw the schedule.
	StartAt time.Time
	// StopAt is the exclusive bound for starting runs; zero when absent.
	// When both are set, StopAt is after StartAt.
	StopAt time.Time
	// MaxRuns is how many runs may complete; nil means no limit and 0 that
	// the schedule is stopped at once.
	MaxRuns *int
	// OnError is OnErrorStop or OnErrorContinue.
	OnError string
	// Line is the line of the team file where the schedule is defined.
	Line int
}

// scheduleDraft is a schedule being validated, with the node its to key
// came from (nil when absent or not a string).
type scheduleDraft struct {
	Schedule
	toNode   *yaml.Node
	nameNode *yaml.Node
}

// schedules decodes the top-level schedules list into cfg.Schedules.
// Recipients are resolved only when resolve is set (the roles are valid):
// otherwise a problem in the roles would show up a second time as unknown
// recipients.
func (p *parser) schedules(f map[string]entry, cfg *Config, resolve bool) {
	e, ok := f["schedules"]
	if !ok || isNull(e.val) {
		return
	}
	n := deref(e.val)
	if n.Kind != yaml.SequenceNode {
		p.add(e.val, "write a list of schedules, each starting with \"- name:\"", "schedules must be a list, not %s", kindName(e.val))
		return
	}
	seen := map[string]int{}
	for _, c := range n.Content {
		if !p.visit(c) {
			return
		}
		s := p.schedule(c)
		if s == nil {
			continue
		}
		if s.nameNode != nil {
			if line, dup := seen[s.Name]; dup {
				p.add(s.nameNode, fmt.Sprintf("first defined at line %d", line), "duplicate schedule name %q", s.Name)
			} else {
				seen[s.Name] = s.nameNode.Line
			}
		}
		if resolve && s.toNode != nil {
			p.scheduleTo(s, cfg)
		}
		cfg.Schedules = append(cfg.Schedules, s.Schedule)
	}
}

// scheduleTo checks that a schedule's recipient is an agent or a role.
func (p *parser) scheduleTo(s *scheduleDraft, cfg *Config) {
	if s.To == Human {
		p.add(s.toNode, "name an agent or a role", "schedule %q: to may not be %q: a scheduled prompt is sent on the human's behalf", s.Name, Human)
		return
	}
	if _, err := cfg.ResolveRecipient(s.To); err != nil {
		p.add(s.toNode, "", "schedule %q: %v", s.Name, err)
	}
}

// schedule validates one element of the schedules list.
func (p *parser) schedule(n *yaml.Node) *scheduleDraft {
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		p.add(n, "each schedule is a mapping starting with \"- name:\"", "schedule must be a mapping, not %s", kindName(n))
		return nil
	}
	s := &scheduleDraft{Schedule: Schedule{OnError: OnErrorStop, Line: d.Line}}
	f, _ := p.mapping(d, "schedule", scheduleKeys)
	for _, key := range []string{"name", "to", "prompt", "every"} {
		if _, ok := f[key]; !ok {
			p.add(d, scheduleHint(key), "schedule is missing required key %q", key)
		}
	}
	if e, ok := f["name"]; ok {
		if v, ok := p.name(e.val, "schedule name"); ok {
			s.Name, s.nameNode = v, e.val
		}
	}
	if e, ok := f["to"]; ok {
		if v, ok := p.str(e.val, "schedule to"); ok {
			if v == "" {
				p.add(e.val, scheduleHint("to"), "schedule to must not be empty")
			} else {
				s.To, s.toNode = v, e.val
			}
		} else if isNull(e.val) {
			p.add(e.val, scheduleHint("to"), "schedule to must not be empty")
		}
	}
	if e, ok := f["prompt"]; ok {
		v, ok := p.str(e.val, "schedule prompt")
		switch {
		case !ok && !isNull(e.val):
		case strings.TrimSpace(v) == "":
			p.add(e.val, scheduleHint("prompt"), "schedule prompt must not be empty")
		default:
			if err := codex.CheckBodyLen(v); err != nil {
				p.add(e.val, "", "schedule prompt: %v", err)
			} else {
				s.Prompt = v
			}
		}
	}
	if e, ok := f["every"]; ok {
		if isNull(e.val) {
			p.add(e.val, scheduleHint("every"), "schedule every must not be empty")
		} else if v, ok := p.duration(e.val, "schedule every"); ok {
			s.Every = v
		}
	}
	if e, ok := f["start_at"]; ok {
		s.StartAt, _ = p.timestamp(e.val, "schedule start_at")
	}
	if e, ok := f["stop_at"]; ok {
		var ok bool
		if s.StopAt, ok = p.timestamp(e.val, "schedule stop_at"); ok && !s.StartAt.IsZero() && !s.StopAt.After(s.StartAt) {
			p.add(e.val, "set stop_at after start_at, or leave it out", "schedule stop_at (%s) is not after start_at (%s)",
				s.StopAt.Format(time.RFC3339), s.StartAt.Format(time.RFC3339))
		}
	}
	if e, ok := f["max_runs"]; ok && !isNull(e.val) {
		if v, ok := p.integer(e.val, "schedule max_runs", 0, MaxScheduleRuns); ok {
			s.MaxRuns = &v
		}
	}
	if e, ok := f["on_error"]; ok && !isNull(e.val) {
		if v, ok := p.enum(e.val, "schedule on_error", onErrors, false); ok {
			s.OnError = v
		}
	}
	return s
}

// scheduleHint is the example given for a missing or empty schedule key.
func scheduleHint(key string) string {
	switch key {
	case "name":
		return `add e.g. "name: nightly-report"`
	case "to":
		return `add e.g. "to: manager" (an agent or a role)`
	case "prompt":
		return `add e.g. "prompt: summarise yesterday's commits"`
	default:
		return `add e.g. "every: 30m" (Go duration syntax)`
	}
}

// timestamp decodes an RFC 3339 time such as 2026-01-02T09:00:00Z, quoted
// or not. Null yields ok=false without a problem.
func (p *parser) timestamp(n *yaml.Node, what string) (time.Time, bool) {
	if isNull(n) || !p.visit(n) {
		return time.Time{}, false
	}
	d := deref(n)
	if d.Kind != yaml.ScalarNode || (d.ShortTag() != "!!str" && d.ShortTag() != "!!timestamp") {
		p.add(n, "write an RFC 3339 time, e.g. 2026-01-02T09:00:00Z", "%s must be a time, not %s", what, kindName(n))
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, d.Value)
	if err != nil || t.Year() < 1 || t.Year() > 9999 {
		p.add(n, "write an RFC 3339 time with a zone, e.g. 2026-01-02T09:00:00Z or 2026-01-02T10:00:00+01:00",
			"%s: invalid time %.60q", what, d.Value)
		return time.Time{}, false
	}
	return t, true
}
