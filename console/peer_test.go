package console

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
)

// newJudgedConsole serves a console whose judge takes the pids in inside
// for processes of agent eng and counts its calls.
func newJudgedConsole(t *testing.T, inside ...int) (*httptest.Server, *int) {
	t.Helper()
	dir := t.TempDir()
	fb := &fakeTeam{stateFiles: stateFiles{Layout: project.Layout{Dir: filepath.Join(dir, "state")}}, dir: dir, st: control.Status{Team: "crew", Agents: []control.AgentStatus{{Name: "eng", Role: "eng", State: "idle"}}}}
	ts := httptest.NewUnstartedServer(nil)
	var mu sync.Mutex
	calls := new(int)
	judge := func(pid int) (control.Insider, error) {
		mu.Lock()
		defer mu.Unlock()
		*calls++
		for _, p := range inside {
			if p == pid {
				return control.Insider{Agent: "eng", Shim: 4242}, nil
			}
		}
		return control.Insider{}, nil
	}
	s, err := New(Config{Addr: ts.Listener.Addr().String(), Token: "secret-token", Team: fb, Judge: judge})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler, ts.Config.ConnContext = s, s.ConnContext
	ts.Start()
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts, calls
}

// A request from a process the judge finds inside an agent is refused,
// with the token or without; the process is found from the connection
// (this test process is at its other end), once per connection.
func TestConsoleRefusesAProcessInsideAnAgent(t *testing.T) {
	ts, calls := newJudgedConsole(t, os.Getpid())
	for _, path := range []string{"/login?token=secret-token", "/", "/usage.csv"} {
		resp, body := get(t, ts, path, nil)
		if resp.StatusCode != http.StatusForbidden ||
			!strings.Contains(body, `refused: this command runs inside agent "eng"'s sandbox (its batty shim, pid 4242, is among its parent processes); only the human may log in to the console`) {
			t.Fatalf("%s from inside an agent: %s %q", path, resp.Status, body)
		}
	}
	// One client, one kept-alive connection: judged once.
	if *calls != 1 {
		t.Fatalf("the judge was asked %d times for one connection", *calls)
	}

	ts, calls = newJudgedConsole(t, os.Getpid()+1_000_000)
	c := logIn(t, ts)
	if resp, _ := get(t, ts, "/", c); resp.StatusCode != 200 {
		t.Fatalf("the human's request: %s", resp.Status)
	}
	if *calls == 0 {
		t.Fatal("the human's connection was not judged")
	}
}
