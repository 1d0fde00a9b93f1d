package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/fanout"
)

// fanoutJob is one `batty fanout` on the fake codex, in a directory of its
// own.
type fanoutJob struct {
	t    *testing.T
	dir  string
	in   string
	out  string
	log  string // $FAKE_CODEX_LOG
	mark string
	env  []string
}

func newFanoutJob(t *testing.T, csv string) *fanoutJob {
	t.Helper()
	dir := t.TempDir()
	j := &fanoutJob{t: t, dir: dir, in: filepath.Join(dir, "in.csv"), out: filepath.Join(dir, "out.csv"),
		log: filepath.Join(dir, "codex.log"), mark: fmt.Sprintf("fanout-cli-%d-%d", os.Getpid(), time.Now().UnixNano())}
	if err := os.WriteFile(j.in, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	j.env = []string{codextest.MarkEnv + "=" + j.mark}
	t.Cleanup(func() { codextest.AssertNoMarked(t, j.mark) })
	return j
}

// args returns the command line of the job with the fake codex, which
// has no app-server: on exec.
func (j *fanoutJob) args(instruction string, more ...string) []string {
	self, err := os.Executable()
	if err != nil {
		j.t.Fatal(err)
	}
	state := filepath.Join(j.dir, "state")
	os.MkdirAll(state, 0o700)
	return append([]string{"fanout", "--csv", j.in, "--instruction", instruction, "--output", j.out,
		"--codex-bin", self, "--cwd", j.dir, "--stop-grace", "300ms", "--runtime", "exec",
		"--env", "BATTY_TEST_ROLE=fakecodex", "--env", "FAKE_CODEX_STATE=" + state, "--env", "FAKE_CODEX_LOG=" + j.log}, more...)
}

// records reads OUT.
func (j *fanoutJob) records(columns ...string) []fanout.Record {
	j.t.Helper()
	b, err := os.ReadFile(j.out)
	if err != nil {
		j.t.Fatal(err)
	}
	recs, err := fanout.DecodeOutput(b, columns)
	if err != nil {
		j.t.Fatalf("%v:\n%s", err, b)
	}
	return recs
}

// runsOf counts the codex runs of row n.
func (j *fanoutJob) runsOf(n int) int {
	b, _ := os.ReadFile(j.log)
	return strings.Count(string(b), fmt.Sprintf("--- batty message row-%d from", n))
}

func TestFanoutRunsEveryRowAndKeepsTheOrder(t *testing.T) {
	j := newFanoutJob(t, "id,city\n1,Oslo\n2,Lima\n3,\"Rio, BR\"\n")
	out, errOut, code := runBatty(t, j.env, "", j.args("Tell me about {city} ({id}) replyjson", "-c", "2")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	recs := j.records("id", "city")
	for i, city := range []string{"Oslo", "Lima", "Rio, BR"} {
		var res map[string]string
		json.Unmarshal([]byte(recs[i].Result), &res)
		if recs[i].Status != fanout.StatusDone || res["row"] != fmt.Sprintf("Tell me about %s (%d) replyjson", city, i+1) {
			t.Errorf("row %d: %+v", i+1, recs[i])
		}
	}
	if !strings.Contains(errOut, "3 of 3 rows done, 0 failed, 0 pending") {
		t.Errorf("no final summary on stderr:\n%s", errOut)
	}
	if _, err := os.Stat(j.out + fanout.JournalSuffix); err == nil {
		t.Error("the journal was left behind")
	}
	if _, err := os.Lstat(j.out + fanout.LockSuffix); err == nil {
		t.Error("the lock file was left behind")
	}
	// A finished job reruns for free.
	_, _, code = runBatty(t, j.env, "", j.args("Tell me about {city} ({id}) replyjson")...)
	if code != 0 || j.runsOf(1)+j.runsOf(2)+j.runsOf(3) != 3 {
		t.Errorf("rerun: exit %d, codex runs %d %d %d; want nothing run", code, j.runsOf(1), j.runsOf(2), j.runsOf(3))
	}
}

func TestFanoutUsageErrors(t *testing.T) {
	j := newFanoutJob(t, "id,city\n1,Oslo\n")
	// Codex asks for strict structured output, which the API refuses for
	// this schema on every request.
	loose := filepath.Join(j.dir, "loose.json")
	if err := os.WriteFile(loose, []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown placeholder", j.args("about {town}"), "placeholder {town} names no column of the CSV file; its columns: id, city"},
		{"unclosed brace", j.args("about {city"), "is not closed"},
		{"concurrency 0", j.args("x", "-c", "0"), "--concurrency 0: want 1 to 256"},
		{"concurrency too high", j.args("x", "-c", "100000"), "--concurrency 100000: want 1 to 256"},
		{"negative budget", j.args("x", "--max-tokens", "-1"), "--max-tokens -1"},
		{"no csv", []string{"fanout", "--instruction", "x", "--output", j.out}, "--csv is required"},
		{"missing schema", j.args("x", "--schema", filepath.Join(j.dir, "nope.json")), "--schema"},
		{"schema strict output refuses", j.args("x", "--schema", loose), `an object schema needs "additionalProperties": false`},
		{"role with codex flags", j.args("x", "--role", "dev"), "with --role the codex settings come from the role"},
		{"row directory naming no column", j.args("x", "--cwd", "/w/{town}"), "--cwd: placeholder {town} names no column"},
		{"exec arguments on the app-server", j.args("x", "--runtime", "app-server", "--codex-arg", "--color"), "codex app-server does not take the codex exec arguments --color"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := runBatty(t, j.env, "", c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, c.want)
			}
			if _, err := os.Stat(j.out); err == nil {
				t.Error("OUT was written")
			}
		})
	}
	bad := filepath.Join(j.dir, "bad.csv")
	os.WriteFile(bad, []byte("a,b\n1,2\n3\n"), 0o600)
	_, errOut, code := runBatty(t, j.env, "", "fanout", "--csv", bad, "--instruction", "x", "--output", j.out)
	if code != 2 || !strings.Contains(errOut, "line 3: 1 fields, the header has 2") {
		t.Errorf("ragged CSV: exit %d, stderr:\n%s", code, errOut)
	}
	// An OUT that is something else is refused and left alone.
	os.WriteFile(j.out, []byte("precious,data\n1,2\n"), 0o600)
	_, errOut, code = runBatty(t, j.env, "", j.args("about {city} replyjson")...)
	if b, _ := os.ReadFile(j.out); code != 2 || string(b) != "precious,data\n1,2\n" || !strings.Contains(errOut, "is not a batty fanout output") {
		t.Errorf("foreign OUT: exit %d, OUT %q, stderr:\n%s", code, b, errOut)
	}
}

