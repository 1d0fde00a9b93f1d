package team

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testTeam is a team with a single-instance role, a multi-instance role
// and a multi-instance role that lists itself.
const testTeam = `name: t
roles:
  - name: architect
    talks_to: [manager]
  - name: manager
    talks_to: [architect, eng]
  - name: eng
    instances: 2
    talks_to: [manager]
  - name: rev
    instances: 3
    talks_to: [rev]
`

func loadTestTeam(t *testing.T) *Config {
	t.Helper()
	cfg, msg, _ := loadString(t, testTeam)
	if msg != "" {
		t.Fatal(msg)
	}
	return cfg
}

func agentNames(as []Agent) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Name)
	}
	return out
}

func TestAgents(t *testing.T) {
	cfg := loadTestTeam(t)
	got := cfg.Agents()
	want := []struct {
		name, role string
		index      int
	}{
		{"architect", "architect", 0},
		{"manager", "manager", 0},
		{"eng-1", "eng", 1},
		{"eng-2", "eng", 2},
		{"rev-1", "rev", 1},
		{"rev-2", "rev", 2},
		{"rev-3", "rev", 3},
	}
	if len(got) != len(want) {
		t.Fatalf("Agents() = %q", agentNames(got))
	}
	for i, w := range want {
		a := got[i]
		if a.Name != w.name || a.Role != w.role || a.Index != w.index || a.Cwd != cfg.Dir || a.Codex.Bin != "codex" {
			t.Errorf("agent %d = %+v, want %s/%s/%d", i, a, w.name, w.role, w.index)
		}
		if !ValidName(a.Name) {
			t.Errorf("agent name %q is not a ValidName", a.Name)
		}
	}
	// Agents returns copies: mutating one must not affect the config.
	got[0].Codex.Args = append(got[0].Codex.Args, "x")
	got[0].Codex.Env = map[string]string{"X": "1"}
	if again := cfg.Agents(); len(again[0].Codex.Args) != 0 || again[0].Codex.Env != nil {
		t.Errorf("Agents() shares state: %+v", again[0].Codex)
	}

	if a, ok := cfg.Agent("eng-2"); !ok || a.Role != "eng" || a.Index != 2 {
		t.Errorf("Agent(eng-2) = %+v, %v", a, ok)
	}
	for _, name := range []string{"eng", "human", "nobody", "", "eng-0", "eng-3", "eng-01", "eng-+1", "architect-1"} {
		if _, ok := cfg.Agent(name); ok {
			t.Errorf("Agent(%q) found an agent", name)
		}
	}
}

func TestResolveRecipient(t *testing.T) {
	cfg := loadTestTeam(t)
	tests := []struct {
		name    string
		want    []string
		wantErr string
	}{
		{"human", nil, ""},
		{"architect", []string{"architect"}, ""},
		{"eng", []string{"eng-1", "eng-2"}, ""},
		{"eng-2", []string{"eng-2"}, ""},
		{"rev", []string{"rev-1", "rev-2", "rev-3"}, ""},
		{"mangr", nil, `unknown recipient "mangr": did you mean "manager"? (known: human, architect, manager, eng, rev, eng-1, eng-2, rev-1, rev-2, rev-3)`},
		{"eng-3", nil, `unknown recipient "eng-3": did you mean "eng-1"?`},
		{"zzzzzz", nil, `unknown recipient "zzzzzz" (known: human,`},
		{"", nil, `unknown recipient "" (known:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cfg.ResolveRecipient(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || !errors.Is(err, ErrUnknownRecipient) {
					t.Fatalf("error = %v, want prefix %q wrapping ErrUnknownRecipient", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names := agentNames(got); !reflect.DeepEqual(names, tt.want) {
				t.Errorf("got %q, want %q", names, tt.want)
			}
		})
	}
}

func TestMayLand(t *testing.T) {
	cfg := loadTestTeam(t)
	for _, c := range []struct {
		from, agent string
		want        bool
	}{
		{"human", "eng-1", true},
		{"eng-1", "eng-1", true},      // its own branch
		{"manager", "eng-1", true},    // an agent it may message
		{"eng-1", "eng-2", false},     // a peer it may not message
		{"architect", "eng-1", false}, // not in its talks_to
		{"ghost", "eng-1", false},
	} {
		if got := MayLand(cfg, c.from, c.agent); got != c.want {
			t.Errorf("MayLand(%s, %s) = %v, want %v", c.from, c.agent, got, c.want)
		}
	}
}

func TestMayTalk(t *testing.T) {
	cfg := loadTestTeam(t)
	tests := []struct {
		from, to string
		want     bool
	}{
		{"human", "architect", true},
		{"human", "eng-1", true},
		{"human", "rev-3", true},
		{"architect", "human", true},
		{"eng-2", "human", true},
		{"architect", "manager", true},
		{"manager", "architect", true},
		{"manager", "eng-1", true},
		{"eng-1", "manager", true},
		{"architect", "eng-1", false}, // not listed
		{"eng-1", "architect", false}, // not listed
		{"eng-1", "eng-2", false},     // same role, not listed itself
		{"rev-1", "rev-2", true},      // same role, lists itself
		{"rev-1", "rev-1", false},     // never yourself
		{"human", "human", false},
		{"manager", "eng", false}, // role names are not agents
		{"ghost", "human", false},
		{"human", "ghost", false},
		{"manager", "ghost", false},
	}
	for _, tt := range tests {
		if got := cfg.MayTalk(tt.from, tt.to); got != tt.want {
			t.Errorf("MayTalk(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"a", true},
		{"0", true},
		{"eng-1", true},
		{"a-", true},
		{strings.Repeat("a", 40), true},
		{strings.Repeat("a", 41), false},
		{"", false},
		{"-a", false},
		{"A", false},
		{"a_b", false},
		{"a b", false},
		{"a/b", false},
		{"..", false},
		{"a.b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		if got := ValidName(tt.s); got != tt.want {
			t.Errorf("ValidName(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestFindFile(t *testing.T) {
	write := func(t *testing.T, path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("name: t\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		files    []string
		explicit string
		want     string
		wantErr  string
	}{
		{"explicit wins", []string{"team.yaml", "other.yaml"}, "other.yaml", "other.yaml", ""},
		{"explicit missing", []string{"team.yaml"}, "nope.yaml", "", "team file nope.yaml:"},
		{"explicit directory", []string{"d/x"}, "d", "", "team file d is a directory"},
		{"top level first", []string{"team.yaml", ".batty/team.yaml"}, "", "team.yaml", ""},
		{"dot batty second", []string{".batty/team.yaml"}, "", filepath.Join(".batty", "team.yaml"), ""},
		{"directory skipped", []string{"team.yaml/x", ".batty/team.yaml"}, "", filepath.Join(".batty", "team.yaml"), ""},
		{"nothing", nil, "", "", "no team file found: tried ./team.yaml and ./.batty/team.yaml; run `batty init` to create one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			for _, f := range tt.files {
				write(t, f)
			}
			got, err := FindFile(tt.explicit)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("FindFile(%q) = %q, %v; want error %q", tt.explicit, got, err, tt.wantErr)
				}
				if tt.files == nil && !errors.Is(err, ErrNoTeamFile) {
					t.Errorf("error does not wrap ErrNoTeamFile: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FindFile(%q) = %q, %v; want %q", tt.explicit, got, err, tt.want)
			}
		})
	}
}
