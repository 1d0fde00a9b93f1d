package control

import (
	"errors"
	"strings"
	"testing"

	"github.com/battyhq/batty/agentproc"
)

func TestInsiderOf(t *testing.T) {
	// The daemon (pid 100) runs below a terminal (50) and init; in the
	// second world, below an outer agent's shim (40) — a team an agent
	// started, e.g. by running batty's tests.
	daemon := []agentproc.Process{{PID: 100}, {PID: 50}}
	nested := []agentproc.Process{{PID: 100}, {PID: 50}, {PID: 40, Agent: "outer"}, {PID: 30}}
	shims := map[int]string{200: "engineer-1", 300: "manager"}
	managed := func(pid int) bool { return pid == 200 || pid == 300 || pid == 400 }
	ps := func(pids ...int) []agentproc.Process {
		var out []agentproc.Process
		for _, p := range pids {
			out = append(out, agentproc.Process{PID: p})
		}
		return out
	}
	shim := func(pid int, agent string) agentproc.Process { return agentproc.Process{PID: pid, Agent: agent} }
	for _, c := range []struct {
		name    string
		chain   []agentproc.Process
		daemon  []agentproc.Process
		managed func(int) bool
		want    Insider
	}{
		{"the human's terminal", ps(900, 50), daemon, managed, Insider{}},
		{"the daemon itself", ps(100, 50), daemon, managed, Insider{}},
		{"below an agent's shim", ps(900, 901, 200, 100, 50), daemon, managed, Insider{Agent: "engineer-1", Shim: 200}},
		{"the shim's own child", ps(900, 300, 100), daemon, managed, Insider{Agent: "manager", Shim: 300}},
		// Whatever the command line says: the daemon knows its shims' pids.
		{"a shim the daemon started, unrecognised", append(ps(900), shim(200, ""), agentproc.Process{PID: 100}), daemon, managed, Insider{Agent: "engineer-1", Shim: 200}},
		{"a forged shim below the real one", append(ps(900), shim(901, "architect"), shim(200, "engineer-1"), agentproc.Process{PID: 100}), daemon, managed, Insider{Agent: "engineer-1", Shim: 200}},
		{"a forged shim elsewhere", append(ps(900), shim(901, "architect"), agentproc.Process{PID: 50}), daemon, managed, Insider{Agent: "architect", Shim: 901, Foreign: true}},
		{"another team's agent", append(ps(900), shim(800, "eng"), shim(801, "other"), agentproc.Process{PID: 1000}), daemon, managed, Insider{Agent: "other", Shim: 801, Foreign: true}},
		// What a dead shim left: a child of the daemon it did not start.
		{"an orphan adopted by the daemon", ps(900, 100, 50), daemon, managed, Insider{Orphan: 900}},
		{"below an orphan", ps(901, 900, 100, 50), daemon, managed, Insider{Orphan: 900}},
		{"below a child the daemon started", ps(901, 400, 100, 50), daemon, managed, Insider{}},
		{"a daemon that is no subreaper", ps(900, 100, 50), daemon, nil, Insider{}},
		// A team started from inside an agent: that agent's shim is the
		// daemon's too, and says nothing of the peer.
		{"the outer agent, for a nested team", append(ps(900, 901), shim(40, "outer"), agentproc.Process{PID: 30}), nested, managed, Insider{}},
		{"the nested team's agent", append(ps(900, 200, 100, 50), shim(40, "outer"), agentproc.Process{PID: 30}), nested, managed, Insider{Agent: "engineer-1", Shim: 200}},
		{"another agent inside the outer one", append(ps(900), shim(41, "sibling"), shim(40, "outer"), agentproc.Process{PID: 30}), nested, managed, Insider{Agent: "sibling", Shim: 41, Foreign: true}},
	} {
		if got := InsiderOf(c.chain, c.daemon, shims, c.managed); got != c.want {
			t.Errorf("%s: InsiderOf = %+v; want %+v", c.name, got, c.want)
		}
	}
}

func TestOwnInsider(t *testing.T) {
	const dir = "/p/.batty"
	noProc := errors.New("open /proc/1/stat: no such file or directory")
	for _, c := range []struct {
		name     string
		chain    []agentproc.Process
		chainErr error
		mark     string
		want     Insider
		err      bool
	}{
		{"the human", []agentproc.Process{{PID: 9}, {PID: 8}}, nil, "", Insider{}, false},
		{"this team's agent", []agentproc.Process{{PID: 9}, {PID: 8, Agent: "eng", Mark: dir}}, nil, "", Insider{Agent: "eng", Shim: 8}, false},
		{"the outermost of this team's shims", []agentproc.Process{{PID: 9, Agent: "forged", Mark: dir}, {PID: 8, Agent: "eng", Mark: dir}}, nil, "", Insider{Agent: "eng", Shim: 8}, false},
		// An agent of another team working on this project (batty's own
		// tests, run by an agent) acts as that team's human.
		{"another team's agent", []agentproc.Process{{PID: 9}, {PID: 8, Agent: "eng", Mark: "/q/.batty"}}, nil, dir, Insider{}, false},
		{"no /proc, marked", nil, noProc, dir, Insider{}, true},
		{"no /proc, another project's mark", nil, noProc, "/q/.batty", Insider{}, false},
		{"no /proc, unmarked", nil, noProc, "", Insider{}, false},
	} {
		got, err := OwnInsider(c.chain, c.chainErr, c.mark, dir)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s: OwnInsider = %+v, %v; want %+v (error %v)", c.name, got, err, c.want, c.err)
		}
	}
}

