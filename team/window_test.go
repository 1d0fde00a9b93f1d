package team

import "testing"

func TestModelWindow(t *testing.T) {
	for _, c := range []struct {
		model string
		want  int
	}{
		{"", DefaultContextWindow},
		{"gpt-5.5", 272000},
		{"gpt-5.9-future", 272000},
		{"gpt-4.1", 1047576},
		{"o3", 200000},
		{"some-local-model", DefaultContextWindow},
	} {
		if got := ModelWindow(c.model); got != c.want {
			t.Errorf("ModelWindow(%q) = %d, want %d", c.model, got, c.want)
		}
	}
}

func TestWindowAndHandoffSettings(t *testing.T) {
	yaml := `name: t
codex:
  model: o3
roles:
  - name: a
  - name: b
    codex:
      context_window: 5000
      context_handoff_pct: 60
`
	cfg, err := Parse("team.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cfg.Agent("a")
	b, _ := cfg.Agent("b")
	if a.Codex.Window() != 200000 || a.Codex.Handoff() != DefaultHandoffPct {
		t.Errorf("a: window %d handoff %d; want o3's 200000 and %d", a.Codex.Window(), a.Codex.Handoff(), DefaultHandoffPct)
	}
	if b.Codex.Window() != 5000 || b.Codex.Handoff() != 60 {
		t.Errorf("b: window %d handoff %d; want 5000 and 60", b.Codex.Window(), b.Codex.Handoff())
	}
	if _, err := Parse("team.yaml", []byte("name: t\ncodex:\n  context_handoff_pct: 101\nroles:\n  - name: a\n")); err == nil {
		t.Error("context_handoff_pct 101 accepted")
	}
}
