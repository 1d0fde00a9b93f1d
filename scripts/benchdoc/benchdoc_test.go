package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var testMachine = Machine{CPU: "AMD EPYC 7B13", Cores: 2, Kernel: "Linux 6.8.0", Go: "go1.26.8"}

const testTail = " AMD EPYC 7B13, 2 cores, Linux 6.8.0, go1.26.8 | 2026-11-23 |"

// recordFile runs `benchdoc record` on a testdata file at the given time.
func recordFile(t *testing.T, data, group, command, file string, now time.Time) {
	t.Helper()
	in, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var stderr bytes.Buffer
	if code := run([]string{"record", "-data", data, "-group", group, "-command", command}, in, &stderr,
		func() time.Time { return now }, func(string) Machine { return testMachine }); code != 0 {
		t.Fatalf("record %s: exit %d: %s", file, code, stderr.String())
	}
}

// renderTo runs `benchdoc render` and returns the markdown.
func renderTo(t *testing.T, data string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "benchmarks.md")
	var stderr bytes.Buffer
	if code := run([]string{"render", "-data", data, "-out", out}, nil, &stderr, time.Now, ThisMachine); code != 0 {
		t.Fatalf("render: exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// day is 2026-11-23 at 23:30 in UTC+2, so the recorded UTC date is the
// 23rd.
var day = time.Date(2026, 11, 24, 1, 30, 0, 0, time.FixedZone("UTC+2", 2*3600))

func TestShimTable(t *testing.T) {
	data := filepath.Join(t.TempDir(), "benchmarks.json")
	cmd := "go test -run '^$' -bench 'TurnViaShim|WorkerDirect' -benchtime 50x -count 2 ./shim/"
	recordFile(t, data, "shim", cmd, "shim.txt", day)
	md := renderTo(t, data)
	c := "`go test -run '^$' -bench 'TurnViaShim\\|WorkerDirect' -benchtime 50x -count 2 ./shim/` |\n"
	want := "| benchmark | per turn | notes | runs | machine | date | command |\n" +
		"| --- | --- | --- | --- | --- | --- | --- |\n" +
		"| `WorkerDirect` | 7.09 ms | the fake worker run directly (same argv, prompt on stdin, JSONL read to the end) | 2 |" + testTail + " " + c +
		"| `TurnViaShim` | 12.6 ms | the same worker driven through a shim (frame in, spawn, parse, TurnFinished out) | 2 |" + testTail + " " + c +
		"| shim overhead | 5.56 ms | `TurnViaShim` − `WorkerDirect`: what the shim adds to a turn |  |" + testTail + " " + c
	if !strings.Contains(md, want) {
		t.Fatalf("the shim table is not\n%s\nin\n%s", want, md)
	}
}

func TestProtocolTable(t *testing.T) {
	data := filepath.Join(t.TempDir(), "benchmarks.json")
	recordFile(t, data, "protocol", "go test -run '^$' -bench . -benchmem ./protocol/", "protocol.txt", day)
	md := renderTo(t, data)
	for _, want := range []string{
		"| benchmark | time | memory | writes | notes | runs | machine | date | command |\n",
		"| `RoundTripCrossProcess` | 43.1 µs | 535 B, 12 allocs | 1 | Ping → Pong between two processes",
		"| `RoundTripInProcess` | 25.7 µs | 1.05 KiB, 25 allocs | – | both ends in one process | 2 |" + testTail,
		"| `EncodeTurnFinished` | 7.27 µs, 334 MB/s | 7.67 KiB, 9 allocs | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}

// Custom metrics (b.ReportMetric) and a line printed among -v test output.
func TestCustomMetricTables(t *testing.T) {
	data := filepath.Join(t.TempDir(), "benchmarks.json")
	recordFile(t, data, "chaos", "go test -count=1 -run '^TestChaos$' -v ./orchestrator/ -args -chaos.messages=1000 -chaos.daemonkills=3", "chaos.txt", day)
	recordFile(t, data, "idle", "go test -run '^$' -bench IdleTeam100 -benchtime 1x ./cmd/batty/", "idle.txt", day)
	recordFile(t, data, "fanout", "go test -run '^$' -bench Fanout100Rows64 -benchtime 1x -count 3 ./fanout/", "fanout.txt", day)
	md := renderTo(t, data)
	for _, want := range []string{
		"| `Chaos` | 1,000 | 3 | 120 | 0 | 0 | 0 | 0 | 1,061 | 4 | 0 | 20.1 s | 8 agents (2 roles × 4) on the fake worker | 1 |" + testTail,
		"| `IdleTeam100` | 0.0667 % | 21.5 MB | 7.13 MB | 734 MB | 237 MB | 15 s | the real `batty` binary",
		"| `Fanout100Rows64` | 2.41 s | 1.21× | – | – | – | – | 100 rows at concurrency 64 on a 1 s fake worker; ideal 2 s (two waves) | 3 |" + testTail,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}

// The drain table shows the median of each rate and of their ratio.
func TestDrainTable(t *testing.T) {
	data := filepath.Join(t.TempDir(), "benchmarks.json")
	recordFile(t, data, "drain", "go test -run '^$' -bench '^BenchmarkDrain$' -benchtime 2x -count 3 ./orchestrator/", "drain.txt", day)
	md := renderTo(t, data)
	for _, want := range []string{
		"| `Drain` | 50 | 51 | 96 % | 200 | messages per second; one agent, its first 200 outcomes with 200 and with 4,000 queued, measured in pairs | 3 |" + testTail,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}

// The codexcli table shows the idle columns on the app-server row only
// and derives the app-server runtime's share of the exec runtime's time.
func TestCodexcliTable(t *testing.T) {
	data := filepath.Join(t.TempDir(), "benchmarks.json")
	recordFile(t, data, "codexcli", "go test -run '^$' -bench '^BenchmarkCodexMessage$' -benchtime 20x ./cmd/batty/", "codexcli.txt", day)
	md := renderTo(t, data)
	for _, want := range []string{
		"| benchmark | p50 | p90 | messages | idle RSS (shim + app-server) | idle CPU (% of one core, 10 s) | notes |",
		"| `CodexMessage/batty-exec` | 200 ms | 225 ms | 20 | – | – | through a running team",
		"| `CodexMessage/batty-app-server` | 80 ms | 90 ms | 20 | 95.5 MB | 0.2 % | the same with `runtime: app-server`",
		"| app-server ÷ exec | 40 % | 40 % | – | – | – | `batty-app-server` over `batty-exec`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}

// Recording one group keeps the others; recording it again replaces it;
// a skip replaces only a group without figures.
func TestPartialRunsKeepOtherGroups(t *testing.T) {
	data := filepath.Join(t.TempDir(), "benchmarks.json")
	recordFile(t, data, "protocol", "cmd-protocol", "protocol.txt", day)
	recordFile(t, data, "shim", "cmd-shim-1", "shim.txt", day)
	recordFile(t, data, "shim", "cmd-shim-2", "shim.txt", day.Add(48*time.Hour))
	skip := func(group string) {
		var stderr bytes.Buffer
		if code := run([]string{"record", "-data", data, "-group", group, "-command", "cmd-" + group, "-skip", "the Codex CLI is not installed"},
			nil, &stderr, func() time.Time { return day }, func(string) Machine { return testMachine }); code != 0 {
			t.Fatalf("skip %s: exit %d: %s", group, code, stderr.String())
		}
	}
	skip("codexcli")
	skip("shim")
	md := renderTo(t, data)
	for _, want := range []string{
		"| `RoundTripCrossProcess` |",
		"| `TurnViaShim` | 12.6 ms |",
		"2026-11-25 | `cmd-shim-2` |",
		"| – | – | – | – | skipped: the Codex CLI is not installed | 0 |" + testTail + " `cmd-codexcli` |",
		"_Not measured yet: run `scripts/bench.sh fanout`._",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	if strings.Contains(md, "cmd-shim-1") {
		t.Error("the replaced shim run is still rendered")
	}
}

// Output without a benchmark line (a build failure, say) is refused and
// leaves the data file alone.
func TestRecordRefusesOutputWithoutResults(t *testing.T) {
	data := filepath.Join(t.TempDir(), "benchmarks.json")
	recordFile(t, data, "shim", "cmd", "shim.txt", day)
	before, _ := os.ReadFile(data)
	var stderr bytes.Buffer
	code := run([]string{"record", "-data", data, "-group", "shim", "-command", "cmd"},
		strings.NewReader("# github.com/battyhq/batty/shim\nshim/x.go:1:1: syntax error\nFAIL\tgithub.com/battyhq/batty/shim [build failed]\n"),
		&stderr, time.Now, ThisMachine)
	if code != 1 || !strings.Contains(stderr.String(), "no benchmark lines in the output of shim") {
		t.Fatalf("exit %d, %q", code, stderr.String())
	}
	if after, _ := os.ReadFile(data); !bytes.Equal(before, after) {
		t.Fatal("the data file changed")
	}
	if code := run([]string{"record", "-data", data, "-group", "nosuch", "-command", "cmd"}, strings.NewReader(""), &stderr, time.Now, ThisMachine); code != 1 {
		t.Fatalf("unknown group: exit %d", code)
	}
	if code := run([]string{"record", "-data", data}, nil, &stderr, time.Now, ThisMachine); code != 2 {
		t.Fatalf("missing flags: exit %d", code)
	}
}

// The template renders with no data, and it and groups name the same
// groups: none is measured without being shown, none shown unknown.
func TestTemplateCoversEveryGroup(t *testing.T) {
	md, err := Render(&Data{Groups: map[string]Run{}}, docTemplate)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`\{\{table "([a-z]+)"\}\}`).FindAllStringSubmatch(docTemplate, -1) {
		named[m[1]] = true
	}
	for g := range groups {
		if !named[g] {
			t.Errorf("group %s is not in the template", g)
		}
		if !strings.Contains(md, "`scripts/bench.sh "+g+"`") {
			t.Errorf("group %s does not render as not measured", g)
		}
	}
	if len(named) != len(groups) {
		t.Errorf("the template names %d groups, groups has %d", len(named), len(groups))
	}
}

// The checked-in docs/benchmarks.md is what the template renders from the
// checked-in docs/benchmarks.json: the page is generated, not edited.
func TestCheckedInPageIsGenerated(t *testing.T) {
	d, err := Load(filepath.Join("..", "..", "docs", "benchmarks.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(d, docTemplate)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("docs/benchmarks.md is not what scripts/benchdoc renders from docs/benchmarks.json: " +
			"edit scripts/benchdoc/template.md (not the page), then run `scripts/bench.sh render`")
	}
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Result
		ok   bool
	}{
		{"BenchmarkTurnViaShim-2    \t      50\t  13555383 ns/op", Result{"TurnViaShim", 2, 50, map[string]float64{"ns/op": 13555383}}, true},
		{"BenchmarkTitleBatch/one-call-per-title-8 100 150000000 ns/op 20.00 tmux-calls/op", Result{"TitleBatch/one-call-per-title", 8, 100, map[string]float64{"ns/op": 1.5e8, "tmux-calls/op": 20}}, true},
		{"BenchmarkChaos\t1\t20123000000 ns/op\t1000 messages", Result{"Chaos", 1, 1, map[string]float64{"ns/op": 20123000000, "messages": 1000}}, true},
		{"BenchmarkX/a-b 3 1.5 p50-ms", Result{"X/a-b", 1, 3, map[string]float64{"p50-ms": 1.5}}, true},
		{"Benchmark_X 3 1.5 ns/op", Result{"_X", 1, 3, map[string]float64{"ns/op": 1.5}}, true},
		{"BenchmarkX", Result{}, false},
		{"BenchmarkX-2 \t 3", Result{}, false},
		{"BenchmarkX 3 1.5", Result{}, false},
		{"Benchmarking is fun today ok", Result{}, false},
		{"BenchmarkX three 1.5 ns/op", Result{}, false},
		{"BenchmarkX 3 NaN ns/op", Result{}, false},
		{"BenchmarkX 3 +Inf ns/op", Result{}, false},
		{"BenchmarkX -3 1 ns/op", Result{}, false},
		{"    chaos_test.go:1: BenchmarkX 3 1 ns/op", Result{}, false},
		{"--- FAIL: BenchmarkX", Result{}, false},
		{"", Result{}, false},
	} {
		got, ok := ParseLine(tc.line)
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseLine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// A line longer than maxLine is skipped whole, also when it is a valid
// result line; the lines around it are parsed.
func TestParseSkipsOverlongLines(t *testing.T) {
	in := "BenchmarkA 1 1 ns/op\n" + strings.Repeat("x", maxLine) + "\nBenchmarkB 1 2 ns/op\n" +
		"BenchmarkC 1 3 ns/op" + strings.Repeat(" 1 u", maxLine/4) + "\nBenchmarkD 1 4 ns/op"
	rs, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	if !reflect.DeepEqual(names, []string{"A", "B", "D"}) {
		t.Fatalf("parsed %v, want [A B D]", names)
	}
}

func TestFormatMetric(t *testing.T) {
	for _, tc := range []struct {
		unit string
		v    float64
		want string
	}{
		{"ns/op", 850, "850 ns"},
		{"ns/op", 27512, "27.5 µs"},
		{"ns/op", 5_234_000, "5.23 ms"},
		{"ns/op", 20_123_000_000, "20.1 s"},
		{"B/op", 536, "536 B"},
		{"B/op", 7856, "7.67 KiB"},
		{"B/op", 26.8 * (1 << 20), "26.8 MiB"},
		{"allocs/op", 4522, "4,522 allocs"},
		{"MB/s", 882.4, "882 MB/s"},
		{"p50-ms", 5.2, "5.2 ms"},
		{"wall-s", 2.37, "2.37 s"},
		{"cpu-%", 0, "0 %"},
		{"x-ideal", 1.185, "1.19×"},
		{"messages", 1000, "1,000"},
		{"max-executions", 4, "4"},
		{"bytes-read/op", 65616, "64.1 KiB"},
		{"writes/op", 7, "7"},
		{"delta", -1234567, "-1,234,567"},
		{"delta", -0.01234, "-0.0123"},
	} {
		if got := formatMetric(tc.unit, tc.v); got != tc.want {
			t.Errorf("formatMetric(%q, %v) = %q, want %q", tc.unit, tc.v, got, tc.want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13  64-Core Processor\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got := cpuModel(info); got != "AMD EPYC 7B13 64-Core Processor" {
		t.Fatalf("cpuModel = %q", got)
	}
	if got := cpuModel("processor : 0\n"); got != "" {
		t.Fatalf("cpuModel without a model = %q", got)
	}
}

// Benchmark output is outside input: parsing never panics, and what
// parses has a name and at least one metric.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"BenchmarkTurnViaShim-2 50 13555383 ns/op",
		"BenchmarkChaos\t1\t20123000000 ns/op\t1000 messages\t3 daemon-kills",
		"BenchmarkX/a-b-2 3 1.5 p50-ms 2 p99-ms",
		"Benchmark",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, ok := ParseLine(line)
		if ok && (r.Name == "" || len(r.Metrics) == 0 || r.Procs < 1) {
			t.Fatalf("ParseLine(%q) = %+v", line, r)
		}
		Parse(strings.NewReader(line + "\n" + line))
	})
}
