package orchestrator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/shim"
)

func TestMergeNotice(t *testing.T) {
	many := make([]string, 500)
	for i := range many {
		many[i] = strings.Repeat("d/", 200) + "x.go"
	}
	tests := []struct {
		name      string
		base      string
		files     []string
		want, not []string
	}{
		{"none", "main", nil, nil, nil},
		{"one", "main", []string{"shared.txt"},
			[]string{"Your worktree is still merging main; conflict markers are left in: shared.txt. Resolve them"}, []string{"more"}},
		{"a few", "main", []string{"a.go", "b/c.go"}, []string{"left in: a.go, b/c.go."}, []string{"more"}},
		{"hostile names", "main", []string{"evil\x1b]52;c;AAAA\a\nname", "rtl\u202etxt.exe"},
			[]string{"evil", `\u202e`}, []string{"\x1b", "\n", "\u202e"}},
		{"many long names", strings.Repeat("b", 300), many, []string{"and 49", "more. Resolve them"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mergeNotice(tt.base, tt.files)
			if (got == "") != (len(tt.files) == 0) {
				t.Fatalf("mergeNotice = %q", got)
			}
			if n := utf8.RuneCountInString(got); n > shim.MaxNotice {
				t.Fatalf("a notice of %d characters, a prompt shows %d: %q", n, shim.MaxNotice, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("notice %q lacks %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("notice %q holds %q", got, n)
				}
			}
		})
	}
}

// A daemon killed while its agent is mid-turn in a worktree that holds a
// merge with conflict markers: the next daemon keeps the merge in
// progress (the markers, the turn's edit, MERGE_HEAD), does not park the
// agent, and delivers the message again with a reminder naming the file
// that still holds markers.
func TestADaemonKilledMidMergeKeepsTheMergeAndReminds(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	child := p.startChildDaemon()
	id := p.send("eng", "human", "scenario:writehang:notes.txt=mid-turn")
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	waitFor(t, "the turn's edit", func() bool {
		b, _ := os.ReadFile(filepath.Join(wt, "notes.txt"))
		return string(b) == "mid-turn\n"
	})
	// The base moved on and conflicts with the branch: its merge waits in
	// the worktree, markers in shared.txt, as batty leaves it for the agent.
	if err := os.WriteFile(filepath.Join(wt, "shared.txt"), []byte("eng's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, wt, "commit", "-q", "-m", "eng's", "--", "shared.txt")
	if err := os.WriteFile(filepath.Join(p.dir, "shared.txt"), []byte("main's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, p.dir, "commit", "-q", "-m", "main's", "--", "shared.txt")
	merge := exec.Command("git", "-C", wt, "merge", "main")
	merge.Env = gitEnv(t.TempDir())
	if out, err := merge.CombinedOutput(); err == nil {
		t.Fatalf("the merge did not conflict:\n%s", out)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	mergeHead := git(t, wt, "rev-parse", "MERGE_HEAD")
	branch := git(t, p.dir, "rev-parse", "batty/eng")

	r := p.start(nil)
	r.waitEvent(t, "the message delivered again", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvDelivered && e.Message == id && payloadOf[eventlog.Delivered](e).Attempt > 1
	})
	if st := r.agentStatus(t, "eng"); st.Parked != nil || st.State == agentParked {
		t.Fatalf("the agent is parked: %+v", st.Parked)
	}
	waitFor(t, "the redelivery's prompt", func() bool { return strings.Count(readOr(p.prompts), "batty message "+id) == 2 })
	prompts := readOr(p.prompts)
	again := prompts[strings.LastIndex(prompts, "batty message "+id):]
	if !strings.Contains(again, "\n[batty] Your worktree is still merging main; conflict markers are left in: shared.txt.") {
		t.Fatalf("the redelivered prompt does not remind of the merge:\n%s", again)
	}
	if git(t, wt, "rev-parse", "MERGE_HEAD") != mergeHead || git(t, p.dir, "rev-parse", "batty/eng") != branch {
		t.Fatal("the merge in progress or the branch changed")
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "shared.txt")); !strings.Contains(string(b), "<<<<<<<") {
		t.Fatalf("shared.txt lost its markers: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "notes.txt")); string(b) != "mid-turn\n" {
		t.Fatalf("the turn's edit: %q", b)
	}
}

// readOr is the content of the file at path, "" when it cannot be read.
func readOr(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// At the end of an ordinary turn, a merge whose markers are still there is
// kept the same way: no commit, no failure, and the next message reminds
// the agent; once resolved, the turn's commit completes the merge and the
// reminder stops.
func TestATurnLeavingMarkersIsRemindedOfThem(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	r := p.start(nil)
	p.sendAndWait(r, "eng", "scenario:write:shared.txt=eng's", "completed")
	if err := os.WriteFile(filepath.Join(p.dir, "shared.txt"), []byte("main's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, p.dir, "commit", "-q", "-m", "main's", "--", "shared.txt")
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	merge := exec.Command("git", "-C", wt, "merge", "main")
	merge.Env = gitEnv(t.TempDir())
	if out, err := merge.CombinedOutput(); err == nil {
		t.Fatalf("the merge did not conflict:\n%s", out)
	}

	first := p.sendAndWait(r, "eng", "scenario:write:more.txt=more", "completed")
	r.waitEvent(t, "the warning", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWarning && strings.Contains(e.Detail, "conflict markers left in shared.txt")
	})
	second := p.sendAndWait(r, "eng", "go on", "completed")
	prompts := readOr(p.prompts)
	if at := prompts[strings.Index(prompts, "batty message "+first):]; strings.Contains(at[:strings.Index(at, "batty message "+second)], "[batty] Your worktree") {
		t.Fatal("the first message was reminded of a merge no commit had found yet")
	}
	if !strings.Contains(prompts[strings.Index(prompts, "batty message "+second):], "[batty] Your worktree is still merging main; conflict markers are left in: shared.txt.") {
		t.Fatalf("the next message does not remind of the merge:\n%s", prompts)
	}

	if err := os.WriteFile(filepath.Join(wt, "shared.txt"), []byte("both\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.sendAndWait(r, "eng", "resolved", "completed")
	if parents := git(t, p.dir, "log", "-1", "--format=%p", "batty/eng"); len(strings.Fields(parents)) != 2 {
		t.Fatalf("the resolving commit is no merge: parents %q", parents)
	}
	if got := git(t, p.dir, "show", "batty/eng:more.txt"); got != "more" {
		t.Fatalf("the merge's commit lost the edit of the turn before: %q", got)
	}
	last := p.sendAndWait(r, "eng", "after", "completed")
	if prompts := readOr(p.prompts); strings.Contains(prompts[strings.Index(prompts, "batty message "+last):], "[batty] Your worktree") {
		t.Fatal("reminded after the merge was committed")
	}
}
