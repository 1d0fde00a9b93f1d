package agentproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/reap"
)

// TestMain lets this test binary be a shim-like process (run as `<self>
// shim --agent NAME`, it starts a leaf below it) or the leaf, which prints
// its pid and waits for its stdin to close.
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "shimlike":
		self, _ := os.Executable()
		leaf := exec.Command(self)
		leaf.Env = append(os.Environ(), "BATTY_TEST_ROLE=leaf")
		leaf.Stdin, leaf.Stdout, leaf.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := leaf.Run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "leaf":
		fmt.Println(os.Getpid())
		bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startLeaf starts a leaf below a shim-like process of agent (or below
// a plain process when agent is "") and returns the leaf's pid and the
// middle process's; both end with the test.
func startLeaf(t *testing.T, agent, mark string) (leaf, middle int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "shim", "--agent="+agent, "--queue-depth=4")
	if agent == "" {
		cmd = exec.Command(self, "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=shimlike", reap.MarkEnv+"="+mark)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the leaf's pid: %v", err)
	}
	if leaf, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		t.Fatalf("the leaf's pid %q: %v", line, err)
	}
	return leaf, cmd.Process.Pid
}

// Chain reads a real chain: the leaf, the shim-like process with its agent
// and project mark, then this test process; a plain middle process is no
// shim, and neither is one whose executable is another program.
func TestChainOfRealProcesses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	leaf, shimPID := startLeaf(t, "engineer-1", "/p/.batty")
	chain, err := Chain("/proc", leaf, self)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) < 3 || chain[0] != (Process{PID: leaf}) || chain[1] != (Process{PID: shimPID, Agent: "engineer-1", Mark: "/p/.batty"}) || chain[2].PID != os.Getpid() {
		t.Fatalf("chain %+v; want the leaf %d, the shim %d, this process %d", chain, leaf, shimPID, os.Getpid())
	}
	if a, err := ShimAgent("/proc", leaf, self); err != nil || a != "engineer-1" {
		t.Fatalf("ShimAgent = %q, %v", a, err)
	}
	if a, err := ShimAgent("/proc", shimPID, self); err != nil || a != "" {
		t.Fatalf("ShimAgent of the shim itself = %q, %v", a, err)
	}
	if chain, err := Chain("/proc", leaf, "/usr/bin/batty"); err != nil || chain[1].Agent != "" {
		t.Fatalf("a shim's command line in another program: %+v, %v", chain, err)
	}
	plain, middle := startLeaf(t, "", "/p/.batty")
	if chain, err := Chain("/proc", plain, self); err != nil || len(chain) < 2 || chain[1] != (Process{PID: middle}) {
		t.Fatalf("a plain parent: %+v, %v", chain, err)
	}
	if a, err := ShimAgent("/proc", os.Getpid(), self); err != nil || a != "" {
		t.Fatalf("this test process: %q, %v", a, err)
	}
	if _, err := Chain(t.TempDir(), os.Getpid(), self); err == nil {
		t.Fatal("an unreadable /proc gave no error")
	}
}

