package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/ptylog"
)

// writeTranscript appends notices to an agent's transcript through ptylog,
// each written at its time.
func writeTranscript(t *testing.T, path string, notices ...timedNotice) {
	t.Helper()
	for _, n := range notices {
		w, err := ptylog.Open(path, ptylog.Options{Now: func() time.Time { return n.at }})
		if err != nil {
			t.Fatal(err)
		}
		w.Notice(n.text)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

type timedNotice struct {
	at   time.Time
	text string
}

// allLine is a line of `batty logs --all` without colours.
func allLine(agent string, at time.Time, text string) string {
	return fmt.Sprintf("%-10s | %s [batty] %s", agent, at.Format("15:04:05"), text)
}

// TestLogsAllMergesInTimeOrder: the transcripts ptylog wrote are
// interleaved by the time of each line, each line prefixed with its
// agent's name; -n keeps the last lines of them all; piped, nothing is
// coloured; with colours, each agent's name has one colour.
func TestLogsAllMergesInTimeOrder(t *testing.T) {
	dir, l := writeTeam(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	writeTranscript(t, l.Transcript("manager"), timedNotice{at(0), "m1"}, timedNotice{at(300), "m2"}, timedNotice{at(2000), "m3"})
	writeTranscript(t, l.Transcript("engineer-1"), timedNotice{at(100), "e1"}, timedNotice{at(1500), "e2"})

	out, errOut, code := runBattyIn(t, dir, nil, "", "logs", "--all")
	want := strings.Join([]string{
		allLine("manager", at(0), "m1"),
		allLine("engineer-1", at(100), "e1"),
		allLine("manager", at(300), "m2"),
		allLine("engineer-1", at(1500), "e2"),
		allLine("manager", at(2000), "m3"),
	}, "\n") + "\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr: %q, want nothing (architect has no transcript yet)", errOut)
	}

	out, _, _ = runBattyIn(t, dir, nil, "", "logs", "--all", "-n", "2")
	if want := allLine("engineer-1", at(1500), "e2") + "\n" + allLine("manager", at(2000), "m3") + "\n"; out != want {
		t.Errorf("-n 2:\n%s\nwant:\n%s", out, want)
	}

	out, _, _ = runBattyIn(t, dir, nil, "", "logs", "--all", "--color", "always")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("--color always: %q", out)
	}
	for i, agent := range []string{"manager", "engineer-1", "manager", "engineer-1", "manager"} {
		prefix := agentColour(agent) + fmt.Sprintf("%-10s |", agent) + styleReset + " "
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("--color always: line %d = %q, want prefix %q", i, lines[i], prefix)
		}
	}
	if agentColour("manager") == agentColour("engineer-1") {
		t.Log("manager and engineer-1 share a colour (a hash collision); the test still checks each is stable")
	}

	// The wrong use of --all.
	if _, errOut, code := runBattyIn(t, dir, nil, "", "logs", "--all", "manager"); code != 2 || !strings.Contains(errOut, "name no agent") {
		t.Errorf("--all with an agent: exit %d, stderr %s", code, errOut)
	}
}

