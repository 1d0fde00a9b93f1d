package scriptedmodel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
)

// testBatty is the batty binary the agents of these tests are told to
// run; battyCmd is how they are told to run it (shell-quoted: it holds a
// space).
const (
	testBatty = "/opt/batty tools/batty"
	battyCmd  = "'/opt/batty tools/batty'"
)

// conv builds the conversation codex sends for one agent: its standing
// instructions as the shim gives them (the role's, then batty's section),
// codex's own context message, then turns.
type conv struct{ items []Item }

func newConv(prompt string) *conv {
	return &conv{items: []Item{
		{Kind: ItemMessage, Role: "developer", Text: "You are Codex, a coding agent."},
		{Kind: ItemMessage, Role: "developer", Text: prompt + "\n\n" + shim.CrewInstructions("agent", testBatty, "/tmp/p")},
		{Kind: ItemMessage, Role: "user", Text: "<environment_context>\n  <cwd>/tmp/x</cwd>\n</environment_context>"},
	}}
}

// message adds a batty message, rendered exactly as the shim renders it.
func (c *conv) message(id, from, body string, attempt int) *conv {
	return c.reply(id, from, body, attempt, "")
}

// reply adds a batty message that replies to message replyTo.
func (c *conv) reply(id, from, body string, attempt int, replyTo string) *conv {
	c.items = append(c.items, Item{Kind: ItemMessage, Role: "user",
		Text: shim.FormatPrompt(protocol.SendMessage{ID: id, From: from, Body: body, Attempt: attempt, InReplyTo: replyTo})})
	return c
}

// ran adds a shell call of step's command and codex's output for it.
func (c *conv) ran(t *testing.T, step Step, code int, output string) *conv {
	t.Helper()
	if step.Shell == "" {
		t.Fatalf("expected a command, got the answer %q", step.Text)
	}
	args, _ := json.Marshal(map[string]any{"cmd": step.Shell})
	c.items = append(c.items,
		Item{Kind: ItemCall, Name: ShellTool, Arguments: string(args)},
		Item{Kind: ItemOutput, Text: execOutput(code, output)})
	return c
}

// answered adds the assistant's final answer.
func (c *conv) answered(text string) *conv {
	c.items = append(c.items, Item{Kind: ItemMessage, Role: "assistant", Text: text})
	return c
}

func (c *conv) req() Request { return Request{Model: Model, Items: append([]Item(nil), c.items...)} }