func TestRefusal(t *testing.T) {
	agent := Insider{Agent: "engineer-1", Shim: 200}
	checkErr := errors.New("process 900 exited before it was looked at")
	for _, c := range []struct {
		op      string
		in      Insider
		err     error
		refused string // part of the refusal; "" = allowed
	}{
		{OpPing, agent, nil, ""},
		{OpStatus, agent, nil, ""},
		{OpStatus, Insider{}, checkErr, ""},
		{OpStop, Insider{}, nil, ""},
		{OpPause, Insider{}, nil, ""},
		{OpStop, agent, nil, `refused: this command runs inside agent "engineer-1"'s sandbox (its batty shim, pid 200, is among its parent processes); only the human may stop the team`},
		{OpPause, agent, nil, "only the human may pause the team"},
		{OpResume, agent, nil, "only the human may resume the team or an agent"},
		{OpReset, agent, nil, "only the human may reset an agent's thread"},
		{OpCancel, agent, nil, "only the human may cancel messages"},
		{OpPrune, agent, nil, "only the human may prune an agent's workspace"},
		{OpApprove, agent, nil, "only the human may approve a landing"},
		{OpReject, agent, nil, "only the human may reject a landing"},
		{OpConsole, agent, nil, "only the human may log in to the console"},
		{OpConsole, Insider{}, nil, ""},
		{OpApprove, Insider{Orphan: 900}, nil, "only the human may approve a landing"},
		{OpApprove, Insider{}, nil, ""},
		{"launch", agent, nil, `only the human may make the request "launch"`},
		{"launch", Insider{}, nil, ""},
		{OpStop, Insider{Agent: "other", Shim: 801, Foreign: true}, nil, `agent "other"'s sandbox (a batty shim, pid 801, of another team`},
		{OpStop, Insider{Orphan: 900}, nil, "below process 900, which a dead agent's shim left behind"},
		{OpStop, Insider{}, checkErr, "cannot tell whether this command runs inside an agent's sandbox (process 900 exited"},
	} {
		err := Refusal(c.op, c.in, c.err)
		if c.refused == "" {
			if err != nil {
				t.Errorf("Refusal(%q, %+v, %v) = %v; want none", c.op, c.in, c.err, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.refused) {
			t.Errorf("Refusal(%q, %+v, %v) = %v; want %q", c.op, c.in, c.err, err, c.refused)
		}
	}
}

func TestBelowServer(t *testing.T) {
	// The daemon (100) runs a shared app-server (400) whose commands run
	// below it; 700 is a process of the human's that happens to share a
	// pid with no server.
	daemon := []agentproc.Process{{PID: 100}, {PID: 50}}
	servers := map[int]string{400: "/home/u/.codex"}
	ps := func(pids ...int) []agentproc.Process {
		var out []agentproc.Process
		for _, p := range pids {
			out = append(out, agentproc.Process{PID: p})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		chain []agentproc.Process
		want  Insider
	}{
		{"a command of the shared server", ps(900, 901, 400, 100, 50), Insider{Server: 400}},
		{"the sandbox helper's child", ps(902, 400, 100), Insider{Server: 400}},
		{"the human's terminal", ps(700, 50), Insider{}},
		{"the daemon itself", ps(100, 50), Insider{}},
		{"a server pid above the daemon says nothing", ps(900, 100, 400), Insider{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := BelowServer(c.chain, daemon, servers)
			if got != c.want {
				t.Fatalf("BelowServer = %+v, want %+v", got, c.want)
			}
			if got.Inside() != (c.want.Server != 0) {
				t.Fatalf("Inside() = %v", got.Inside())
			}
		})
	}
	err := Refusal(OpStop, Insider{Server: 400}, nil)
	if err == nil || !strings.Contains(err.Error(), "shared codex app-server (pid 400)") {
		t.Fatalf("Refusal below a shared server = %v", err)
	}
	if err := Refusal(OpStatus, Insider{Server: 400}, nil); err != nil {
		t.Fatalf("status below a shared server refused: %v", err)
	}
}
