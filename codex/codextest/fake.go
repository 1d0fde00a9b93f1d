package codextest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
)

// FakeMain is a fake `codex exec --json` for fast tests: a test binary
// re-executes itself (the helper-process pattern) and calls FakeMain with the
// codex arguments. It reads the prompt from stdin like `codex exec --json ...
// -` and acts out the scenario named by a "scenario:NAME[:ARG]" token in it,
// printing the JSONL shapes the real CLI prints. Threads live as files under
// $FAKE_CODEX_STATE, so resume, unknown threads and thread-cumulative usage
// behave like the real thing. It returns the exit code.
//
// Scenarios: text (default; replies "ECHO:<first body line>"), usage:N,
// restart:N (the thread's running total restarts: the reported total is this
// run's N input tokens), websearch (a web search, one model request),
// slow:SECONDS, slowfirst:SECONDS (slow unless redelivered), hang (ignores SIGINT), silent, crash, selfkill, huge:BYTES
// (a reply of BYTES bytes), hugefail:BYTES (a turn.failed message that long), hugewarn:BYTES (an error item that long,
// then a reply), hugethread:BYTES (a thread id that long),
// drop (a dropped stream), servererror, netdown (codex waiting for the
// network until interrupted), netwait:N (N network notices, then a reply),
// outage:FILE (network notices while FILE exists, then a reply: one outage
// every agent sees),
// retrystorm (codex's own retry notices until interrupted), longcmd:MS (a
// command running MS milliseconds), flaky:N, flakydrop:N, flakynet:N,
// flakyhang:N and flakykill:N (the first N runs of the same body fail with
// a server error, a dropped stream, a network wait, silence or a SIGKILL of
// codex mid-turn, then it replies),
// quota[:UNIX] (reset time given: UNIX seconds, default an hour from now), quotaonce (no reset time) — both succeed when redelivered,
// quotauntil:UNIXNANO (a limit until that instant, with a reset time named two minutes ago),
// account[:MS] (the account codex runs on: a limit, with a reset time named two minutes ago, while
// $CODEX_HOME holds a file named "exhausted"; else, after MS milliseconds, replies "HOME:$CODEX_HOME"),
// context (always out of context window), contextonce (out of context window
// unless batty says it retries after that), contextsame (out of context
// window unless the prompt opens with a batty handoff), auth, servererror, newthread, detach:PIDFILE,
// detachbare:PIDFILE (detach with an empty environment), detachdone:PIDFILE
// (detaches, then completes the turn), exec,
// garbage, env:VAR (replies with the variable's value), spawnfail,
// empty (completes without a final answer), run:PATH (runs the executable PATH, replies "RUN:" and its output, or
// "RUN_FAILED: " and why), gate:PATH (replies once the file PATH exists), and
// stamp:FILE (appends the start time in Unix nanoseconds to FILE, then
// replies like text), sleepms:MS (replies after MS milliseconds),
// running:DIR=MS (a worker that counts the workers running at once: it
// makes a file in DIR, appends to DIR.counts the number of files DIR then
// holds and the start and end times, removes its file after MS
// milliseconds and replies "RAN"; see RunningCounts). With the
// word "replyjson" anywhere in the prompt, a reply is a JSON object instead:
// {"reply": <the scenario's reply>, "row": <the body's first line>}. A prompt over 1,048,576 characters is refused the
// way codex refuses it, whatever the scenario. With $FAKE_CODEX_LOG set, every invocation appends a
// line "<unix ns> <resumed thread|new> <first prompt line>" (after a batty
// handoff, the message's header line) to that file; with
// $FAKE_CODEX_PROMPTS set, it appends "=== <resumed thread|new>", a line
// break and the whole prompt.
//
// Outside exec it answers `--version` ("codex-cli 0.169.0") and `login
// status` (logged in, exit 0, when $CODEX_HOME/auth.json exists; else "Not
// logged in", exit 1), as the real CLI does.

// maxInputChars is codex's limit on one turn's prompt, in characters.
const maxInputChars = 1 << 20

var scenarioRE = regexp.MustCompile(`scenario:([a-z-]+)(?::([0-9a-zA-Z._/=-]+))?`)

type fakeThread struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Turns  int   `json:"turns"`
}