func TestOutermostShim(t *testing.T) {
	for _, c := range []struct {
		chain []Process
		want  int
	}{
		{nil, 0},
		{[]Process{{PID: 9}, {PID: 8}}, 0},
		{[]Process{{PID: 9}, {PID: 8, Agent: "eng"}, {PID: 7}}, 8},
		// A shim the agent started itself (batty chat, a forged one) lies
		// below the daemon's.
		{[]Process{{PID: 9, Agent: "forged"}, {PID: 8, Agent: "eng"}, {PID: 7}}, 8},
	} {
		got, ok := OutermostShim(c.chain)
		if got.PID != c.want || ok != (c.want != 0) {
			t.Errorf("OutermostShim(%+v) = %+v, %v; want pid %d", c.chain, got, ok, c.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	// After the parent, fields 5 to 21, then the start time (22).
	tail := strings.Repeat(" 0", 17) + " 4242 1"
	for _, c := range []struct {
		in   string
		want stat
		ok   bool
	}{
		{"1234 (bash) S 99" + tail, stat{ppid: 99, start: 4242}, true},
		{"1234 (a) b) c) R 7" + tail, stat{ppid: 7, start: 4242}, true},
		{"1234 (bash) S 99 0 0", stat{}, false},
		{"1234 (bash) S 99" + strings.Repeat(" 0", 17) + " x", stat{}, false},
	} {
		got, err := parseStat([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestStatParent(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"1234 (bash) S 99 1234 1234 0 -1", 99, true},
		{"1234 (a) b) c) R 7 1 1", 7, true}, // a command name with ") "
		{"1234 (x\ny) S 42 0", 42, true},
		{"1 (init) S 0 1 1", 0, true},
		{"1234 bash S 99", 0, false},
		{"1234 (bash) S", 0, false},
		{"1234 (bash) S -5", 0, false},
		{"1234 (bash) S x", 0, false},
		{"", 0, false},
	} {
		got, err := StatParent([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("StatParent(%q) = %d, %v; want %d (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestShimAgentOf(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"/usr/bin/batty", "shim", "--agent=engineer-1", "--queue-depth=16"}, "engineer-1"},
		{[]string{"batty", "shim", "--cwd", "/w", "--agent", "architect"}, "architect"},
		// A setting the shim would refuse still names the agent.
		{[]string{"batty", "shim", "--agent=eng", "--queue-depth=0"}, "eng"},
		{[]string{"batty", "shim"}, ""},
		{[]string{"batty", "send", "--agent=eng"}, ""},
		{[]string{"batty", "shim", "--agent="}, ""},
		{[]string{"batty", "shim", "--no-such-flag", "--agent=eng"}, ""},
		{[]string{"vim", "shim", "extra", "--agent=eng"}, ""},
		{[]string{"batty"}, ""},
	} {
		got, ok := ShimAgentOf([]byte(strings.Join(c.argv, "\x00") + "\x00"))
		if got != c.want || ok != (c.want != "") {
			t.Errorf("ShimAgentOf(%q) = %q, %v; want %q", c.argv, got, ok, c.want)
		}
	}
}

func TestSameProgram(t *testing.T) {
	for _, c := range []struct {
		exe, self string
		want      bool
	}{
		{"/usr/bin/batty", "/usr/bin/batty", true},
		{"/usr/bin/batty (deleted)", "/usr/bin/batty", true},
		{"/home/me/go/bin/batty", "/usr/local/bin/batty", true},
		{"/usr/bin/python3", "/usr/bin/batty", false},
		{"", "/usr/bin/batty", false},
	} {
		if got := SameProgram(c.exe, c.self); got != c.want {
			t.Errorf("SameProgram(%q, %q) = %v", c.exe, c.self, got)
		}
	}
}

func TestEnvValue(t *testing.T) {
	for _, c := range []struct {
		env, want string
	}{
		{"A=1\x00BATTY_PROJECT_MARK=/p/.batty\x00B=2\x00", "/p/.batty"},
		{"BATTY_PROJECT_MARK=/p/.batty", "/p/.batty"},
		{"XBATTY_PROJECT_MARK=/q\x00", ""},
		{"A=BATTY_PROJECT_MARK=/q\x00", ""},
		{"", ""},
	} {
		if got := EnvValue([]byte(c.env), reap.MarkEnv); got != c.want {
			t.Errorf("EnvValue(%q) = %q; want %q", c.env, got, c.want)
		}
	}
}

func FuzzProcDecoders(f *testing.F) {
	f.Add([]byte("1234 (bash) S 99 1234"))
	f.Add([]byte("batty\x00shim\x00--agent=eng\x00"))
	f.Add([]byte("batty\x00shim\x00--thread-usage\x00input=x\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if ppid, err := StatParent(b); err == nil && ppid < 0 {
			t.Fatalf("negative parent %d", ppid)
		}
		parseStat(b)
		if a, ok := ShimAgentOf(b); ok != (a != "") {
			t.Fatalf("agent %q, ok %v", a, ok)
		}
	})
}
