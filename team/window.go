package team

import "strings"

// DefaultContextWindow is the context window, in tokens, of a model the
// table of known windows does not name.
const DefaultContextWindow = 272000

// DefaultHandoffPct is the share of the context window (percent) from which
// an agent hands off to a fresh thread at its next idle moment.
const DefaultHandoffPct = 85

// modelWindows are the context windows, in input tokens, of the models batty
// knows, by exact model name. Codex budgets 272,000 input tokens for the
// GPT-5 family (its window is 400,000 with 128,000 kept for output).
var modelWindows = map[string]int{
	"gpt-5":              272000,
	"gpt-5-codex":        272000,
	"gpt-5-codex-mini":   272000,
	"gpt-5.1":            272000,
	"gpt-5.1-codex":      272000,
	"gpt-5.1-codex-max":  272000,
	"gpt-5.1-codex-mini": 272000,
	"gpt-5.2":            272000,
	"gpt-5.2-codex":      272000,
	"gpt-5.5":            272000,
	"gpt-4.1":            1047576,
	"gpt-4.1-mini":       1047576,
	"gpt-4o":             128000,
	"o3":                 200000,
	"o4-mini":            200000,
	"codex-mini-latest":  200000,
}

// ModelWindow returns the context window of model in tokens: the table's
// entry, else 272,000 for another "gpt-5" model, else
// DefaultContextWindow (also for "", Codex's default model). It is a pure
// function.
func ModelWindow(model string) int {
	if w, ok := modelWindows[model]; ok {
		return w
	}
	if strings.HasPrefix(model, "gpt-5") {
		return 272000
	}
	return DefaultContextWindow
}

// Window is the context window used for these settings: context_window
// when the team file sets it, else the model's known window (ModelWindow).
func (s CodexSettings) Window() int {
	if s.ContextWindow > 0 {
		return s.ContextWindow
	}
	return ModelWindow(s.Model)
}

// Handoff is the context use (percent of Window) from which an agent
// hands off to a fresh thread: context_handoff_pct, else DefaultHandoffPct.
func (s CodexSettings) Handoff() int {
	if s.HandoffPct > 0 {
		return s.HandoffPct
	}
	return DefaultHandoffPct
}