func FakeMain(args []string) int {
	start := time.Now()
	// Codex answers SIGINT by ending the turn and exiting 1 with nothing more
	// on stdout.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT)
	out := os.Stdout
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("codex-cli " + codex.Version)
		return 0
	}
	if len(args) == 2 && args[0] == "login" && args[1] == "status" {
		// Like codex: logged in when CODEX_HOME holds an auth.json.
		if _, err := os.Stat(filepath.Join(os.Getenv("CODEX_HOME"), "auth.json")); err == nil {
			fmt.Fprintln(os.Stderr, "Logged in using ChatGPT")
			return 0
		}
		fmt.Fprintln(os.Stderr, "Not logged in")
		return 1
	}
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
	}
	if len(args) < 2 || args[0] != "exec" || args[1] != "--json" || args[len(args)-1] != "-" {
		fmt.Fprintf(os.Stderr, "fakecodex: unexpected argv %q\n", args)
		return 2
	}
	resume := ""
	for i, a := range args {
		if a == "resume" && i+1 < len(args) {
			resume = args[i+1]
		}
	}
	if dump := os.Getenv("FAKE_CODEX_ARGV"); dump != "" {
		f, _ := os.OpenFile(dump, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		fmt.Fprintf(f, "%s\n", strings.Join(args, "\x1f"))
		f.Close()
	}
	promptBytes, err := io.ReadAll(os.Stdin)
	if err != nil || len(promptBytes) == 0 {
		fmt.Fprintln(os.Stderr, "No prompt provided via stdin.")
		return 1
	}
	prompt := string(promptBytes)
	if logPath := os.Getenv("FAKE_CODEX_LOG"); logPath != "" {
		// One line per invocation: time, resumed thread (or "new"), the
		// prompt's first line (batty's header names the message id).
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			first, _, _ := strings.Cut(prompt, "\n")
			if i := strings.Index(prompt, "\n--- batty message "); i >= 0 && strings.HasPrefix(prompt, "--- batty handoff") {
				// A handoff comes first: log the message's own header.
				first, _, _ = strings.Cut(prompt[i+1:], "\n")
			}
			fmt.Fprintf(f, "%d %s %s\n", start.UnixNano(), or(resume, "new"), first)
			f.Close()
		}
	}
	if dump := os.Getenv("FAKE_CODEX_PROMPTS"); dump != "" {
		f, err := os.OpenFile(dump, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "=== %s\n%s", or(resume, "new"), prompt)
			f.Close()
		}
	}
	scenario, arg := "text", ""
	// A handoff quotes earlier messages: the scenario is the message's own.
	scan := prompt
	if i := strings.Index(prompt, "--- end of handoff ---"); i >= 0 {
		scan = prompt[i:]
	}
	if m := scenarioRE.FindStringSubmatch(scan); m != nil {
		scenario, arg = m[1], m[2]
	}
	state := os.Getenv("FAKE_CODEX_STATE")
	var th fakeThread
	id := resume
	if resume != "" {
		b, err := os.ReadFile(filepath.Join(state, resume+".json"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: thread/resume: thread/resume failed: no rollout found for thread id %s (code -32600)\n", resume)
			return 1
		}
		json.Unmarshal(b, &th)
	} else {
		id = newUUID()
	}
	if scenario == "newthread" {
		id, th = newUUID(), fakeThread{}
	}
	save := func() {
		b, _ := json.Marshal(th)
		os.WriteFile(filepath.Join(state, id+".json"), b, 0o600)
	}
	save()
	if n := utf8.RuneCountInString(prompt); n > maxInputChars {
		// Like codex: the thread exists, the turn is refused before any
		// request, the reason goes to stderr.
		emit(map[string]any{"type": "thread.started", "thread_id": id})
		fmt.Fprintf(os.Stderr, "Error: turn/start: turn/start failed: Input exceeds the maximum length of %d characters. (code -32602), data: {\"input_error_code\":\"input_too_large\",\"max_chars\":%d,\"actual_chars\":%d}\n", maxInputChars, maxInputChars, n)
		return 1
	}
	if scenario == "spawnfail" {
		fmt.Fprintln(os.Stderr, "Error: Model provider `nonexistent` not found")
		return 1
	}
	if scenario == "hugethread" {
		n, _ := strconv.Atoi(arg)
		id = strings.Repeat("t", n)
	}
	emit(map[string]any{"type": "thread.started", "thread_id": id})
	emit(map[string]any{"type": "turn.started"})
	complete := func(text string, in, outTok int64) int {
		if strings.Contains(prompt, "replyjson") {
			// The reply as one JSON object, with the row it answers.
			row := strings.SplitN(strings.TrimSpace(bodyOf(prompt)), "\n", 2)[0]
			b, _ := json.Marshal(map[string]string{"reply": text, "row": row})
			text = string(b)
		}
		if text != "" {
			emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_9", "type": "agent_message", "text": text}})
		}
		th.Input += in
		th.Output += outTok
		th.Turns++
		save()
		emit(map[string]any{"type": "turn.completed", "usage": map[string]any{
			"input_tokens": th.Input, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
			"output_tokens": th.Output, "reasoning_output_tokens": 0}})
		return 0
	}
	fail := func(msg string) int {
		emit(map[string]any{"type": "error", "message": msg})
		emit(map[string]any{"type": "turn.failed", "error": map[string]any{"message": msg}})
		return 1
	}
	waitOrInterrupt := func(d time.Duration) bool {
		select {
		case <-sigs:
			return true
		case <-time.After(d):
			return false
		}
	}
	// flaky*:N fail (each its own way) the first N runs of the same body,
	// then reply like text; the count lives in $FAKE_CODEX_STATE.
	if strings.HasPrefix(scenario, "flaky") {
		n, _ := strconv.Atoi(arg)
		if runs := countRun(state, bodyOf(prompt)); runs > n {
			return complete(fmt.Sprintf("RECOVERED after %d failed runs", n), 1000, 10)
		}
		scenario = map[string]string{"flaky": "servererror", "flakydrop": "drop", "flakynet": "netdown", "flakyhang": "silent", "flakykill": "selfkill"}[scenario]
	}
	switch scenario {
	case "stamp":
		f, err := os.OpenFile(arg, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return fail(err.Error())
		}
		fmt.Fprintf(f, "%d\n", start.UnixNano())
		f.Close()
		return complete("STAMPED", 1000, 10)
	case "write", "writehang":
		// The model edits a file in its working directory, as apply_patch
		// does: ARG is NAME=CONTENT (a line). writehang then waits to be
		// interrupted or killed, its edit made.
		name, content, _ := strings.Cut(arg, "=")
		item := map[string]any{"id": "item_0", "type": "file_change", "status": "completed",
			"changes": []any{map[string]any{"path": name, "kind": "update"}}}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fail(err.Error())
		}
		if err := os.WriteFile(name, []byte(content+"\n"), 0o644); err != nil {
			return fail(err.Error())
		}
		emit(map[string]any{"type": "item.completed", "item": item})
		if scenario == "writehang" {
			if waitOrInterrupt(time.Hour) {
				return 1
			}
		}
		return complete("WROTE "+name, 1000, 10)
	case "empty":
		// The turn completes without a final answer.
		return complete("", 1000, 10)
	case "gate":
		// Replies like text once the file ARG exists (a test opens the
		// gate when it is ready for the turn to end).
		for {
			if _, err := os.Stat(arg); err == nil {
				break
			}
			if waitOrInterrupt(10 * time.Millisecond) {
				return 1
			}
		}
		return complete("GATE:"+arg, 1000, 10)
	case "text":
		firstLine := strings.SplitN(strings.TrimSpace(bodyOf(prompt)), "\n", 2)[0]
		return complete("ECHO:"+firstLine, 1000, 10)
	case "usage":
		n, _ := strconv.ParseInt(arg, 10, 64)
		return complete("used "+arg, n, 100)
	case "restart":
		// Codex started the thread's running total afresh: the reported
		// total is this run's N input tokens alone.
		n, _ := strconv.ParseInt(arg, 10, 64)
		th.Input, th.Output = 0, 0
		return complete("compacted", n, 100)
	case "websearch":
		// A hosted web search: one model request (the real shape, with the
		// item's two "id" keys).
		out.Write([]byte(`{"type":"item.started","item":{"id":"item_0","type":"web_search","id":"ws_1","query":"","action":{"type":"other"}}}` + "\n"))
		out.Write([]byte(`{"type":"item.completed","item":{"id":"item_0","type":"web_search","id":"ws_1","query":"batty","action":{"type":"search","query":"batty"}}}` + "\n"))
		return complete("SEARCHED", 3000, 30)
	case "slowfirst":
		// Slow unless batty says this is a redelivery.
		if strings.Contains(prompt, "(redelivered") {
			return complete("SLOW_DONE", 1000, 10)
		}
		fallthrough
	case "slow":
		secs, _ := strconv.Atoi(arg)
		if waitOrInterrupt(time.Duration(secs) * time.Second) {
			return 1
		}
		return complete("SLOW_DONE", 1000, 10)
	case "running":
		return running(arg, waitOrInterrupt, complete, fail)
	case "sleepms":
		ms, _ := strconv.Atoi(arg)
		if waitOrInterrupt(time.Duration(ms) * time.Millisecond) {
			return 1
		}
		return complete("SLEPT", 1000, 10)
	case "hang":
		signal.Ignore(syscall.SIGINT)
		time.Sleep(time.Hour)
		return 0
	case "silent":
		waitOrInterrupt(time.Hour)
		return 1
	case "crash":
		return 3
	case "selfkill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		return 0
	case "huge":
		n, _ := strconv.Atoi(arg)
		return complete(strings.Repeat("x", n), 1000, int64(n/4))
	case "hugefail":
		n, _ := strconv.Atoi(arg)
		return fail("stream error: " + strings.Repeat("e", n))
	case "hugethread":
		return complete("ODD_THREAD", 1000, 10)
	case "hugewarn":
		n, _ := strconv.Atoi(arg)
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_1", "type": "error", "message": strings.Repeat("w", n)}})
		return complete("AFTER_WARNING", 1000, 10)
	case "quota":
		// A limit with a reset time, gone by the redelivery (the reset came).
		if redelivered(prompt) {
			return complete("AFTER_QUOTA", 1000, 10)
		}
		return fail(QuotaMessage(quotaReset(arg, start)))
	case "quotaonce":
		// A limit without a reset time, gone by the redelivery.
		if redelivered(prompt) {
			return complete("AFTER_QUOTA", 1000, 10)
		}
		return fail("You’ve hit your usage limit. Try again later.")
	case "quotauntil":
		// The account stays exhausted until the Unix nanoseconds in arg,
		// while codex names a reset time two minutes ago.
		until, _ := strconv.ParseInt(arg, 10, 64)
		if start.UnixNano() < until {
			return fail(QuotaMessage(start.Add(-2 * time.Minute)))
		}
		return complete("AFTER_QUOTA", 1000, 10)
	case "account":
		// The limit of the account in $CODEX_HOME: there while the home
		// holds a file named exhausted.
		home := os.Getenv("CODEX_HOME")
		if _, err := os.Stat(filepath.Join(home, "exhausted")); err == nil {
			return fail(QuotaMessage(start.Add(-2 * time.Minute)))
		}
		ms, _ := strconv.Atoi(arg)
		if waitOrInterrupt(time.Duration(ms) * time.Millisecond) {
			return 1
		}
		return complete("HOME:"+home, 1000, 10)
	case "contextonce", "contextsame":
		// Fine once batty retries after the context failure (contextonce)
		// or hands off to a fresh thread (contextsame).
		if scenario == "contextonce" && strings.Contains(prompt, "ran out of context window") ||
			scenario == "contextsame" && strings.HasPrefix(prompt, "--- batty handoff") {
			return complete("AFTER_CONTEXT", 1000, 10)
		}
		fallthrough
	case "context":
		// Like codex: the window is marked full and the thread's running
		// total starts again from zero.
		th.Input, th.Output = 0, 0
		save()
		return fail("Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.")
	case "auth":
		return fail("unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:1/v1/responses, request id: x")
	case "servererror":
		return fail("We’re currently experiencing high demand, which may cause temporary errors.")
	case "drop":
		return fail("stream disconnected before completion: Transport error: network error: error decoding response body")
	case "netdown":
		// Like codex with nothing listening: it never gives up by itself.
		for {
			emit(map[string]any{"type": "error", "message": NetworkWaitNotice})
			if waitOrInterrupt(netNoticeEvery) {
				return 1
			}
		}
	case "netwait":
		// The API comes back after N notices.
		n, _ := strconv.Atoi(arg)
		for range n {
			emit(map[string]any{"type": "error", "message": NetworkWaitNotice})
			if waitOrInterrupt(netNoticeEvery) {
				return 1
			}
		}
		return complete("NET_BACK", 1000, 10)
	case "outage":
		// An API shared by every agent: unreachable while the file arg
		// exists (codex waits for the network), then a reply.
		for {
			if _, err := os.Stat(arg); err != nil {
				return complete("NET_BACK", 1000, 10)
			}
			emit(map[string]any{"type": "error", "message": NetworkWaitNotice})
			if waitOrInterrupt(netNoticeEvery) {
				return 1
			}
		}
	case "retrystorm":
		// Codex's own retry notices, and nothing else, until interrupted.
		for i := 1; ; i++ {
			emit(map[string]any{"type": "error", "message": fmt.Sprintf("Reconnecting... %d/1000 (stream disconnected before completion: idle timeout waiting for SSE)", i)})
			if waitOrInterrupt(netNoticeEvery) {
				return 1
			}
		}
	case "longcmd":
		// A model command that runs MS milliseconds, printing nothing
		// codex shows before it ends.
		ms, _ := strconv.Atoi(arg)
		item := map[string]any{"id": "item_0", "type": "command_execution", "command": "/bin/bash -lc 'make'",
			"aggregated_output": "", "exit_code": nil, "status": "in_progress"}
		emit(map[string]any{"type": "item.started", "item": item})
		if waitOrInterrupt(time.Duration(ms) * time.Millisecond) {
			return 1
		}
		item["aggregated_output"], item["exit_code"], item["status"] = "built\n", 0, "completed"
		emit(map[string]any{"type": "item.completed", "item": item})
		return complete("LONGCMD_DONE", 2000, 20)
	case "newthread":
		// Behaves like resume of a name that is not a thread: a new id.
		return complete("NEW", 1000, 10)
	case "detach", "detachbare":
		// A model command that detaches itself (own session, reparented
		// away from codex) and records its pid, then a long command runs.
		// detachbare's command also clears its environment (env -i), as a
		// process hiding from batty's mark would.
		script := `echo $$ > "$0"; exec sleep 300`
		if scenario == "detachbare" {
			script = `echo $$ > "$0"; exec env -i "$(command -v sleep)" 300`
		}
		child := exec.Command("/bin/sh", "-c", script, arg)
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			return fail(err.Error())
		}
		emit(map[string]any{"type": "item.started", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "/bin/bash -lc 'server &'", "aggregated_output": "", "exit_code": nil, "status": "in_progress"}})
		if waitOrInterrupt(time.Hour) {
			return 1 // like codex on SIGINT; the detached child is left behind
		}
		return 0
	case "detachdone":
		// A model command that detaches itself and is left running by a
		// turn that completes normally. Its pid is in PIDFILE before the
		// turn completes.
		child := exec.Command("sleep", "300")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			return fail(err.Error())
		}
		tmp := arg + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(child.Process.Pid)+"\n"), 0o600); err != nil {
			return fail(err.Error())
		}
		if err := os.Rename(tmp, arg); err != nil {
			return fail(err.Error())
		}
		emit(map[string]any{"type": "item.started", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "/bin/bash -lc 'server &'", "aggregated_output": "", "exit_code": nil, "status": "in_progress"}})
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "/bin/bash -lc 'server &'", "aggregated_output": "", "exit_code": 0, "status": "completed"}})
		return complete("DETACHED", 1000, 10)
	case "exec":
		emit(map[string]any{"type": "item.started", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "/bin/bash -lc 'echo hi'", "aggregated_output": "", "exit_code": nil, "status": "in_progress"}})
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "/bin/bash -lc 'echo hi'", "aggregated_output": "hi\n", "exit_code": 0, "status": "completed"}})
		return complete("EXEC_DONE", 2000, 20)
	case "garbage":
		out.Write([]byte("not json at all\n{\"no_type\":1}\n"))
		return complete("AFTER_GARBAGE", 1000, 10)
	case "env":
		return complete(os.Getenv(arg), 1000, 10)
	case "run":
		// A model command: the executable ARG, run to its end below
		// codex; the reply is its output.
		out, err := exec.Command(arg).CombinedOutput()
		if err != nil {
			return complete(fmt.Sprintf("RUN_FAILED: %v: %s", err, strings.TrimSpace(string(out))), 1000, 10)
		}
		return complete("RUN:"+strings.TrimSpace(string(out)), 1000, 10)
	}
	return fail("fakecodex: unknown scenario " + scenario)
}