// waitJournal waits until the journal of j holds n records.
func (j *fanoutJob) waitJournal(n int, cmd *exec.Cmd, stderr *bytes.Buffer) {
	j.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(j.out + fanout.JournalSuffix)
		if bytes.Count(b, []byte(`"status":"done"`)) >= n {
			return
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			j.t.Fatalf("the journal never held %d rows:\n%s\nstderr:\n%s", n, b, stderr)
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes
	}
}

// testFanoutRerunAfter interrupts a job with sig once its four quick rows
// are recorded, checks what was kept, and reruns it: only the four slow
// rows run again.
func testFanoutRerunAfter(t *testing.T, sig syscall.Signal) {
	var csv strings.Builder
	csv.WriteString("id,sc\n")
	for i := 1; i <= 8; i++ {
		sc := "text"
		if i%2 == 0 {
			sc = "sleepms:6000"
		}
		fmt.Fprintf(&csv, "%d,%s\n", i, sc)
	}
	j := newFanoutJob(t, csv.String())
	args := j.args("{id} scenario:{sc} replyjson", "-c", "8", "--shutdown-timeout", "100ms")
	cmd := battyCommand(t, "", j.env, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	j.waitJournal(4, cmd, &stderr)
	// Every slow row is running (a loaded machine may start the last
	// workers after the quick rows are done).
	deadline := time.Now().Add(60 * time.Second)
	for i := 2; i <= 8; i += 2 {
		for j.runsOf(i) == 0 {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("row %d never started:\n%s", i, stderr.String())
			}
			time.Sleep(20 * time.Millisecond) // polling a file another process writes
		}
	}
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	ee, _ := err.(*exec.ExitError)
	switch sig {
	case syscall.SIGINT, syscall.SIGHUP:
		if ee == nil || ee.ExitCode() != 1 {
			t.Fatalf("after SIGINT: %v, want exit 1\nstderr:\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "4 of 8 rows done, 0 failed, 4 pending") {
			t.Errorf("no summary of the interrupted job:\n%s", stderr.String())
		}
	case syscall.SIGKILL:
		if _, err := os.Stat(j.out + fanout.JournalSuffix); err != nil {
			t.Fatalf("no journal after SIGKILL: %v", err)
		}
	}
	// Nothing is left running: the shims and their codex ended with batty.
	codextest.AssertNoMarked(t, j.mark)
	for i := 1; i <= 8; i++ {
		if got := j.runsOf(i); got != 1 {
			t.Fatalf("row %d ran %d times before the rerun", i, got)
		}
	}
	out, errOut, code := runBatty(t, j.env, "", args...)
	if code != 0 {
		t.Fatalf("rerun: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for i := 1; i <= 8; i++ {
		want := 1
		if i%2 == 0 {
			want = 2
		}
		if got := j.runsOf(i); got != want {
			t.Errorf("row %d ran %d times in all, want %d", i, got, want)
		}
	}
	recs := j.records("id", "sc")
	if len(recs) != 8 {
		t.Fatalf("%d rows in OUT, want 8", len(recs))
	}
	for i, r := range recs {
		if r.Status != fanout.StatusDone || r.Values[0] != fmt.Sprint(i+1) {
			t.Errorf("OUT line %d: %+v", i+2, r)
		}
	}
}

func TestFanoutRerunAfterSIGINT(t *testing.T)  { testFanoutRerunAfter(t, syscall.SIGINT) }
func TestFanoutRerunAfterSIGKILL(t *testing.T) { testFanoutRerunAfter(t, syscall.SIGKILL) }

// TestFanoutRerunAfterSIGHUP: a closed terminal stops the job as Ctrl-C
// does, with its summary, instead of ending batty at once.
func TestFanoutRerunAfterSIGHUP(t *testing.T) { testFanoutRerunAfter(t, syscall.SIGHUP) }

// TestFanoutRealCodex runs the real Codex CLI against the mock Responses
// API on a small CSV, with and without --schema, on each runtime.
func TestFanoutRealCodex(t *testing.T) {
	bin := codextest.Codex(t)
	for _, rt := range fanoutRuntimes {
		for _, withSchema := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/schema=%v", rt.flag, withSchema), func(t *testing.T) {
				testFanoutRealCodex(t, bin, rt.flag, withSchema)
			})
		}
	}
}

