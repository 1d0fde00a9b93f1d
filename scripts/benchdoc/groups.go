package main

// column is one figure column of a group's table: the metrics of units,
// joined by ", " (a missing one is left out; none at all shows "–").
type column struct {
	head  string
	units []string
}

// row describes a benchmark of a group: its name in the output, and a
// note for the notes column.
type row struct {
	name, note string
}

// derived computes extra rows from the medians of a group's benchmarks
// (name → unit → median); nil when there is nothing to derive.
type derived func(med map[string]map[string]float64) []derivedRow

// derivedRow is a computed row: a label, its metrics and a note.
type derivedRow struct {
	label   string
	metrics map[string]float64
	note    string
}

// group is how one group of scripts/bench.sh is rendered.
type group struct {
	cols   []column
	rows   []row
	derive derived
}

var (
	timeCol   = column{"time", []string{"ns/op"}}
	memoryCol = column{"memory", []string{"B/op", "allocs/op"}}
)

// groups are the groups of scripts/bench.sh, by name. A benchmark a group
// lists no row for is still rendered, after the listed ones, without a
// note.
var groups = map[string]group{
	"protocol": {
		cols: []column{{"time", []string{"ns/op", "MB/s"}}, memoryCol, {"writes", []string{"writes/op"}}},
		rows: []row{
			{"RoundTripCrossProcess", "Ping → Pong between two processes over a socketpair (the test binary re-executed as an echo child), one write per frame"},
			{"EncoderOnSocket", "the same round trip with `msgpack.NewEncoder` writing straight to the socket, several writes per message: why frames are marshalled to bytes and written once"},
			{"RoundTripInProcess", "both ends in one process"},
			{"EncodeTurnFinished", "a realistic TurnFinished with a 2 KB reply"},
			{"DecodeTurnFinished", ""},
		},
	},
	"codex": {
		cols: []column{{"throughput", []string{"MB/s"}}, timeCol, memoryCol},
		rows: []row{
			{"Reader", "every small recorded transcript, 47 KB of mixed events"},
			{"ReaderBigLine", "the recorded 5,077,004-byte agent_message line"},
		},
	},
	"ptylog": {
		cols: []column{timeCol, memoryCol, {"lines dropped", []string{"dropped-lines/op"}}},
		rows: []row{{"AgentMessage", "5 lines, colour on, queued for the writer goroutine"}},
	},
	"logtail": {
		cols: []column{timeCol, {"read", []string{"bytes-read/op"}}, memoryCol},
		rows: []row{{"PrintLast100MB", "`batty logs -n 10` of a 100 MB transcript"}},
	},
	"shim": {
		cols: []column{{"per turn", []string{"ns/op"}}},
		rows: []row{
			{"WorkerDirect", "the fake worker run directly (same argv, prompt on stdin, JSONL read to the end)"},
			{"TurnViaShim", "the same worker driven through a shim (frame in, spawn, parse, TurnFinished out)"},
		},
		derive: func(med map[string]map[string]float64) []derivedRow {
			via, ok1 := med["TurnViaShim"]["ns/op"]
			direct, ok2 := med["WorkerDirect"]["ns/op"]
			if !ok1 || !ok2 {
				return nil
			}
			return []derivedRow{{"shim overhead", map[string]float64{"ns/op": via - direct}, "`TurnViaShim` − `WorkerDirect`: what the shim adds to a turn"}}
		},
	},
	"cockpit": {
		cols: []column{{"per batch", []string{"ns/op"}}, {"tmux calls", []string{"tmux-calls/op"}}},
		rows: []row{
			{"TitleBatch/batched", "the cockpit's updater: every changed title in one invocation"},
			{"TitleBatch/one-call-per-title", "one `select-pane -T` invocation per title"},
		},
	},
	"orchestrator": {
		cols: []column{{"p50", []string{"p50-ms"}}, {"p99", []string{"p99-ms"}}, {"max", []string{"max-ms"}}, {"messages", []string{unitIterations}}},
		rows: []row{{"SendToWorkerStart", "message in the inbox → worker process started: fsnotify wake-up, claim with fsync, frame to the shim, worker spawn; one message at a time"}},
	},
	"drain": {
		cols: []column{
			{"200 queued", []string{"queued200-msgs/s"}},
			{"4,000 queued", []string{"queued4000-msgs/s"}},
			{"4,000 ÷ 200 (target ≥ 85 %)", []string{"ratio-%"}},
			{"messages timed", []string{"drained"}},
		},
		rows: []row{{"Drain", "messages per second; one agent, its first 200 outcomes with 200 and with 4,000 queued, measured in pairs"}},
	},
	"idle": {
		cols: []column{
			{"CPU (daemon + shims, % of one core)", []string{"cpu-%"}},
			{"daemon RSS", []string{"daemon-rss-MB"}},
			{"RSS per shim (median)", []string{"shim-rss-MB"}},
			{"total RSS", []string{"total-rss-MB"}},
			{"total PSS", []string{"total-pss-MB"}},
			{"window", []string{"window-s"}},
		},
		rows: []row{{"IdleTeam100", "the real `batty` binary, 100 agents on a fake codex, sampled once every agent is idle"}},
	},
	"console": {
		cols: []column{
			{"team page p50 (target < 200 ms)", []string{"team-page-p50-ms"}},
			{"team page max", []string{"team-page-max-ms"}},
			{"daemon CPU, idle (% of one core)", []string{"idle-cpu-%"}},
			{"with 20 consoles open (target < 1 %)", []string{"sse20-cpu-%"}},
			{"event to screen p50 (target < 1 s)", []string{"screen-p50-ms"}},
			{"event to screen max", []string{"screen-max-ms"}},
		},
		rows: []row{{"Console100", "the real `batty` binary, 100 agents on a fake codex: the team page fetched 50 times by a logged-in client; the daemon's CPU over 30 s, idle, without and with 20 live streams of the team page; in chromium, a turn's turn_finished event to the page showing it, 5 turns"}},
	},
	"telemetry": {
		cols: []column{
			{"daemon CPU idle, off (% of one core)", []string{"off-cpu-%"}},
			{"on", []string{"on-cpu-%"}},
			{"extra (target < 1 %)", []string{"cpu-extra-%"}},
			{"dispatch p50, off", []string{"off-dispatch-p50-ms"}},
			{"on", []string{"on-dispatch-p50-ms"}},
			{"on ÷ off (target ≤ 105 %)", []string{"dispatch-ratio-%"}},
		},
		rows: []row{{"Telemetry100", "the real `batty` binary: two teams of 100 agents on a fake codex side by side, one with telemetry off, one with /metrics scraped every second and spans exported over OTLP HTTP to a collector on this machine; each daemon's CPU over the same 20 s, idle; 30 messages to one agent of each, in alternating pairs, from `batty send` to their delivery"}},
	},
	"slots": {
		cols: []column{
			{"most workers at once (cap 4)", []string{"most-running"}},
			{"turns/s", []string{"turns/s"}},
			{"of 4 ÷ 0.2 s (target ≥ 85 %)", []string{"of-ideal-%"}},
			{"most ahead (deliveries)", []string{"max-lead"}},
			{"last deliveries (rounds)", []string{"last-spread-rounds"}},
		},
		rows: []row{{"ConcurrentTurns", "40 agents × 5 messages on a 200 ms fake worker under `limits: {concurrent_turns: 4}`; workers counted by the worker itself, throughput from the first worker's start to the last one's end"}},
	},
	"fanout": {
		cols: []column{
			{"wall", []string{"wall-s"}},
			{"× ideal (target ≤ 1.3×)", []string{"x-ideal"}},
			{"rows/s", []string{"rows/s", "rows-ratio-%"}},
			{"CPU per row (all processes)", []string{"cpu-per-row-ms", "cpu-ratio-%"}},
			{"peak RSS, summed", []string{"peak-rss-MB", "rss-ratio-%"}},
			{"peak PSS, summed (target ≤ 1 GB at c64)", []string{"peak-pss-MB", "pss-ratio-%"}},
		},
		rows: []row{
			{"Fanout100Rows64", "100 rows at concurrency 64 on a 1 s fake worker; ideal 2 s (two waves)"},
			{"FanoutCodex/c8/exec", "200 rows, the real Codex CLI against the mock (a small JSON answer each), concurrency 8, `--runtime exec`: a `codex exec` per row"},
			{"FanoutCodex/c8/app-server", "the same on `--runtime app-server`: every row a thread of one shared app-server"},
			{"FanoutCodex/c64/exec", "200 rows at concurrency 64 on exec"},
			{"FanoutCodex/c64/app-server", "200 rows at concurrency 64 on the shared app-server"},
		},
		derive: func(med map[string]map[string]float64) []derivedRow {
			var rows []derivedRow
			for _, c := range []string{"c8", "c64"} {
				app, ex := med["FanoutCodex/"+c+"/app-server"], med["FanoutCodex/"+c+"/exec"]
				m := map[string]float64{}
				for _, q := range []struct{ unit, ratio string }{{"rows/s", "rows-ratio-%"}, {"cpu-per-row-ms", "cpu-ratio-%"}, {"peak-rss-MB", "rss-ratio-%"}, {"peak-pss-MB", "pss-ratio-%"}} {
					if a, e := app[q.unit], ex[q.unit]; a > 0 && e > 0 {
						m[q.ratio] = a / e * 100
					}
				}
				if len(m) > 0 {
					rows = append(rows, derivedRow{"app-server ÷ exec, " + c, m, "the shared app-server over exec in the same run, in % (targets: rows/s ≥ 300 %, CPU per row ≤ 33 %)"})
				}
			}
			return rows
		},
	},
	"hosts": {
		cols: []column{
			{"p50", []string{"p50-ms", "p50-extra-ms"}},
			{"p90", []string{"p90-ms", "p90-extra-ms"}},
			{"messages", []string{"messages"}},
			{"start (all shims up)", []string{"start-s"}},
			{"RSS on the host (shims)", []string{"host-rss-MB"}},
			{"RSS here (ssh)", []string{"ssh-rss-MB", "ssh-procs"}},
			{"idle CPU (% of one core, 10 s)", []string{"idle-cpu-%"}},
			{"first clone", []string{"clone-ms"}},
		},
		rows: []row{
			{"HostMessage/local", "a local agent: `batty send` → outcome recorded, the real Codex CLI against the mock"},
			{"HostMessage/ssh", "the same, the agent on a host over ssh (a real sshd on 127.0.0.1, another user), same run, same mock"},
			{"HostCommitPerTurn/local/3-files", "a worktree agent's commit at the end of a turn, 3 files edited, in a worktree here (2,000-file repository)"},
			{"HostCommitPerTurn/ssh/3-files", "the same in a clone on the host over ssh: the commit there, the branch brought back here as a bundle; first clone: the whole repository sent and checked out there"},
			{"HostCommitPerTurn/local/nothing", "a turn that changed nothing, here: no commit"},
			{"HostCommitPerTurn/ssh/nothing", "a turn that changed nothing, in the clone on the host"},
			{"HostFiftyAgents", "50 agents on one host over shared ssh connections (8 sessions each), idle: time from the daemon's start to every shim's handshake; memory of the host's processes (shims, sshd sessions) and of the ssh processes here (a client per agent, the connections' masters); their CPU"},
		},
		derive: func(med map[string]map[string]float64) []derivedRow {
			l, s := med["HostMessage/local"], med["HostMessage/ssh"]
			m := map[string]float64{}
			for _, q := range []string{"p50", "p90"} {
				a, ok1 := s[q+"-ms"]
				e, ok2 := l[q+"-ms"]
				if ok1 && ok2 {
					m[q+"-extra-ms"] = a - e
				}
			}
			if len(m) == 0 {
				return nil
			}
			return []derivedRow{{label: "ssh − local", metrics: m, note: "what a message to an agent on a host costs over a local one"}}
		},
	},
	"codexcli": {
		cols: []column{
			{"p50", []string{"p50-ms", "p50-ratio-%"}},
			{"p90", []string{"p90-ms", "p90-ratio-%"}},
			{"messages", []string{unitIterations}},
			{"idle RSS (shim + app-server)", []string{"idle-rss-MB"}},
			{"idle CPU (% of one core, 10 s)", []string{"idle-cpu-%"}},
		},
		rows: []row{
			{"CodexMessage/npm-launcher", "`codex exec --json` through the npm launcher (node, then the native binary)"},
			{"CodexMessage/native", "the native binary bare, the argv batty uses"},
			{"CodexMessage/batty-exec", "through a running team of one agent with `runtime: exec`: `batty send` → outcome recorded in `done/`"},
			{"CodexMessage/batty-app-server", "the same with `runtime: app-server`; then the agent idle for 10 s: its shim and app-server's RSS and CPU"},
			{"CodexMessage/batty-app-server-shared", "the same with `app_server: per-account`: the agent's turns on the daemon's shared app-server, through its broker; idle: its shim and the shared process"},
		},
		derive: func(med map[string]map[string]float64) []derivedRow {
			var rows []derivedRow
			for _, r := range []struct{ num, den, label, note string }{
				{"batty-app-server", "batty-exec", "app-server ÷ exec", "`batty-app-server` over `batty-exec`, per message through batty (target ≤ 50 %)"},
				{"batty-app-server-shared", "batty-app-server", "shared ÷ per-agent", "`batty-app-server-shared` over `batty-app-server`, per message through batty (target ≤ 110 %)"},
			} {
				num, den := med["CodexMessage/"+r.num], med["CodexMessage/"+r.den]
				m := map[string]float64{}
				for _, q := range []string{"p50", "p90"} {
					a, ok1 := num[q+"-ms"]
					e, ok2 := den[q+"-ms"]
					if ok1 && ok2 && e > 0 {
						m[q+"-ratio-%"] = a / e * 100
					}
				}
				if len(m) > 0 {
					rows = append(rows, derivedRow{r.label, m, r.note})
				}
			}
			return rows
		},
	},
	"appshare": {
		cols: []column{
			{"agents", []string{"agents"}},
			{"total RSS (target ≤ 1.5 GB shared)", []string{"total-rss-MB"}},
			{"RSS per agent", []string{"rss-per-agent-MB", "rss-ratio-%"}},
			{"total PSS", []string{"total-pss-MB"}},
			{"idle CPU (% of one core, 10 s)", []string{"idle-cpu-%"}},
			{"20 at once, wall", []string{"burst-wall-s", "burst-ratio-%"}},
		},
		rows: []row{
			{"AppServerCrew/per-account", "100 agents on one shared app-server (`app_server: per-account`), each after one message; daemon + shims + the app-server"},
			{"AppServerCrew/per-agent", "40 agents with an app-server each (`per-agent`; 100 use up `fs.inotify.max_user_instances`, 128, at two each), each after one message; daemon + shims + app-servers"},
		},
		derive: func(med map[string]map[string]float64) []derivedRow {
			sh, pa := med["AppServerCrew/per-account"], med["AppServerCrew/per-agent"]
			m := map[string]float64{}
			if a, b := sh["rss-per-agent-MB"], pa["rss-per-agent-MB"]; a > 0 && b > 0 {
				m["rss-ratio-%"] = a / b * 100
			}
			if a, b := sh["burst-wall-s"], pa["burst-wall-s"]; a > 0 && b > 0 {
				m["burst-ratio-%"] = a / b * 100
			}
			if len(m) == 0 {
				return nil
			}
			return []derivedRow{{"per-account ÷ per-agent", m, "memory per agent and the wall of 20 agents answering at once, shared over a process each, in %"}}
		},
	},
	"memory": {
		cols: []column{
			{"p50", []string{"p50-ms"}},
			{"p95 (target < 1 s at 1M, < 50 ms at 10k)", []string{"p95-ms"}},
			{"queries", []string{"queries"}},
			{"turns", []string{"turns"}},
			{"index built from the journal (s)", []string{"build-s"}},
			{"index per 1,000 turns (MB)", []string{"index-MB-per-1000-turns"}},
			{"journal per 1,000 turns (MB)", []string{"journal-MB-per-1000-turns"}},
			{"index per turn (ms; target < 1)", []string{"index-ms/turn"}},
			{"journal append per turn (ms)", []string{"append-ms/turn"}},
		},
		rows: []row{
			{"Search/10k-turns", "10 agents × 100 threads × 10 turns; a mix of queries (rare, one turn in a thousand, common, two words; alone, with an agent, a role or a time filter), 20 hits each, every hit read back from the journal"},
			{"Search/1M-turns", "the same over 100 agents × 1,000 threads × 10 turns"},
			{"IndexTurn/sync-every-1", "a turn's journal line appended (fsync) and the index synced after it, on an index of 10,000 turns"},
			{"IndexTurn/sync-every-10", "the same with a sync every 10 turns, as the daemon's writer takes a second's turns at once under load"},
		},
	},
	"blame": {
		cols: []column{{"time (target < 1 s for the whole file)", []string{"ns/op"}}, {"commits", []string{"commits"}}},
		rows: []row{
			{"Blame/1000-lines", "the whole file: 1,000 lines, 200 commits, each told by its turn (journal of 10,000 turns) and its landing"},
			{"Blame/one-line", "one line (`f.txt:500`)"},
		},
	},
	"workspaces": {
		cols: []column{{"per commit", []string{"ns/op"}}},
		rows: []row{
			{"CommitPerTurn/3-files-changed", "the commit at the end of a turn that changed 3 of the 10,000 files: a commit on the agent's branch"},
			{"CommitPerTurn/nothing-changed", "the end of a turn that changed nothing: the tree is still scanned to find that out, no commit is made"},
		},
	},
	"chaos": {
		cols: []column{
			{"messages", []string{"messages"}},
			{"daemon kills", []string{"daemon-kills"}},
			{"shim kills", []string{"shim-kills"}},
			{"lost", []string{"lost"}},
			{"duplicate outcomes", []string{"duplicates"}},
			{"replies lost", []string{"replies-lost"}},
			{"duplicate replies", []string{"replies-duplicate"}},
			{"executions", []string{"executions"}},
			{"max executions of one message", []string{"max-executions"}},
			{"processes left", []string{"procs-left"}},
			{"wall", []string{"wall-s"}},
		},
		rows: []row{{"Chaos", "8 agents (2 roles × 4) on the fake worker"}},
	},
}
