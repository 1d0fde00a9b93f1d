package fanout

import (
	"context"
	"strings"
	"testing"
)

func TestErrorKey(t *testing.T) {
	same := [][2]string{
		{`reply is not a JSON object: it starts with "ECHO:1 Oslo"`, `reply is not a JSON object: it starts with "ECHO:22 Lima \"x\""`},
		{"server_error: high demand (after 3 attempts)", "server_error: high demand (after 2 attempts)"},
		{"worker ended: exit status 1\n", "worker ended:  exit status 2"},
	}
	for _, c := range same {
		if errorKey(c[0]) != errorKey(c[1]) {
			t.Errorf("errorKey(%q) = %q, errorKey(%q) = %q: want the same", c[0], errorKey(c[0]), c[1], errorKey(c[1]))
		}
	}
	differ := [][2]string{
		{"reply is empty, not a JSON object", "reply is not one JSON object: text follows the object"},
		{"auth: not logged in", "server_error: high demand"},
	}
	for _, c := range differ {
		if errorKey(c[0]) == errorKey(c[1]) {
			t.Errorf("errorKey(%q) = errorKey(%q) = %q: want them apart", c[0], c[1], errorKey(c[0]))
		}
	}
	if k := errorKey(strings.Repeat("é", 1000)); len(k) > 300+len("…") {
		t.Errorf("a long error's key has %d bytes", len(k))
	}
}

func TestStopEarly(t *testing.T) {
	a, b := "reply is empty", "auth"
	for _, c := range []struct {
		name string
		keys []string
		left int
		want bool
	}{
		{"five alike", []string{a, a, a, a, a}, 10, true},
		{"more than five, the first five alike", []string{a, a, a, a, a, b}, 10, true},
		{"four so far", []string{a, a, a, a}, 10, false},
		{"one done among them", []string{a, a, "", a, a}, 10, false},
		{"first done", []string{"", a, a, a, a}, 10, false},
		{"two errors", []string{a, a, b, a, a}, 10, false},
		{"nothing left to start", []string{a, a, a, a, a}, 0, false},
		{"the sixth differs: too late to matter", []string{a, a, a, a, a, b}, 1, true},
	} {
		if got := stopEarly(c.keys, SameErrorRows, c.left); got != c.want {
			t.Errorf("%s: stopEarly(%q, %d, %d) = %v, want %v", c.name, c.keys, SameErrorRows, c.left, got, c.want)
		}
	}
	if stopEarly([]string{a}, 0, 5) {
		t.Error("n 0 stopped")
	}
}

func TestCommonError(t *testing.T) {
	for _, c := range []struct {
		errs []string
		want string
		n    int
	}{
		{nil, "", 0},
		{[]string{"auth"}, "auth", 1},
		{[]string{`reply is not a JSON object: it starts with "a"`, "auth", `reply is not a JSON object: it starts with "b"`}, `reply is not a JSON object: it starts with "a"`, 2},
		{[]string{"x", "y", "y", "x"}, "y", 2}, // y reached 2 first
	} {
		if got, n := commonError(c.errs); got != c.want || n != c.n {
			t.Errorf("commonError(%q) = %q, %d; want %q, %d", c.errs, got, n, c.want, c.n)
		}
	}
}

func TestSummaryLineNamesTheCommonErrorAndTheEarlyStop(t *testing.T) {
	s := Summary{Snapshot: Snapshot{Total: 10, Failed: 3, Done: 7}, AllDone: 7, AllFailed: 3, CommonError: "reply is empty\nnot JSON", CommonErrorRows: 2}
	line := SummaryLine(s, "out.csv")
	if !strings.Contains(line, "most common error (2 of 3 failed rows): reply is empty not JSON") {
		t.Errorf("summary %q does not name the most common error on one line", line)
	}
	s = Summary{Snapshot: Snapshot{Total: 100, Failed: 6, Stopping: "x", SameError: "auth: no login"}, AllFailed: 6, Pending: 94, CommonError: "auth: no login", CommonErrorRows: 6}
	line = SummaryLine(s, "out.csv")
	for _, want := range []string{"stopped early", "94 rows were not started: auth: no login", "--keep-going"} {
		if !strings.Contains(line, want) {
			t.Errorf("summary %q: want %q", line, want)
		}
	}
	if strings.Contains(line, "most common error") {
		t.Errorf("summary %q names the error twice", line)
	}
}

// TestFirstRowsFailingAlikeStopTheJob: the first five rows to finish all
// fail the same way (replies that are not JSON): no more rows start, the
// running ones finish, the summary says why; --keep-going runs every row;
// a rerun, the cause fixed, runs the rest.
func TestFirstRowsFailingAlikeStopTheJob(t *testing.T) {
	r := newRig(t, rows(20, func(i int) string { return "x" }), "{id} scenario:text")
	r.opts.Concurrency = 2
	s := r.run(context.Background(), nil)
	if !strings.Contains(s.Stopping, "same error") || !strings.Contains(s.SameError, "reply is not a JSON object") {
		t.Fatalf("summary %+v, want stopped by the same error", s)
	}
	if s.Failed < SameErrorRows || s.Failed > SameErrorRows+1 || s.Running != 0 || s.Pending != 20-s.Failed {
		t.Errorf("summary %+v: want 5 or 6 rows failed (the running one finishes), the rest pending", s)
	}
	if n := len(r.codexRuns()); n != s.Failed {
		t.Errorf("%d codex runs, want %d", n, s.Failed)
	}
	if !strings.Contains(SummaryLine(s, r.out), "rows were not started") {
		t.Errorf("summary line %q", SummaryLine(s, r.out))
	}

	// The cause fixed, a rerun runs every row not done.
	before := len(r.codexRuns())
	r.opts.Template, _ = ParseTemplate("{id} scenario:text replyjson", r.table.Columns)
	s = r.run(context.Background(), nil)
	if !s.Complete() || s.Done != 20 || len(r.codexRuns())-before != 20 {
		t.Errorf("rerun: summary %+v, %d codex runs; want all 20 rows done", s, len(r.codexRuns())-before)
	}
}

// TestKeepGoingRunsEveryRow: with KeepGoing the same failures do not stop
// the job, and the summary names the most common error.
func TestKeepGoingRunsEveryRow(t *testing.T) {
	r := newRig(t, rows(8, func(i int) string { return "x" }), "{id} scenario:text")
	r.opts.KeepGoing = true
	s := r.run(context.Background(), nil)
	if s.Stopping != "" || s.Failed != 8 || len(r.codexRuns()) != 8 {
		t.Fatalf("summary %+v, %d codex runs; want every row run", s, len(r.codexRuns()))
	}
	if s.CommonErrorRows != 8 || !strings.Contains(s.CommonError, "reply is not a JSON object") {
		t.Errorf("common error %q on %d rows", s.CommonError, s.CommonErrorRows)
	}
}

// TestMixedFailuresDoNotStopTheJob: a row done among the first five keeps
// the job going.
func TestMixedFailuresDoNotStopTheJob(t *testing.T) {
	r := newRig(t, "id,sc\n1,text\n2,text\n3,text replyjson\n4,text\n5,text\n6,text\n7,text\n", "{id} scenario:{sc}")
	r.opts.Concurrency = 1
	s := r.run(context.Background(), nil)
	if s.Stopping != "" || s.Done != 1 || s.Failed != 6 {
		t.Errorf("summary %+v, want every row run", s)
	}
}