func testFanoutRealCodex(t *testing.T, bin, runtime string, withSchema bool) {
	srv := codextest.NewServer(t)
	j := newFanoutJob(t, "city\nOslo\nLima\n")
	args := []string{"fanout", "--csv", j.in, "--output", j.out, "--codex-bin", bin, "--cwd", j.dir, "--runtime", runtime,
		"--instruction", `Name the city. [[mock:reply {{"city": "{city}"}}]]`}
	if withSchema {
		schema := filepath.Join(j.dir, "schema.json")
		os.WriteFile(schema, []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`), 0o600)
		args = append(args, "--schema", schema)
	}
	out, errOut, code := runBatty(t, append(j.env, "CODEX_HOME="+srv.WriteHome(t)), "", args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	recs := j.records("city")
	for i, city := range []string{"Oslo", "Lima"} {
		if recs[i].Status != fanout.StatusDone || recs[i].Result != `{"city":"`+city+`"}` || recs[i].ThreadID == "" || recs[i].Tokens == 0 {
			t.Errorf("row %d: %+v", i+1, recs[i])
		}
	}
	if recs[0].ThreadID == recs[1].ThreadID {
		t.Error("both rows ran on one thread")
	}
	var turns int
	for _, r := range srv.Requests() {
		if r.Kind == "compaction" {
			continue
		}
		turns++
		hasSchema := bytes.Contains(r.Body, []byte(`"json_schema"`)) && bytes.Contains(r.Body, []byte(`"additionalProperties":false`))
		if hasSchema != withSchema {
			t.Errorf("request %d carries the schema: %v, want %v\n%s", r.Seq, hasSchema, withSchema, r.Body)
		}
		if !strings.Contains(r.LastUserText(), "exactly one JSON object") {
			t.Errorf("request %d does not ask for one JSON object: %q", r.Seq, r.LastUserText())
		}
	}
	if turns != 2 {
		t.Errorf("%d model requests, want 2", turns)
	}
}

// TestFanoutTakesTheRolesCodexSettings: --role runs the workers with the
// role's codex binary, environment (through the handshake, not a command
// line), instructions and working directory.
func TestFanoutTakesTheRolesCodexSettings(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	j := newFanoutJob(t, "id\n1\n2\n")
	argv := filepath.Join(j.dir, "argv.log")
	work := filepath.Join(j.dir, "work")
	os.MkdirAll(filepath.Join(j.dir, "prompts"), 0o700)
	os.MkdirAll(work, 0o700)
	os.WriteFile(filepath.Join(j.dir, "prompts", "tri.md"), []byte("You triage rows."), 0o600)
	yaml := fmt.Sprintf(`name: crew
codex:
  bin: %s
  env:
    BATTY_TEST_ROLE: fakecodex
    FAKE_CODEX_STATE: %s
    FAKE_CODEX_LOG: %s
    FAKE_CODEX_ARGV: %s
    ROLE_SECRET: s3cr3t-of-the-role
roles:
  - name: lead
  - name: triager
    prompt: prompts/tri.md
    cwd: work
    codex:
      model: gpt-fanout
`, self, t.TempDir(), j.log, argv)
	team := filepath.Join(j.dir, "team.yaml")
	os.WriteFile(team, []byte(yaml), 0o600)
	out, errOut, code := runBatty(t, j.env, "", "fanout", "--csv", j.in, "--output", j.out, "--team", team, "--role", "triager",
		"--instruction", "{id} scenario:env:ROLE_SECRET replyjson")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for i, r := range j.records("id") {
		if r.Status != fanout.StatusDone || !strings.Contains(r.Result, `"reply":"s3cr3t-of-the-role"`) {
			t.Errorf("row %d: %+v", i+1, r)
		}
	}
	b, _ := os.ReadFile(argv)
	args := string(b)
	if strings.Count(args, "\n") != 2 || !strings.Contains(args, "gpt-fanout") || !strings.Contains(args, "You triage rows.") {
		t.Errorf("codex argv lacks the role's model or instructions:\n%q", args)
	}
	if strings.Contains(args, "s3cr3t") {
		t.Errorf("the role's environment reached a command line:\n%q", args)
	}
	// An unknown role names the roles there are.
	_, errOut, code = runBatty(t, j.env, "", "fanout", "--csv", j.in, "--output", j.out, "--team", team, "--role", "nope", "--instruction", "x")
	if code != 2 || !strings.Contains(errOut, `--role "nope": no such role`) || !strings.Contains(errOut, "roles: lead, triager") {
		t.Errorf("unknown role: exit %d\n%s", code, errOut)
	}
}

// TestFanoutSecondInterruptStopsRunningRows: the first Ctrl-C lets the
// running rows finish (up to --shutdown-timeout, here far away); the
// second stops them at once, and nothing is left running.
func TestFanoutSecondInterruptStopsRunningRows(t *testing.T) {
	j := newFanoutJob(t, "id\n1\n2\n")
	cmd := battyCommand(t, "", j.env, j.args("{id} scenario:sleepms:120000 replyjson", "--shutdown-timeout", "10m")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitLine := func(want string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stderr ended before %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("no %q on stderr", want)
			}
		}
	}
	// Both rows run once codex logged them.
	deadline := time.Now().Add(60 * time.Second)
	for j.runsOf(1)+j.runsOf(2) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the rows never started")
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes
	}
	cmd.Process.Signal(syscall.SIGINT)
	waitLine("no more rows start")
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	waitLine("0 of 2 rows done, 0 failed, 2 pending")
	for range lines {
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the second interrupt took %s to stop the rows", d)
	}
	codextest.AssertNoMarked(t, j.mark)
}

// TestFanoutBudget: --max-tokens stops the job with exit 1 and says so.
func TestFanoutBudget(t *testing.T) {
	j := newFanoutJob(t, "id\n1\n2\n3\n")
	_, errOut, code := runBatty(t, j.env, "", j.args("{id} replyjson", "-c", "1", "--max-tokens", "1")...)
	if code != 1 || !strings.Contains(errOut, "stopped: the token budget (--max-tokens 1) is reached: 1010 tokens recorded for this job (0 by earlier runs); run the command again with a higher --max-tokens to continue") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	if j.runsOf(1) != 1 || j.runsOf(2) != 0 {
		t.Errorf("codex runs %d %d, want only row 1", j.runsOf(1), j.runsOf(2))
	}
}

// TestFanoutStopsWhenTheFirstRowsFailAlike: replies that are not JSON on
// the first 5 rows stop the job: exit 1, the error and the rows not started
// named, no lock file left; --keep-going runs every row and the summary
// names the most common error.
func TestFanoutStopsWhenTheFirstRowsFailAlike(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("id\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&csv, "%d\n", i)
	}
	j := newFanoutJob(t, csv.String())
	_, errOut, code := runBatty(t, j.env, "", j.args("Row {id}", "-c", "1")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut)
	}
	for _, want := range []string{"stopped early: the first 5 rows finished all failed with the same error, so 7 rows were not started: reply is not a JSON object", "--keep-going"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := j.runsOf(6); n != 0 {
		t.Errorf("row 6 ran %d times after the stop", n)
	}
	if _, err := os.Lstat(j.out + fanout.LockSuffix); err == nil {
		t.Error("the lock file was left behind")
	}
	_, errOut, code = runBatty(t, j.env, "", j.args("Row {id}", "-c", "2", "--keep-going")...)
	if code != 1 || j.runsOf(12) != 1 {
		t.Fatalf("--keep-going: exit %d, row 12 ran %d times\n%s", code, j.runsOf(12), errOut)
	}
	if !strings.Contains(errOut, "most common error (12 of 12 failed rows): reply is not a JSON object") {
		t.Errorf("summary does not name the most common error:\n%s", errOut)
	}
}

// TestFanoutAccounts: --accounts runs the rows on the named accounts of the
// team file (their CODEX_HOME replacing any other), moving on from one
// at its usage limit; a role's accounts are used without --accounts; an
// unknown name is a usage error naming the team's accounts.
func TestFanoutAccounts(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	j := newFanoutJob(t, "id\n1\n2\n3\n")
	work, spare := filepath.Join(j.dir, "work"), filepath.Join(j.dir, "spare")
	for _, d := range []string{work, spare} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The fake codex hits the usage limit on a home holding this file.
	if err := os.WriteFile(filepath.Join(work, "exhausted"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`name: crew
accounts:
  - name: work
    codex_home: %s
  - name: spare
    codex_home: %s
codex:
  bin: %s
  env:
    BATTY_TEST_ROLE: fakecodex
    FAKE_CODEX_STATE: %s
    FAKE_CODEX_LOG: %s
roles:
  - name: lead
  - name: triager
    accounts: [work, spare]
`, work, spare, self, t.TempDir(), j.log)
	teamFile := filepath.Join(j.dir, "team.yaml")
	if err := os.WriteFile(teamFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	homes := func() []string {
		t.Helper()
		var hs []string
		for _, r := range j.records("id") {
			var res map[string]string
			json.Unmarshal([]byte(r.Result), &res)
			hs = append(hs, res["reply"])
		}
		return hs
	}
	// The role's accounts: work is exhausted, the rows go on on spare.
	_, errOut, code := runBatty(t, j.env, "", "fanout", "--csv", j.in, "--output", j.out, "--team", teamFile, "--role", "triager",
		"--instruction", "{id} scenario:account replyjson", "-c", "1")
	if code != 0 || !strings.Contains(errOut, "Usage limit on account work: rows go on on account spare") {
		t.Fatalf("--role with accounts: exit %d\n%s", code, errOut)
	}
	for i, h := range homes() {
		if h != "HOME:"+spare {
			t.Errorf("row %d: %q, want the spare account's home", i+1, h)
		}
	}
	// --accounts without --role: the account's CODEX_HOME wins over --env's.
	os.Remove(j.out)
	_, errOut, code = runBatty(t, j.env, "", append(j.args("{id} scenario:account replyjson", "--team", teamFile, "--accounts", "spare,work"),
		"--env", "CODEX_HOME="+filepath.Join(j.dir, "elsewhere"))...)
	if code != 0 {
		t.Fatalf("--accounts spare,work: exit %d\n%s", code, errOut)
	}
	for i, h := range homes() {
		if h != "HOME:"+spare {
			t.Errorf("--accounts spare,work: row %d: %q, want the spare account's home", i+1, h)
		}
	}
	// Usage errors.
	for _, c := range []struct {
		args []string
		want string
	}{
		{j.args("x", "--team", teamFile, "--accounts", "work,nope"), `--accounts: unknown account "nope": the accounts of ` + teamFile + ` are work, spare`},
		{j.args("x", "--team", teamFile, "--accounts", "work,work"), `account "work" is listed twice`},
		{j.args("x", "--team", teamFile), "--team names the team file of --role, --accounts and --hosts"},
	} {
		os.Remove(j.out)
		_, errOut, code := runBatty(t, j.env, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2 and %q", c.args[len(c.args)-2:], code, errOut, c.want)
		}
		if _, err := os.Stat(j.out); err == nil {
			t.Errorf("%q: OUT was written", c.args[len(c.args)-2:])
		}
	}
}

// TestFanoutHosts runs rows on a host of the team file reached through a
// command (env with a scratch HOME and a variable only that side has):
// batty is installed there, every row runs there once; a host that
// cannot be reached is left out with one line saying so, and with no
// host left the job stops with the host's problem and fix. Unknown or
// repeated hosts, accounts, and a schema outside the project are usage
// errors.
func TestFanoutHosts(t *testing.T) {
	j := newFanoutJob(t, "id\n1\n2\n3\n")
	hostHome, hostDir := t.TempDir(), t.TempDir()
	absent := filepath.Join(t.TempDir(), "absent")
	yaml := fmt.Sprintf(`name: crew
accounts:
  - name: work
    codex_home: %s
hosts:
  - name: pod1
    command: [env, HOME=%s, FANOUT_SIDE=pod1]
    dir: %s
  - name: down
    command: [%s]
  - name: build1
    ssh: build1.invalid
roles:
  - name: lead
`, t.TempDir(), hostHome, hostDir, absent)
	teamFile := filepath.Join(j.dir, "team.yaml")
	if err := os.WriteFile(teamFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(outside, []byte(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{j.args("x", "--team", teamFile, "--hosts", "pod1,nope"), `--hosts: unknown host "nope": the hosts of ` + teamFile + ` are local, pod1, down, build1`},
		{j.args("x", "--team", teamFile, "--hosts", "pod1,pod1"), `host "pod1" is listed twice`},
		{j.args("x", "--team", teamFile, "--hosts", "pod1", "--accounts", "work"), "accounts are not supported on hosts yet"},
		{j.args("x", "--team", teamFile, "--hosts", "pod1", "--schema", outside), "with --hosts the schema file must lie inside the project directory"},
	} {
		_, errOut, code := runBatty(t, j.env, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2 and %q", c.args[len(c.args)-2:], code, errOut, c.want)
		}
		if _, err := os.Stat(j.out); err == nil {
			t.Errorf("%q: OUT was written", c.args[len(c.args)-2:])
		}
	}

	// No host left: exit 1, the host's problem and its fix.
	_, errOut, code := runBatty(t, j.env, "", j.args("{id} scenario:env:FANOUT_SIDE replyjson", "--team", teamFile, "--hosts", "down", "--env", "OPENAI_API_KEY=sk-test")...)
	if code != 1 || !strings.Contains(errOut, "host down: ") || !strings.Contains(errOut, "fix: check that the host's command ("+absent+" true) works from here") {
		t.Fatalf("--hosts down: exit %d\n%s", code, errOut)
	}
	if j.runsOf(1) != 0 {
		t.Fatal("a row ran with no host")
	}

	_, errOut, code = runBatty(t, j.env, "", j.args("{id} scenario:env:FANOUT_SIDE replyjson", "--team", teamFile, "--hosts", "pod1,down", "--env", "OPENAI_API_KEY=sk-test")...)
	if code != 0 || !strings.Contains(errOut, "its workers are not used: rows go to pod1") {
		t.Fatalf("--hosts pod1,down: exit %d\n%s", code, errOut)
	}
	for _, r := range j.records("id") {
		var res map[string]string
		json.Unmarshal([]byte(r.Result), &res)
		if r.Status != "done" || res["reply"] != "pod1" {
			t.Errorf("row %d: %s %q, want done on pod1", r.Row+1, r.Status, r.Result)
		}
	}
	for n := 1; n <= 3; n++ {
		if runs := j.runsOf(n); runs != 1 {
			t.Errorf("row %d ran %d times", n, runs)
		}
	}
	if _, err := os.Stat(filepath.Join(hostHome, ".cache", "batty")); err != nil {
		t.Errorf("batty not installed on the host: %v", err)
	}
}
