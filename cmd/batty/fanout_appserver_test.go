package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/fanout"
	"github.com/battyhq/batty/procstat"
)

// fanoutRuntimes are the runtimes the real-Codex fan-out tests run on,
// with the runtime the summary line names.
var fanoutRuntimes = []struct{ flag, summary string }{
	{"exec", fanout.RuntimeExec},
	{"app-server", fanout.RuntimeShared},
}

// rowOf is the row number a request's last user message names ("Row N."),
// 0 for none.
func rowOf(req codextest.Request) int {
	m := regexp.MustCompile(`Row (\d+)\.`).FindStringSubmatch(req.LastUserText())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// rowRequests counts the model requests of every row (by rowOf).
func rowRequests(srv *codextest.Server) map[int]int {
	out := map[int]int{}
	for _, r := range srv.Requests() {
		if r.Kind != "compaction" {
			out[rowOf(r)]++
		}
	}
	return out
}

// realFanoutArgs is a job of j with the real codex bin on runtime rt.
func realFanoutArgs(j *fanoutJob, bin, rt string, more ...string) []string {
	return append([]string{"fanout", "--csv", j.in, "--output", j.out, "--codex-bin", bin, "--cwd", j.dir, "--runtime", rt,
		"--instruction", `Row {id}. [[mock:reply {{"row": {id}}}]]`}, more...)
}

// csvRows is a CSV of rows 1..n in one column id.
func csvRows(n int) string {
	var b strings.Builder
	b.WriteString("id\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// checkAllDone asserts that OUT has n rows, in input order, each done
// with its own answer on a thread of its own.
func checkAllDone(t *testing.T, j *fanoutJob, n int) {
	t.Helper()
	recs := j.records("id")
	if len(recs) != n {
		t.Fatalf("%d rows in OUT, want %d", len(recs), n)
	}
	threads := map[string]bool{}
	for i, r := range recs {
		if r.Status != fanout.StatusDone || r.Values[0] != strconv.Itoa(i+1) || r.Result != fmt.Sprintf(`{"row":%d}`, i+1) || r.ThreadID == "" {
			t.Errorf("OUT line %d: %+v", i+2, r)
		}
		if threads[r.ThreadID] {
			t.Errorf("row %d ran on the thread of another row", i+1)
		}
		threads[r.ThreadID] = true
	}
}

// TestFanoutRealCodexRuntimes runs a job of 9 rows at concurrency 3 (each
// worker runs several rows) with the real Codex CLI on each runtime:
// every row is answered once, OUT is complete and in input order, each
// row on a thread of its own, and the summary names the runtime.
func TestFanoutRealCodexRuntimes(t *testing.T) {
	bin := codextest.Codex(t)
	for _, rt := range fanoutRuntimes {
		t.Run(rt.flag, func(t *testing.T) {
			srv := codextest.NewServer(t)
			j := newFanoutJob(t, csvRows(9))
			out, errOut, code := runBatty(t, append(j.env, "CODEX_HOME="+srv.WriteHome(t)), "", realFanoutArgs(j, bin, rt.flag, "-c", "3")...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			checkAllDone(t, j, 9)
			for row, n := range rowRequests(srv) {
				if row < 1 || row > 9 || n != 1 {
					t.Errorf("row %d: %d model requests, want 1", row, n)
				}
			}
			if !strings.Contains(errOut, "runtime "+rt.summary) {
				t.Errorf("the summary does not name the runtime %q:\n%s", rt.summary, errOut)
			}
		})
	}
}

// TestFanoutDefaultRuntimeFallsBack: with no --runtime the job runs on
// the shared app-server; a codex that has none (the fake) runs the rows
// on exec, saying so once.
func TestFanoutDefaultRuntimeFallsBack(t *testing.T) {
	j := newFanoutJob(t, "id\n1\n2\n")
	args := j.args("{id} replyjson")
	for i, a := range args {
		if a == "--runtime" {
			args = append(args[:i:i], args[i+2:]...)
			break
		}
	}
	_, errOut, code := runBatty(t, j.env, "", args...)
	if code != 0 || !strings.Contains(errOut, "no shared app-server") || !strings.Contains(errOut, "the rows run on codex exec") ||
		!strings.Contains(errOut, "runtime "+fanout.RuntimeExec) {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if j.runsOf(1) != 1 || j.runsOf(2) != 1 {
		t.Errorf("codex runs %d %d, want 1 each", j.runsOf(1), j.runsOf(2))
	}
}

// holdFirst is a mock hook that holds the first request of every row in
// rows (until codex leaves) and answers every other one as scripted; it
// records the rows held.
type holdFirst struct {
	srv  *codextest.Server
	rows map[int]bool

	mu   sync.Mutex
	seen map[int]int
}

func (h *holdFirst) reply(req codextest.Request) codextest.Reply {
	row := rowOf(req)
	h.mu.Lock()
	h.seen[row]++
	first := h.seen[row] == 1
	h.mu.Unlock()
	if first && h.rows[row] {
		return codextest.Reply{Hold: 5 * time.Minute}
	}
	return h.srv.Scripted(req)
}

// processUnder returns the pid of the first process under pid whose
// argument 1 is arg (0: none).
func processUnder(t *testing.T, pid int, arg string) int {
	t.Helper()
	ps, err := procstat.List()
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]procstat.Process{}
	for _, p := range ps {
		children[p.PPID] = append(children[p.PPID], p)
	}
	queue := []int{pid}
	for len(queue) > 0 {
		for _, p := range children[queue[0]] {
			if len(p.Args) > 1 && p.Args[1] == arg {
				return p.PID
			}
			queue = append(queue, p.PID)
		}
		queue = queue[1:]
	}
	return 0
}

// waitInFlight waits until the mock has n requests.
func waitInFlight(t *testing.T, srv *codextest.Server, n int, cmd *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.WaitRequests(ctx, n); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%d requests never came: %v\nstderr:\n%s", n, err, stderr)
	}
}

// TestFanoutRealCodexKilledJobResumes stops a job (SIGINT, then SIGKILL)
// with the real Codex CLI, on each runtime, once rows 1–4 are done and
// rows 5–6 are running: nothing is left running, an interrupted job says
// what is pending, and the same command runs only rows 5 and 6 again.
func TestFanoutRealCodexKilledJobResumes(t *testing.T) {
	bin := codextest.Codex(t)
	for _, c := range []struct {
		rt  string
		sig syscall.Signal
	}{{"exec", syscall.SIGKILL}, {"app-server", syscall.SIGKILL}, {"exec", syscall.SIGINT}, {"app-server", syscall.SIGINT}} {
		rt := c.rt
		t.Run(fmt.Sprintf("%s/%v", rt, c.sig), func(t *testing.T) {
			srv := codextest.NewServer(t)
			h := &holdFirst{srv: srv, rows: map[int]bool{5: true, 6: true}, seen: map[int]int{}}
			srv.Handle(h.reply)
			j := newFanoutJob(t, csvRows(6))
			env := append(j.env, "CODEX_HOME="+srv.WriteHome(t))
			args := realFanoutArgs(j, bin, rt, "-c", "2", "--shutdown-timeout", "100ms")
			cmd := battyCommand(t, "", env, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			j.waitJournal(4, cmd, &stderr)
			waitInFlight(t, srv, 6, cmd, &stderr)
			cmd.Process.Signal(c.sig)
			err := cmd.Wait()
			if ee, _ := err.(*exec.ExitError); c.sig == syscall.SIGINT && (ee == nil || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "4 of 6 rows done, 0 failed, 2 pending")) {
				t.Errorf("after SIGINT: %v, want exit 1 and the summary\nstderr:\n%s", err, stderr.String())
			}
			codextest.AssertNoMarked(t, j.mark)
			out, errOut, code := runBatty(t, env, "", args...)
			if code != 0 {
				t.Fatalf("rerun: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			checkAllDone(t, j, 6)
			want := map[int]int{1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2}
			if got := rowRequests(srv); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("model requests by row %v, want %v", got, want)
			}
		})
	}
}

// TestFanoutSharedAppServerKilled kills the shared app-server (SIGKILL)
// while rows 1–4 run on it: the job notices, the broker starts it again,
// the four rows run once more and every row is done; nothing is left
// running.
func TestFanoutSharedAppServerKilled(t *testing.T) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	h := &holdFirst{srv: srv, rows: map[int]bool{1: true, 2: true, 3: true, 4: true}, seen: map[int]int{}}
	srv.Handle(h.reply)
	j := newFanoutJob(t, csvRows(8))
	cmd := battyCommand(t, "", append(j.env, "CODEX_HOME="+srv.WriteHome(t)), realFanoutArgs(j, bin, "app-server", "-c", "4")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, srv, 4, cmd, &stderr)
	pid := processUnder(t, cmd.Process.Pid, "app-server")
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no app-server under batty\nstderr:\n%s", stderr.String())
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("batty fanout: %v\nstderr:\n%s", err, stderr.String())
	}
	checkAllDone(t, j, 8)
	want := map[int]int{1: 2, 2: 2, 3: 2, 4: 2, 5: 1, 6: 1, 7: 1, 8: 1}
	if got := rowRequests(srv); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("model requests by row %v, want %v\nstderr:\n%s", got, want, stderr.String())
	}
	if !strings.Contains(stderr.String(), "The shared app-server died during a row; retrying it") {
		t.Errorf("no word of the retries:\n%s", stderr.String())
	}
}

// TestFanoutRowDirectories runs rows that each write the same file name,
// with --cwd naming a column, on each runtime (the real Codex CLI runs
// the command the mock asks for): each row's file is in its own
// directory, and a row whose directory is missing fails without a turn.
func TestFanoutRowDirectories(t *testing.T) {
	bin := codextest.Codex(t)
	for _, rt := range fanoutRuntimes {
		t.Run(rt.flag, func(t *testing.T) {
			srv := codextest.NewServer(t)
			srv.Handle(func(req codextest.Request) codextest.Reply {
				if req.FollowUp {
					return codextest.TextReply(`{"wrote": true}`)
				}
				return srv.Scripted(req)
			})
			j := newFanoutJob(t, "id,dir\n1,a\n2,b\n3,missing\n")
			for _, d := range []string{"a", "b"} {
				if err := os.Mkdir(filepath.Join(j.dir, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			env := append(j.env, "CODEX_HOME="+srv.WriteHome(t), "HOME="+t.TempDir())
			args := []string{"fanout", "--csv", j.in, "--output", j.out, "--codex-bin", bin, "--runtime", rt.flag, "-c", "2",
				"--cwd", filepath.Join(j.dir, "{dir}"), "--instruction", "Row {id}. [[mock:shell printf row{id} > same.txt]]"}
			out, errOut, code := runBatty(t, env, "", args...)
			if code != 1 || !strings.Contains(errOut, "runtime "+rt.summary) {
				t.Fatalf("exit %d, want 1 (a row failed), on %s\nstdout:\n%s\nstderr:\n%s", code, rt.summary, out, errOut)
			}
			for _, c := range []struct{ dir, want string }{{"a", "row1"}, {"b", "row2"}} {
				if b, err := os.ReadFile(filepath.Join(j.dir, c.dir, "same.txt")); err != nil || string(b) != c.want {
					t.Errorf("%s/same.txt: %q, %v; want %q", c.dir, b, err, c.want)
				}
			}
			if _, err := os.Stat(filepath.Join(j.dir, "same.txt")); err == nil {
				t.Error("a row wrote in the job's directory")
			}
			recs := j.records("id", "dir")
			if recs[0].Status != fanout.StatusDone || recs[1].Status != fanout.StatusDone || recs[0].ThreadID == recs[1].ThreadID {
				t.Errorf("rows 1 and 2: %+v\n%+v", recs[0], recs[1])
			}
			if recs[2].Status != fanout.StatusFailed || !strings.Contains(recs[2].Error, "not run: the row's working directory") {
				t.Errorf("row 3: %+v", recs[2])
			}
			if n := rowRequests(srv)[3]; n != 0 {
				t.Errorf("row 3 reached the model %d times", n)
			}
		})
	}
}

// TestFanoutRealCodexAccounts runs a job on two accounts of the team file
// with the real Codex CLI, on each runtime: the first account's model
// (work) answers with a usage limit, so the rows go on on the spare one
// (on the app-server, its own shared process), each answered once there.
func TestFanoutRealCodexAccounts(t *testing.T) {
	bin := codextest.Codex(t)
	for _, rt := range fanoutRuntimes {
		t.Run(rt.flag, func(t *testing.T) {
			srv := codextest.NewServer(t)
			quota := srv.Scripted(codextest.Request{UserTexts: []string{"[[mock:quota]]"}})
			srv.Handle(func(req codextest.Request) codextest.Reply {
				if req.Model == "work-model" {
					return quota
				}
				return srv.Scripted(req)
			})
			j := newFanoutJob(t, csvRows(4))
			work := srv.WriteHomeWith(t, codextest.HomeConfig{Model: "work-model"})
			spare := srv.WriteHomeWith(t, codextest.HomeConfig{Model: "spare-model"})
			teamFile := filepath.Join(j.dir, "team.yaml")
			yaml := fmt.Sprintf("name: crew\naccounts:\n  - name: work\n    codex_home: %s\n  - name: spare\n    codex_home: %s\nroles:\n  - name: lead\n", work, spare)
			if err := os.WriteFile(teamFile, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runBatty(t, j.env, "", realFanoutArgs(j, bin, rt.flag, "-c", "2", "--team", teamFile, "--accounts", "work,spare")...)
			if code != 0 || !strings.Contains(errOut, "Usage limit on account work: rows go on on account spare") || !strings.Contains(errOut, "runtime "+rt.summary) {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			checkAllDone(t, j, 4)
			answered := map[int]int{}
			for _, r := range srv.Requests() {
				if r.Model == "spare-model" {
					answered[rowOf(r)]++
				}
			}
			if fmt.Sprint(answered) != fmt.Sprint(map[int]int{1: 1, 2: 1, 3: 1, 4: 1}) {
				t.Errorf("rows answered on spare %v, want each once", answered)
			}
		})
	}
}