// TestLogsAllCleansWhatItPrints: what an agent wrote into its transcript
// reaches the terminal cleaned (safetext): no escape sequence but the
// transcript's colours, control and bidi characters shown escaped.
func TestLogsAllCleansWhatItPrints(t *testing.T) {
	dir, l := writeTeam(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	path := l.Transcript("architect")
	writeTranscript(t, path, timedNotice{base, "first"})
	appendTo(t, path, "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07ok\x1b]0;pwned\x07\x1b[2J over\rwrite \u202eevil\x08\n")
	for _, color := range []string{"never", "always"} {
		out, errOut, code := runBattyIn(t, dir, nil, "", "logs", "--all", "--color", color)
		if code != 0 {
			t.Fatalf("--color %s: exit %d, stderr %s", color, code, errOut)
		}
		plain := strings.ReplaceAll(strings.ReplaceAll(out, agentColour("architect"), ""), styleReset, "")
		plain = strings.ReplaceAll(plain, "\x1b[2m", "")
		plain = strings.ReplaceAll(plain, "\x1b[36m", "")
		want := allLine("architect", base, "first") + "\n" + fmt.Sprintf("%-10s | ok over write \\u202eevil\\x08\n", "architect")
		if plain != want {
			t.Errorf("--color %s: got %q\nwant %q", color, out, want)
		}
	}
}

// TestLogsAllFollow: with -f the history comes merged, then the lines
// appended to any transcript as they are written, including a transcript
// created after the start; SIGTERM ends it cleanly.
func TestLogsAllFollow(t *testing.T) {
	dir, l := writeTeam(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	writeTranscript(t, l.Transcript("engineer-1"), timedNotice{at(0), "e old"}, timedNotice{at(2), "e older line later"})
	writeTranscript(t, l.Transcript("engineer-2"), timedNotice{at(1), "f old"})

	f := startFollow(t, dir, "--all", "-n", "10")
	waitFor(t, f.stdout, allLine("engineer-1", at(0), "e old"))
	waitFor(t, f.stdout, allLine("engineer-2", at(1), "f old"))
	waitFor(t, f.stdout, allLine("engineer-1", at(2), "e older line later"))

	// manager's transcript does not exist yet: it is followed all the same.
	steps := []struct {
		agent string
		text  string
	}{{"manager", "m new 1"}, {"engineer-2", "f new"}, {"manager", "m new 2"}, {"engineer-1", "e new"}, {"architect", "a new"}}
	for i, s := range steps {
		writeTranscript(t, l.Transcript(s.agent), timedNotice{at(10 + i), s.text})
		waitFor(t, f.stdout, allLine(s.agent, at(10+i), s.text))
	}
	f.stop(t)
}

func TestMergeLines(t *testing.T) {
	base := time.Unix(1000, 0)
	l := func(agent string, s int) logLine {
		return logLine{agent: agent, text: agent, at: base.Add(time.Duration(s) * time.Second)}
	}
	in := []logLine{l("a", 1), l("a", 1), l("a", 3), l("b", 0), l("b", 1), l("b", 4)}
	got := mergeLines(in, -1)
	want := []logLine{l("b", 0), l("a", 1), l("a", 1), l("b", 1), l("a", 3), l("b", 4)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mergeLines = %v, want %v", got, want)
	}
	if got := mergeLines(in, 2); !reflect.DeepEqual(got, want[4:]) {
		t.Errorf("mergeLines(2) = %v", got)
	}
	if got := mergeLines(in, 0); len(got) != 0 {
		t.Errorf("mergeLines(0) = %v", got)
	}
}

// A line without a stamp keeps the time of the line before it, so it
// stays after it in the merge; a last line without a newline is flushed.
func TestLineSplitter(t *testing.T) {
	var got []logLine
	s := &lineSplitter{agent: "a", emit: func(l logLine) error { got = append(got, l); return nil }}
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []string{"2026-01-02T03:04:05.000Z one\nno stamp", "\nlast"} {
		if _, err := s.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	want := []logLine{
		{agent: "a", text: "2026-01-02T03:04:05.000Z one", at: stamp},
		{agent: "a", text: "no stamp", at: stamp},
		{agent: "a", text: "last", at: stamp},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].text != want[i].text || !got[i].at.Equal(want[i].at) {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAgentColourIsStable(t *testing.T) {
	// Pinned: a name keeps its colour from run to run and release to release.
	for name, want := range map[string]string{"manager": "\x1b[93m", "engineer-1": "\x1b[32m", "architect": "\x1b[34m"} {
		if got := agentColour(name); got != want {
			t.Errorf("agentColour(%q) = %q, want %q", name, got, want)
		}
	}
	seen := map[string]bool{}
	for i := range 50 {
		seen[agentColour(fmt.Sprintf("engineer-%d", i))] = true
	}
	if len(seen) < 5 {
		t.Errorf("50 names got %d colours", len(seen))
	}
}

// TestLogsShowsTimeOfDay: `batty logs` (and the cockpit's panes) show the
// full stamp of a transcript's lines as the time of day.
func TestLogsShowsTimeOfDay(t *testing.T) {
	dir, l := writeTeam(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	writeTranscript(t, l.Transcript("manager"), timedNotice{at, "hello"})
	out, errOut, code := runBattyIn(t, dir, nil, "", "logs", "manager")
	if want := at.Format("15:04:05") + " [batty] hello\n"; code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
	}
}

// TestLogsAllColourOnATerminal: on a terminal each agent's name has its
// colour; NO_COLOR makes it plain.
func TestLogsAllColourOnATerminal(t *testing.T) {
	dir, l := writeTeam(t)
	writeTranscript(t, l.Transcript("manager"), timedNotice{time.Now(), "hello"})
	for _, tc := range []struct {
		env    []string
		colour bool
	}{{nil, true}, {[]string{"NO_COLOR=1"}, false}} {
		out := outputOnTerminal(t, battyCommand(t, dir, append([]string{"NO_COLOR="}, tc.env...), "logs", "--all"))
		coloured := bytes.Contains(out, []byte(agentColour("manager")+"manager "))
		if coloured != tc.colour || !bytes.Contains(out, []byte("hello")) {
			t.Errorf("env %q: output %q; want colour %v", tc.env, out, tc.colour)
		}
		if !tc.colour && bytes.Contains(out, []byte("\x1b")) {
			t.Errorf("env %q: colours in %q", tc.env, out)
		}
	}
}

// TestLogsAllRefusesASymlinkedTranscript: a transcript planted as a link
// is refused, with and without -f; with -f the other followers are stopped
// and the command ends with the error instead of hanging.
func TestLogsAllRefusesASymlinkedTranscript(t *testing.T) {
	dir, l := writeTeam(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("private line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeTranscript(t, l.Transcript("engineer-1"), timedNotice{time.Now(), "hello"})
	if err := os.Symlink(secret, l.Transcript("manager")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"logs", "--all"}, {"logs", "--all", "-f", "--rescan", "1h"}} {
		cmd := battyCommand(t, dir, nil, args...)
		done := make(chan struct{})
		timer := time.AfterFunc(20*time.Second, func() {
			select {
			case <-done:
			default:
				cmd.Process.Kill()
			}
		})
		out, errOut, code := runCmd(t, cmd)
		close(done)
		timer.Stop()
		if code != 1 || strings.Contains(out, "private") || !strings.Contains(errOut, l.Transcript("manager")+" is a symbolic link") {
			t.Errorf("%q: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
}
