package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
)

// Commands that find their project through the factory (--team, or the
// team file found from the working directory) and ask its daemon client,
// run in this process on a test's streams against a stopped team: what
// each says goes to Out or ErrOut, and the project is the one named.
func TestFactoryCommandsRunInProcessOnTheirStreams(t *testing.T) {
	dir, l := writeTeam(t)
	teamFile := filepath.Join(dir, "team.yaml")
	f := newFactory(nil)
	p, cfg, err := f.Team(teamFile)
	if err != nil || p.Layout != l || cfg.Name != "demo" {
		t.Fatalf("Team(%s) = %+v, %v, %v; want the project of %s", teamFile, p.Layout, cfg, err, dir)
	}
	if got := f.Daemon(p).layout; got != l {
		t.Errorf("Daemon(p) talks to %+v, want %+v", got, l)
	}
	t.Chdir(dir)
	for _, c := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"stop", "--team", teamFile}, 0, "batty: not running", ""},
		{[]string{"stop"}, 0, "batty: not running", ""},
		{[]string{"send", "--from", "human", "architect", "hello"}, 0, "queued ", ""},
		{[]string{"inbox", "architect"}, 0, "hello", ""},
		{[]string{"resume", "architect"}, 0, "the daemon is not running", ""},
		{[]string{"approve", "--team", teamFile, "nosuch"}, 1, "", "batty: "},
		{[]string{"status", "--json", "-f", teamFile}, 0, `"team"`, ""},
	} {
		ios, _, out, errOut := iostreams.Test()
		code := execute(ios, c.args)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.err) {
			t.Errorf("batty %s: exit %d, out %q, err %q; want exit %d, out with %q, err with %q",
				strings.Join(c.args, " "), code, out, errOut, c.code, c.out, c.err)
		}
	}
}