// execOutput is what codex 0.169.0 returns to the model for a finished
// command.
func execOutput(code int, output string) string {
	return "Chunk ID: beadb5\nWall time: 0.0000 seconds\nProcess exited with code " +
		itoa(code) + "\nOriginal token count: 16\nOutput:\n" + output
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestDemoScriptPlaysTheWholeConversation(t *testing.T) {
	s := DemoScript()
	t1, t2 := s.Tasks[0], s.Tasks[1]

	// The architect gets the goal and hands out one task per command, with
	// the batty command its instructions give.
	arch := newConv(s.ArchitectPrompt).message("m1", "human", Goal, 1)
	step := s.Next(arch.req())
	if step.Agent != "architect" || step.From != "human" || step.Shell != battyCmd+" send engineer-1 "+shellQuote(t1.Ask) {
		t.Fatalf("architect step 1: %+v", step)
	}
	step = s.Next(arch.ran(t, step, 0, "queued t-engineer-1 for engineer-1\n").req())
	if step.Shell != battyCmd+" send engineer-2 "+shellQuote(t2.Ask) {
		t.Fatalf("architect step 2: %+v", step)
	}
	step = s.Next(arch.ran(t, step, 0, "queued t-engineer-2 for engineer-2\n").req())
	if step.Shell != "" || !strings.Contains(step.Text, "engineer-1 and engineer-2") {
		t.Fatalf("architect acknowledgement: %+v", step)
	}
	arch.answered(step.Text)

	// Each engineer runs its task's command and ends its turn with the
	// report: no batty send, the final answer is the reply.
	reports := map[string]string{}
	for _, task := range s.Tasks {
		eng := newConv(s.EngineerPrompt).message("t-"+task.Engineer, "architect", task.Ask, 1)
		step := s.Next(eng.req())
		if step.Agent != task.Engineer || step.Role != RoleEngineer || step.Shell != task.Command {
			t.Fatalf("%s step 1: %+v", task.Engineer, step)
		}
		step = s.Next(eng.ran(t, step, 0, "OUTPUT-OF-"+task.Engineer+"\n").req())
		if step.Shell != "" || step.Failed || !strings.HasPrefix(step.Text, "I wrote "+task.File) || !strings.Contains(step.Text, "OUTPUT-OF-"+task.Engineer) {
			t.Fatalf("%s report: %+v", task.Engineer, step)
		}
		reports[task.Engineer] = step.Text
	}

	// The reports come back as replies, in any order: the first makes the
	// architect wait (its final answer goes to no one), the second makes
	// it send the human the answer.
	arch.reply("r2", "engineer-2", reports["engineer-2"], 1, "t-engineer-2")
	step = s.Next(arch.req())
	if step.Shell != "" || step.Text != "Noted engineer-2's report; waiting for engineer-1." {
		t.Fatalf("architect after one report: %+v", step)
	}
	arch.answered(step.Text).reply("r1", "engineer-1", reports["engineer-1"], 1, "t-engineer-1")
	// Both in: each engineer's branch is queued for landing, then the
	// human gets the answer.
	step = s.Next(arch.req())
	if step.Shell != battyCmd+" merge engineer-1" {
		t.Fatalf("architect's first landing: %+v", step)
	}
	step = s.Next(arch.ran(t, step, 0, "queued the landing of batty/engineer-1\n").req())
	if step.Shell != battyCmd+" merge engineer-2" {
		t.Fatalf("architect's second landing: %+v", step)
	}
	step = s.Next(arch.ran(t, step, 0, "queued the landing of batty/engineer-2\n").req())
	if !strings.HasPrefix(step.Shell, battyCmd+" send human '") {
		t.Fatalf("architect after both reports: %+v", step)
	}
	answer := unquote(t, strings.TrimPrefix(step.Shell, battyCmd+" send human "))
	if answer != s.Answer(reports) || !strings.HasPrefix(answer, AnswerHeading) ||
		!strings.Contains(answer, "OUTPUT-OF-engineer-1") || !strings.Contains(answer, "OUTPUT-OF-engineer-2") {
		t.Fatalf("answer %q", answer)
	}
	step = s.Next(arch.ran(t, step, 0, "queued z for human\n").req())
	if step.Shell != "" || step.Failed || step.Text == "" {
		t.Fatalf("architect end: %+v", step)
	}
}

// The batty command is read from the section of the agent's instructions
// as the shim writes it, whatever the path; without the section the script
// cannot reach the team, and says so as a failure.
func TestScriptReadsTheBattyCommand(t *testing.T) {
	s := DemoScript()
	for path, want := range map[string]string{
		"/usr/local/bin/batty": "/usr/local/bin/batty",
		"/tmp/it's here/batty": `'/tmp/it'\''s here/batty'`,
		"":                     `"$BATTY_BIN"`,
	} {
		req := Request{Items: []Item{
			{Kind: ItemMessage, Role: "developer", Text: s.ArchitectPrompt + "\n\n" + shim.CrewInstructions("architect", path, "/p")},
			{Kind: ItemMessage, Role: "user", Text: shim.FormatPrompt(protocol.SendMessage{ID: "m", From: "human", Body: Goal})},
		}}
		if st := s.Next(req); st.Shell != want+" send engineer-1 "+shellQuote(s.Tasks[0].Ask) {
			t.Errorf("batty at %q: %+v", path, st)
		}
	}
	req := Request{Items: []Item{
		{Kind: ItemMessage, Role: "developer", Text: s.ArchitectPrompt},
		{Kind: ItemMessage, Role: "user", Text: shim.FormatPrompt(protocol.SendMessage{ID: "m", From: "human", Body: Goal})},
	}}
	if st := s.Next(req); !st.Failed || st.Shell != "" || !strings.Contains(st.Text, "batty") {
		t.Errorf("without batty's section: %+v", st)
	}
}

// unquote undoes shellQuote.
func unquote(t *testing.T, q string) string {
	t.Helper()
	if len(q) < 2 || q[0] != '\'' || q[len(q)-1] != '\'' {
		t.Fatalf("not a quoted word: %q", q)
	}
	return strings.ReplaceAll(q[1:len(q)-1], `'\''`, "'")
}

func TestScriptAnswers(t *testing.T) {
	s := DemoScript()
	t1 := s.Tasks[0]
	for _, c := range []struct {
		name  string
		req   func(t *testing.T) Request
		check func(t *testing.T, st Step)
	}{
		{"no batty message", func(*testing.T) Request { return newConv(s.ArchitectPrompt).req() },
			func(t *testing.T, st Step) { want(t, st, Step{Text: NoPart}) }},
		{"not a JSON body", func(*testing.T) Request { return ParseRequest([]byte("nonsense")) },
			func(t *testing.T, st Step) { want(t, st, Step{Text: NoPart}) }},
		{"unknown role", func(*testing.T) Request { return newConv("You are someone else.").message("m", "human", Goal, 1).req() },
			func(t *testing.T, st Step) { want(t, st, Step{From: "human", Text: NoPart}) }},
		{"engineer given no task of the script", func(*testing.T) Request {
			return newConv(s.EngineerPrompt).message("m", "architect", "paint the fence", 1).req()
		}, func(t *testing.T, st Step) { want(t, st, Step{Role: RoleEngineer, From: "architect", Text: NoPart}) }},
		{"engineer messaged by the human", func(*testing.T) Request {
			return newConv(s.EngineerPrompt).message("m", "human", t1.Ask, 1).req()
		}, func(t *testing.T, st Step) { want(t, st, Step{Role: RoleEngineer, From: "human", Text: NoPart}) }},
		{"architect messaged by a stranger", func(*testing.T) Request {
			return newConv(s.ArchitectPrompt).message("m", "manager", "hi", 1).req()
		}, func(t *testing.T, st Step) {
			want(t, st, Step{Agent: "architect", Role: RoleArchitect, From: "manager", Text: NoPart})
		}},
		{"redelivered goal", func(*testing.T) Request {
			return newConv(s.ArchitectPrompt).message("m", "human", Goal, 3).req()
		}, func(t *testing.T, st Step) {
			if st.Shell != battyCmd+" send engineer-1 "+shellQuote(t1.Ask) {
				t.Fatalf("%+v", st)
			}
		}},
		{"failed command", func(t *testing.T) Request {
			c := newConv(s.EngineerPrompt).message("m", "architect", t1.Ask, 1)
			return c.ran(t, Step{Shell: t1.Command}, 1, "printf: write error: No space left on device\n").req()
		}, func(t *testing.T, st Step) {
			if !st.Failed || st.Shell != "" || st.Agent != "engineer-1" ||
				!strings.Contains(st.Text, "exit code 1") || !strings.Contains(st.Text, "No space left") || !strings.Contains(st.Text, t1.Command) {
				t.Fatalf("%+v", st)
			}
		}},
		{"the newest message counts", func(t *testing.T) Request {
			c := newConv(s.ArchitectPrompt).message("m", "human", Goal, 1)
			st := s.Next(c.req())
			c.ran(t, st, 0, "ok").answered("handed out")
			return c.message("m2", "human", "anything else?", 1).req()
		}, func(t *testing.T, st Step) {
			// A second goal starts the hand-out again.
			if st.Shell != battyCmd+" send engineer-1 "+shellQuote(t1.Ask) {
				t.Fatalf("%+v", st)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, s.Next(c.req(t))) })
	}
}

func want(t *testing.T, got, want Step) {
	t.Helper()
	if got != want {
		t.Fatalf("step %+v, want %+v", got, want)
	}
}

func TestExecResult(t *testing.T) {
	for _, c := range []struct {
		in   string
		code int
		out  string
	}{
		{execOutput(0, "hello\n"), 0, "hello"},
		{execOutput(2, "hello\nls: cannot access\n"), 2, "hello\nls: cannot access"},
		{execOutput(-1, ""), -1, ""},
		{"plain text", 0, "plain text"},
		{"Process exited with code x\nOutput:\nabc", 0, "abc"},
	} {
		code, out := execResult(c.in)
		if code != c.code || out != c.out {
			t.Errorf("execResult(%q) = %d, %q; want %d, %q", c.in, code, out, c.code, c.out)
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got := shellQuote(`it's "x" $HOME`); got != `'it'\''s "x" $HOME'` {
		t.Errorf("shellQuote: %s", got)
	}
}

func TestParseRequest(t *testing.T) {
	body := `{"model":"gpt-5.5","input":[
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"be brief"}]},
		{"role":"user","content":"plain string content"},
		{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"},
		{"type":"function_call_output","call_id":"c1","output":"Process exited with code 0\nOutput:\nx"},
		{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch"},
		{"type":"custom_tool_call_output","output":"done"},
		{"type":"reasoning","summary":[]},
		42
	]}`
	got := ParseRequest([]byte(body))
	wantItems := []Item{
		{Kind: ItemMessage, Role: "developer", Text: "be brief"},
		{Kind: ItemMessage, Role: "user", Text: "plain string content"},
		{Kind: ItemCall, Name: "exec_command", Arguments: `{"cmd":"ls"}`},
		{Kind: ItemOutput, Text: "Process exited with code 0\nOutput:\nx"},
		{Kind: ItemCall, Name: "apply_patch", Arguments: "*** Begin Patch"},
		{Kind: ItemOutput, Text: "done"},
	}
	if got.Model != "gpt-5.5" || len(got.Items) != len(wantItems) {
		t.Fatalf("parsed %+v", got)
	}
	for i := range wantItems {
		if got.Items[i] != wantItems[i] {
			t.Errorf("item %d = %+v, want %+v", i, got.Items[i], wantItems[i])
		}
	}
	if lastCommand(got) != "*** Begin Patch" {
		t.Errorf("lastCommand = %q", lastCommand(got))
	}
}

func FuzzParseRequestAndNext(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":[{"type":"message","role":"user","content":"--- batty message a from human ---\nx\n\ngoal"}]}`))
	f.Add([]byte(`{"input":[{"type":"function_call_output","output":[{"text":"Process exited with code 9"}]}]}`))
	f.Add([]byte(`{"input":[{"role":"developer","content":"You are the architect of a small demo team."},` +
		`{"role":"user","content":"--- batty message r from engineer-1 ---\n\nreport"}]}`))
	f.Add([]byte(`[]`))
	s := DemoScript()
	f.Fuzz(func(t *testing.T, body []byte) {
		st := s.Next(ParseRequest(body))
		if st.Shell == "" && st.Text == "" {
			t.Fatalf("a step with neither a command nor an answer: %+v", st)
		}
	})
}
