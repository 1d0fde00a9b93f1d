package blame

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

// Sizes of the benchmark's history.
const (
	benchLines    = 1000 // the blamed file's lines
	benchAgents   = 5
	benchLandings = 40 // each of one agent's branch
	benchTurns    = 10 // turn commits per landing, each changing benchChanged lines
	benchChanged  = 5
	benchJournal  = 10_000 // turns in the journal (the commits' and others)
)

// benchHistory makes, with git fast-import, a repository whose file f.txt
// of benchLines lines was written by benchLandings × benchTurns turn
// commits (each with its Batty-Message trailer) of benchAgents agents,
// each agent's branch landed on main by a merge commit, and a journal of
// benchJournal turns naming those commits among others.
func benchHistory(b *testing.B) Source {
	b.Helper()
	dir := b.TempDir()
	top := filepath.Join(dir, "project")
	l := project.Layout{Dir: filepath.Join(dir, "state")}
	run := func(stdin []byte, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = top
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if err := os.MkdirAll(top, 0o700); err != nil {
		b.Fatal(err)
	}
	run(nil, "init", "-q", "-b", "main")
	lines := make([]string, benchLines)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of the start, some code to read: x := f(y) + g(z)", i)
	}
	var s bytes.Buffer
	when := 1_900_000_000
	mark := 0
	commit := func(ref, who, msg string, from int, merge int) int {
		mark++
		when++
		fmt.Fprintf(&s, "commit %s\nmark :%d\nauthor %s <%s@batty.invalid> %d +0000\ncommitter batty <batty@batty.invalid> %d +0000\ndata %d\n%s\n",
			ref, mark, who, who, when, when, len(msg), msg)
		if from > 0 {
			fmt.Fprintf(&s, "from :%d\n", from)
		}
		if merge > 0 {
			fmt.Fprintf(&s, "merge :%d\n", merge)
		}
		text := strings.Join(lines, "\n") + "\n"
		fmt.Fprintf(&s, "M 100644 inline f.txt\ndata %d\n%s\n", len(text), text)
		return mark
	}
	type turnCommit struct {
		mark       int
		agent, msg string
	}
	var turns []turnCommit
	main := commit("refs/heads/main", "human", "start", 0, 0)
	line := 0
	for k := range benchLandings {
		agent := fmt.Sprintf("agent-%d", k%benchAgents)
		ref := "refs/heads/batty/" + agent
		tip := main
		for j := range benchTurns {
			msg := fmt.Sprintf("m%03d-%02d", k, j)
			for range benchChanged {
				lines[line%benchLines] = fmt.Sprintf("line %d rewritten by %s for message %s", line%benchLines, agent, msg)
				line += 7
			}
			tip = commit(ref, agent, fmt.Sprintf("Turn %d of %s\n\nBatty-Message: %s", j, agent, msg), tip, 0)
			turns = append(turns, turnCommit{mark: tip, agent: agent, msg: msg})
		}
		main = commit("refs/heads/main", "batty", fmt.Sprintf("Land batty/%s (%d commits)", agent, benchTurns), main, tip)
	}
	marks := filepath.Join(dir, "marks")
	run(s.Bytes(), "fast-import", "--quiet", "--export-marks="+marks)
	shas := map[int]string{}
	mb, err := os.ReadFile(marks)
	if err != nil {
		b.Fatal(err)
	}
	for _, ln := range strings.Split(strings.TrimSpace(string(mb)), "\n") {
		var m int
		var sha string
		if _, err := fmt.Sscanf(ln, ":%d %s", &m, &sha); err != nil {
			b.Fatal(err)
		}
		shas[m] = sha
	}
	run(nil, "reset", "-q", "--hard", "main")

	// The journal: the turn commits' lines spread among others.
	jdir := filepath.Join(l.Dir, journal.DirName)
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		b.Fatal(err)
	}
	files := map[string]*bufio.Writer{}
	var closers []*os.File
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	every := benchJournal / len(turns)
	for n := range benchJournal {
		tn := journal.Turn{Agent: fmt.Sprintf("agent-%d", n%benchAgents), Role: "dev", At: t0.Add(time.Duration(n) * time.Minute),
			Finished: protocol.TurnFinished{ThreadID: "th", Status: protocol.TurnCompleted, Reply: "done: a reply of a few words, as turns end"}}
		tn.Message = inbox.Message{ID: fmt.Sprintf("other-%05d", n), From: "architect", Body: "a message of some forty words " + strings.Repeat("word ", 40), Attempt: 1}
		if n%every == 0 && n/every < len(turns) {
			tc := turns[n/every]
			tn.Agent, tn.Message.ID = tc.agent, tc.msg
			tn.Commit = journal.Commit{SHA: shas[tc.mark], Branch: "batty/" + tc.agent}
			tn.Files = []string{"f.txt"}
		}
		line, err := journal.Encode(journal.Build(tn))
		if err != nil {
			b.Fatal(err)
		}
		w := files[tn.Agent]
		if w == nil {
			f, err := os.OpenFile(filepath.Join(jdir, journal.FileName(tn.Agent)), os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			closers = append(closers, f)
			w = bufio.NewWriter(f)
			files[tn.Agent] = w
		}
		w.Write(append(line, '\n'))
	}
	for _, w := range files {
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range closers {
		f.Close()
	}
	return Source{Git: Git(top, nil), Layout: l}
}

// BenchmarkBlame is `batty blame` of a 1,000-line file written by 400
// turns of 5 agents over 40 landings, with a journal of 10,000 turns:
// the whole file, and one line.
func BenchmarkBlame(b *testing.B) {
	src := benchHistory(b)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rg   Range
	}{{"1000-lines", Range{}}, {"one-line", Range{From: 500, To: 500}}} {
		b.Run(tc.name, func(b *testing.B) {
			var res Result
			for b.Loop() {
				var err error
				if res, err = Blame(ctx, src, "main", "f.txt", tc.rg); err != nil {
					b.Fatal(err)
				}
			}
			made := 0
			for _, c := range res.Commits {
				if c.Made && c.Landing != nil {
					made++
				}
			}
			if made == 0 || (tc.rg.From == 0 && len(res.Lines) != benchLines) {
				b.Fatalf("%d lines, %d commits told by their turn and landing", len(res.Lines), made)
			}
			b.ReportMetric(float64(len(res.Commits)), "commits")
		})
	}
}
