package appserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
)

// TestRealSharedServerKeepsThreadsApart runs two agents' threads on one
// real app-server (Codex's sandbox, workspace-write) with the settings of
// each in thread/start's config, as the per-account runtime does: each
// command runs in its thread's working directory, sees its own
// BATTY_AGENT, writes its own directories and not the other's, and its
// model requests carry its own reasoning effort; the thread/start config
// merges with the server's -c settings (/tmp excluded server-wide). A
// thread resumed in a second server keeps its cwd but not the config: it
// must be sent again (checked by sending it again and seeing the variable).
func TestRealSharedServerKeepsThreadsApart(t *testing.T) {
	bin := codextest.Sandbox(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	root := t.TempDir()
	mk := func(n string) string {
		d := filepath.Join(root, n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	type agent struct{ name, work, out, effort, thread string }
	a := &agent{name: "alpha", work: mk("wa"), out: mk("oa"), effort: "high"}
	b := &agent{name: "beta", work: mk("wb"), out: mk("ob"), effort: "low"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"}
	start := func() *Client {
		c, err := Start(ctx, Options{Bin: bin, Args: args, Env: e2eEnv(home, randomMark(t)), Cwd: root})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatalf("initialize: %v (stderr %q)", err, c.Stderr())
		}
		return c
	}
	opts := func(x *agent) ThreadOptions {
		return ThreadOptions{Cwd: x.work, Sandbox: "workspace-write", ApprovalPolicy: "never", Config: map[string]any{
			"shell_environment_policy.set":           map[string]string{"BATTY_AGENT": x.name},
			"sandbox_workspace_write.writable_roots": []string{x.out},
			"model_reasoning_effort":                 x.effort,
		}}
	}
	c := start()
	for _, x := range []*agent{a, b} {
		th, err := c.StartThread(ctx, opts(x))
		if err != nil {
			t.Fatal(err)
		}
		x.thread = th.ID
	}
	probe := func(self, other *agent) string {
		return "[[mock:shell echo AGENT=$BATTY_AGENT PWD=$(pwd); touch " + filepath.Join(self.work, "w") + " && echo OWN-WORK; touch " +
			filepath.Join(self.out, "o") + " && echo OWN-OUT; touch " + filepath.Join(other.work, "x") + " && echo OTHER-WORK; touch " +
			filepath.Join(other.out, "x") + " && echo OTHER-OUT]]"
	}
	for _, p := range [][2]*agent{{a, b}, {b, a}} {
		self, other := p[0], p[1]
		n := len(srv.Requests())
		res, err := c.RunTurn(ctx, self.thread, probe(self, other), nil)
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("%s's turn: %+v, %v", self.name, res, err)
		}
		out := res.FinalMessage
		for _, want := range []string{"AGENT=" + self.name + " PWD=" + self.work + "\n", "OWN-WORK", "OWN-OUT"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s's command printed %q, want %q in it", self.name, out, want)
			}
		}
		if strings.Contains(out, "OTHER-") {
			t.Errorf("%s's command wrote into %s's directories: %q", self.name, other.name, out)
		}
		for _, r := range srv.Requests()[n:] {
			if !strings.Contains(string(r.Body), `"reasoning":{"effort":"`+self.effort+`"`) {
				t.Errorf("%s's request %d lacks its effort %q", self.name, r.Seq, self.effort)
			}
		}
	}
	for _, f := range []string{filepath.Join(a.work, "x"), filepath.Join(a.out, "x"), filepath.Join(b.work, "x"), filepath.Join(b.out, "x")} {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s was written across agents", f)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// A second server: resumed without the config, the thread has its cwd
	// but not its environment; with it, both.
	c2 := start()
	if _, err := c2.ResumeThread(ctx, a.thread, ThreadOptions{ApprovalPolicy: "never"}); err != nil {
		t.Fatal(err)
	}
	res, err := c2.RunTurn(ctx, a.thread, "[[mock:shell echo AGENT=$BATTY_AGENT PWD=$(pwd)]]", nil)
	if err != nil || strings.TrimSpace(res.FinalMessage) != "SHELL_DONE: AGENT= PWD="+a.work {
		t.Fatalf("resumed without its config: %q, %v; want no BATTY_AGENT, its cwd", res.FinalMessage, err)
	}
	if _, err := c2.ResumeThread(ctx, b.thread, opts(b)); err != nil {
		t.Fatal(err)
	}
	res, err = c2.RunTurn(ctx, b.thread, "[[mock:shell echo AGENT=$BATTY_AGENT PWD=$(pwd)]]", nil)
	if err != nil || strings.TrimSpace(res.FinalMessage) != "SHELL_DONE: AGENT=beta PWD="+b.work {
		t.Fatalf("resumed with its config: %q, %v", res.FinalMessage, err)
	}
}
