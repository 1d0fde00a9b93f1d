package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
)

// testTeam is a team with a single-instance role that may not message the
// architect and a role with two instances.
const testTeam = `name: demo
roles:
  - name: architect
    talks_to: [manager]
  - name: manager
    talks_to: [architect, engineer]
  - name: engineer
    instances: 2
    talks_to: [manager]
`

// writeTeam writes testTeam into a fresh directory and returns the
// directory and the project's layout.
func writeTeam(t *testing.T) (string, project.Layout) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(testTeam), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, layoutOf(t, dir)
}

// openBox opens a box of the project for inspection or setup.
func openBox(t *testing.T, l project.Layout, name string) *inbox.Box {
	t.Helper()
	s, err := inbox.Open(l.Inboxes())
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Box(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var queuedRE = regexp.MustCompile(`^queued (\S+) for (\S+)\n$`)

// mustSend runs `batty send` in dir, expects success and returns the id and
// box it printed.
func mustSend(t *testing.T, dir string, env []string, stdin string, args ...string) (id, box string) {
	t.Helper()
	out, errOut, code := runBattyIn(t, dir, env, stdin, append([]string{"send"}, args...)...)
	m := queuedRE.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("send %q: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return m[1], m[2]
}

// pendingMessage returns the pending message id of box, failing if absent.
func pendingMessage(t *testing.T, l project.Layout, box, id string) inbox.Message {
	t.Helper()
	if m, ok := requested(t, l, id); ok {
		return m
	}
	if _, err := os.Stat(filepath.Join(l.Inboxes(), box, "new", id+".json")); err != nil {
		t.Fatalf("message file: %v", err)
	}
	msgs, errs := openBox(t, l, box).Pending()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, m := range msgs {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("message %s not pending in %s: %+v", id, box, msgs)
	return inbox.Message{}
}

// requested finds the request id in the agents' outboxes, where an agent's
// batty send writes it for the daemon, and returns it as the message the
// daemon would deliver: from the agent whose outbox holds it.
func requested(t *testing.T, l project.Layout, id string) (inbox.Message, bool) {
	t.Helper()
	agents, _ := os.ReadDir(filepath.Join(l.Dir, outbox.DirName))
	for _, a := range agents {
		data, err := os.ReadFile(filepath.Join(outbox.Path(l.Dir, a.Name()), outbox.SubNew, id+".json"))
		if err != nil {
			continue
		}
		r, err := outbox.Decode(data)
		if err != nil {
			t.Fatalf("request %s of %s: %v", id, a.Name(), err)
		}
		if r.Land != "" {
			return inbox.Message{ID: id, From: a.Name(), To: "landing", Body: r.Land}, true
		}
		return inbox.Message{ID: id, From: a.Name(), To: r.To, Body: r.Body}, true
	}
	return inbox.Message{}, false
}

// requests are the messages the requests in agent's outbox ask for, as
// requested returns them.
func requests(t *testing.T, l project.Layout, agent string) []inbox.Message {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(outbox.Path(l.Dir, agent), outbox.SubNew))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []inbox.Message
	for _, n := range names {
		m, ok := requested(t, l, strings.TrimSuffix(n.Name(), ".json"))
		if !ok {
			t.Fatalf("request %s not found", n.Name())
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func TestSendToAgentRoleAndHuman(t *testing.T) {
	dir, l := writeTeam(t)
	for _, tc := range []struct {
		args     []string
		box      string
		from, to string
		body     string
	}{
		{[]string{"manager", "hello", "world"}, "manager", "human", "manager", "hello world"},
		{[]string{"architect", "design   it"}, "architect", "human", "architect", "design   it"},
		{[]string{"engineer-2", "fix", "the", "test"}, "engineer-2", "human", "engineer-2", "fix the test"},
		{[]string{"engineer", "anyone free?"}, "@engineer", "human", "engineer", "anyone free?"},
		{[]string{"--from", "manager", "human", "all", "green"}, "human", "manager", "human", "all green"},
		{[]string{"--from", "manager", "engineer", "-n", "is", "text"}, "@engineer", "manager", "engineer", "-n is text"},
	} {
		id, box := mustSend(t, dir, nil, "", tc.args...)
		if box != tc.box {
			t.Errorf("send %q went to box %q, want %q", tc.args, box, tc.box)
			continue
		}
		m := pendingMessage(t, l, box, id)
		if m.From != tc.from || m.To != tc.to || m.Body != tc.body {
			t.Errorf("send %q stored from=%q to=%q body=%q, want %q %q %q", tc.args, m.From, m.To, m.Body, tc.from, tc.to, tc.body)
		}
	}
}

func TestSendTalksToAndAgentIdentity(t *testing.T) {
	dir, l := writeTeam(t)
	env := []string{agentenv.Agent + "=engineer-1"}

	out, errOut, code := runBattyIn(t, dir, env, "", "send", "architect", "hi")
	want := `batty: engineer-1 may not message architect (talks_to of role "engineer" in ` +
		filepath.Join(dir, "team.yaml") + `: manager); it may message: manager, human`
	if code != 1 || strings.TrimSpace(errOut) != want || out != "" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s\nwant stderr: %s", code, out, errOut, want)
	}
	if _, err := os.Stat(filepath.Join(l.Inboxes(), "architect")); !os.IsNotExist(err) {
		t.Fatalf("a refused message created the architect's box: %v", err)
	}

	id, box := mustSend(t, dir, env, "", "manager", "done with the parser")
	if m := pendingMessage(t, l, box, id); box != "manager" || m.From != "engineer-1" {
		t.Fatalf("box %s, from %q; want manager, engineer-1", box, m.From)
	}
	id, box = mustSend(t, dir, env, "", "human", "need a decision")
	if m := pendingMessage(t, l, box, id); box != "human" || m.From != "engineer-1" {
		t.Fatalf("box %s, from %q; want human, engineer-1", box, m.From)
	}
	// engineer does not list itself: its instances may not message each other.
	if _, errOut, code := runBattyIn(t, dir, env, "", "send", "engineer", "hi"); code != 1 || !strings.Contains(errOut, "may not message engineer") {
		t.Fatalf("send to own role: exit %d, stderr %s", code, errOut)
	}
	// --from may repeat $BATTY_AGENT (posing as others: sender_test.go).
	id, _ = mustSend(t, dir, env, "", "--from", "engineer-1", "manager", "review this")
	if m := pendingMessage(t, l, "manager", id); m.From != "engineer-1" {
		t.Fatalf("from %q, want engineer-1", m.From)
	}
	// An agent run from elsewhere finds the project through $BATTY_DIR and
	// the team file the daemon recorded there at its start.
	if err := os.WriteFile(l.TeamFileRef(), []byte(filepath.Join(dir, "team.yaml")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env2 := append(env, agentenv.Dir+"="+l.Dir)
	id, _ = mustSend(t, t.TempDir(), env2, "", "manager", "from my worktree")
	if m := pendingMessage(t, l, "manager", id); m.From != "engineer-1" || m.Body != "from my worktree" {
		t.Fatalf("got %+v", m)
	}
	// A sender that is not in the team is refused.
	_, errOut, code = runBattyIn(t, dir, []string{agentenv.Agent + "=ghost"}, "", "send", "manager", "boo")
	if code != 1 || !strings.Contains(errOut, `unknown sender "ghost"`) || !strings.Contains(errOut, "engineer-2") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	// An agent may not message itself.
	_, errOut, code = runBattyIn(t, dir, nil, "", "send", "--from", "manager", "manager", "note to self")
	if code != 1 || !strings.Contains(errOut, "manager may not message itself") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
}

func TestSendFromStdin(t *testing.T) {
	dir, l := writeTeam(t)
	id, box := mustSend(t, dir, nil, "first line\n  second line\n\n", "architect", "-")
	if m := pendingMessage(t, l, box, id); m.Body != "first line\n  second line" {
		t.Fatalf("body %q", m.Body)
	}
	_, errOut, code := runBattyIn(t, dir, nil, " \n\n", "send", "architect", "-")
	if code != 1 || !strings.Contains(errOut, "empty message") {
		t.Fatalf("empty stdin: exit %d, stderr %s", code, errOut)
	}
}

func TestSendErrorsAndUsage(t *testing.T) {
	dir, l := writeTeam(t)
	_, errOut, code := runBattyIn(t, dir, nil, "", "send", "engneer", "hi")
	if code != 1 || !strings.Contains(errOut, `unknown recipient "engneer": did you mean "engineer"?`) ||
		!strings.Contains(errOut, "known: human, architect, manager, engineer, engineer-1, engineer-2") {
		t.Fatalf("unknown recipient: exit %d, stderr %s", code, errOut)
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Fatalf("a failed send created %s: %v", l.Dir, err)
	}
	_, errOut, code = runBattyIn(t, dir, nil, "", "send", "manager", "  ")
	if code != 1 || !strings.Contains(errOut, "empty message") {
		t.Fatalf("empty message: exit %d, stderr %s", code, errOut)
	}
	for _, args := range [][]string{{"send", "manager"}, {"send"}, {"send", "--bogus", "manager", "hi"}} {
		_, errOut, code := runBattyIn(t, dir, nil, "", args...)
		if code != 2 || !strings.Contains(errOut, "Usage: batty send") {
			t.Errorf("%q: exit %d, want 2; stderr %s", args, code, errOut)
		}
	}
	_, errOut, code = runBattyIn(t, t.TempDir(), nil, "", "send", "manager", "hi")
	if code != 1 || !strings.Contains(errOut, "batty init") {
		t.Fatalf("no team file: exit %d, stderr %s", code, errOut)
	}
}

// A state directory or its inboxes/ that is a symbolic link is refused
// with a message naming it; nothing is written where it points.
func TestSendRefusesASymlinkedStateDir(t *testing.T) {
	for _, linked := range []string{"", "inboxes"} {
		t.Run("state/"+linked, func(t *testing.T) {
			dir, l := writeTeam(t)
			out := t.TempDir()
			at := filepath.Join(l.Dir, linked)
			if err := os.MkdirAll(filepath.Dir(at), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(out, at); err != nil {
				t.Fatal(err)
			}
			_, errOut, code := runBattyIn(t, dir, nil, "", "send", "manager", "secret plan")
			if code == 0 || !strings.Contains(errOut, at+" is a symbolic link") || !strings.Contains(errOut, "remove it") {
				t.Errorf("exit %d, stderr %s", code, errOut)
			}
			if des, _ := os.ReadDir(out); len(des) != 0 {
				t.Errorf("written through the link: %v", des)
			}
		})
	}
}

// layoutOf is the layout of the project whose team file is dir/team.yaml:
// its state directory under the tests' state home.
func layoutOf(t testing.TB, dir string) project.Layout {
	t.Helper()
	l, err := project.LayoutFor(filepath.Join(dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}
