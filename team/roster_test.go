package team

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A roster parses where none of the project's files are, and names the
// same agents with the same talks_to.
func TestRosterParsesAlone(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lead.md"), []byte("lead the team\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	src := `name: crew
backlog_limit: 7
hosts: [{name: b1, ssh: x}]
roles:
  - name: lead
    prompt: lead.md
    talks_to: [eng]
  - name: eng
    instances: 3
    cwd: sub
    hosts: [b1, local]
    talks_to: [lead]
  - name: quiet
`
	cfg, err := Parse(filepath.Join(dir, "team.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Roster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Elsewhere: no lead.md, no sub/.
	got, err := Parse(filepath.Join(t.TempDir(), ".batty", "team.yaml"), b)
	if err != nil {
		t.Fatalf("the roster does not parse alone: %v\n%s", err, b)
	}
	if got.Name != "crew" || got.BacklogLimit != 7 {
		t.Fatalf("roster team %q limit %d", got.Name, got.BacklogLimit)
	}
	names := func(c *Config) (out []string) {
		for _, a := range c.Agents() {
			out = append(out, a.Name)
		}
		return out
	}
	if !slices.Equal(names(got), names(cfg)) {
		t.Fatalf("agents %v, want %v", names(got), names(cfg))
	}
	for _, from := range append(names(cfg), Human) {
		for _, to := range append(names(cfg), Human) {
			if got.MayTalk(from, to) != cfg.MayTalk(from, to) {
				t.Errorf("MayTalk(%s, %s) = %v in the roster", from, to, got.MayTalk(from, to))
			}
		}
	}
}