// redelivered reports whether batty's header marks the prompt as a
// redelivery, for whatever reason.
func redelivered(prompt string) bool {
	return strings.Contains(prompt, "(redelivered") || strings.Contains(prompt, "(retried")
}

// quotaReset is the reset time of the quota scenario: the Unix seconds in
// arg, else an hour from now. Never a fixed date: the suite must pass on any
// day.
func quotaReset(arg string, now time.Time) time.Time {
	if secs, err := strconv.ParseInt(arg, 10, 64); err == nil {
		return time.Unix(secs, 0)
	}
	return now.Add(time.Hour)
}

// QuotaMessage is the usage-limit message the real Codex CLI prints, with
// the reset time at written in the local zone, dated, to the minute (codex
// rounds it down), e.g. "try again at Nov 22nd, 2026 12:21 AM.".
func QuotaMessage(at time.Time) string {
	at = at.Local()
	return "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at " +
		at.Format("Jan ") + ordinal(at.Day()) + at.Format(", 2006 3:04 PM") + "."
}

// ordinal writes a day of the month the way codex does: 1st, 2nd, 3rd, 4th, 11th.
func ordinal(d int) string {
	suffix := "th"
	if d/10 != 1 {
		switch d % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(d) + suffix
}

// bodyOf strips the batty header: the body starts after the first blank line.
func bodyOf(prompt string) string {
	if i := strings.Index(prompt, "\n\n"); i >= 0 {
		return prompt[i+2:]
	}
	return prompt
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NetworkWaitNotice is the notice the real Codex CLI prints while nothing
// listens at the API's address.
const NetworkWaitNotice = "Reconnecting... waiting for network (Connection failed: error sending request)"

// netNoticeEvery is how often the fake repeats a notice (codex: 5 s, then
// longer); short, so tests stay fast.
const netNoticeEvery = 100 * time.Millisecond

// countRun counts one more run of body and returns the count so far
// (1 for the first run). The count is a file in state.
func countRun(state, body string) int {
	sum := sha256.Sum256([]byte(body))
	path := filepath.Join(state, "runs-"+hex.EncodeToString(sum[:8]))
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	n++
	os.WriteFile(path, []byte(strconv.Itoa(n)), 0o600)
	return n
}

// running is the scenario running:DIR=MS (see FakeMain).
func running(arg string, waitOrInterrupt func(time.Duration) bool, complete func(string, int64, int64) int, fail func(string) int) int {
	dir, ms, _ := strings.Cut(arg, "=")
	wait, _ := strconv.Atoi(ms)
	start := time.Now()
	me := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(me, nil, 0o600); err != nil {
		return fail(err.Error())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fail(err.Error())
	}
	interrupted := waitOrInterrupt(time.Duration(wait) * time.Millisecond)
	end := time.Now()
	os.Remove(me)
	f, err := os.OpenFile(dir+".counts", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fail(err.Error())
	}
	fmt.Fprintf(f, "%d %d %d\n", len(ents), start.UnixNano(), end.UnixNano())
	f.Close()
	if interrupted {
		return 1
	}
	return complete("RAN", 1000, 10)
}

// Run is one run of the running scenario as recorded in DIR.counts: how
// many workers ran when it started (itself included), its start and end.
type Run struct {
	Running    int
	Start, End time.Time
}

// RunningCounts reads the runs the running:DIR=MS scenario recorded.
func RunningCounts(dir string) ([]Run, error) {
	b, err := os.ReadFile(dir + ".counts")
	if err != nil {
		return nil, fmt.Errorf("read the runs recorded: %w", err)
	}
	var out []Run
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var n int
		var s, e int64
		if _, err := fmt.Sscanf(line, "%d %d %d", &n, &s, &e); err != nil {
			return nil, fmt.Errorf("runs recorded: line %q: %w", line, err)
		}
		out = append(out, Run{Running: n, Start: time.Unix(0, s), End: time.Unix(0, e)})
	}
	return out, nil
}
