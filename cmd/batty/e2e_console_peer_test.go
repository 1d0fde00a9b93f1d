package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// TestE2EConsoleRefusesAnAgent: a command an agent runs (below its
// shim, as Codex runs a model's command) connects to the console over
// TCP, with the login token even, and is refused: the daemon finds the
// process at the other end of the connection inside the agent. The human
// (this test process) logs in on the same console.
func TestE2EConsoleRefusesAnAgent(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to connect with (/dev/tcp)")
	}
	dir := fakeTeam(t, "peerweb", 1)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "5s") })
	mustBatty(t, dir, "start", "--no-tmux")
	st := waitJSONStatus(t, dir, "an idle agent", func(st control.Status) bool { return len(st.Agents) == 1 && st.Agents[0].State == "idle" })
	m := loginRE.FindStringSubmatch(mustBatty(t, dir, "web", "--no-open"))
	if m == nil {
		t.Fatal("batty web prints no login address")
	}
	login, err := url.Parse(m[0][len("batty: console: "):])
	if err != nil {
		t.Fatal(err)
	}

	// The agent's command: an HTTP request by hand over bash's /dev/tcp.
	tmp := t.TempDir()
	out := filepath.Join(tmp, "answer")
	script := filepath.Join(tmp, "reach-console")
	body := fmt.Sprintf("#!%s\nexec 3<>/dev/tcp/%s/%s || exit 1\nprintf 'GET %s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' >&3\ncat <&3 >%s\necho done\n",
		bash, login.Hostname(), login.Port(), login.RequestURI(), login.Host, out)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	mustBatty(t, dir, "send", st.Agents[0].Name, "scenario:run:"+script)
	waitJSONStatus(t, dir, "the agent's turn", func(st control.Status) bool { return st.Agents[0].TurnsCompleted == 1 })
	answer := readFile(t, out)
	if !strings.HasPrefix(answer, "HTTP/1.0 403") || !strings.Contains(answer, `refused: this command runs inside agent "`+st.Agents[0].Name+`"'s sandbox`) ||
		!strings.Contains(answer, "only the human may log in to the console") || strings.Contains(answer, "Set-Cookie") {
		t.Fatalf("the agent's request to the console was answered:\n%s", answer)
	}
	// The human logs in.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(login.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
		t.Fatalf("the human's login: %s", resp.Status)
	}
}
