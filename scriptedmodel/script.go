package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/battyhq/batty/textclip"
)

// Roles the script plays.
const (
	RoleArchitect = "architect"
	RoleEngineer  = "engineer"
)

// Human is the sender name batty gives messages typed by a person, and the
// recipient that reaches the human's inbox.
const Human = "human"

// AnswerHeading starts the architect's answer to the human once every task
// has been reported: `batty demo` waits for a message in the human's inbox
// that starts with it.
const AnswerHeading = "The team is done."

// Task is one piece of work the architect hands to an engineer.
type Task struct {
	// Engineer is the agent that gets the task ("engineer-1").
	Engineer string
	// Ask is the message the architect sends it; the engineer recognises
	// its task by this text.
	Ask string
	// Command is the shell command the engineer runs in its working
	// directory (bash, no login profile).
	Command string
	// File is the file Command writes, relative to the engineer's working
	// directory.
	File string
}

// Script is the stand-in model's part for a team of one architect and the
// engineers its Tasks name. The zero Script answers every request with
// [Script.Next]'s "no part" text.
type Script struct {
	// ArchitectPrompt and EngineerPrompt are the roles' standing
	// instructions (team.yaml `prompt:`): a request is the architect's or
	// an engineer's when its developer instructions hold the prompt's
	// first line.
	ArchitectPrompt, EngineerPrompt string
	// Tasks are handed out in order, one `batty send` each.
	Tasks []Task
	// Land makes the architect, once every engineer has reported, queue
	// each engineer's branch for landing (one `batty merge` each) before
	// it answers the human: the engineers work in worktrees of their own.
	Land bool
}

// Step is the script's answer to one request: run Shell, or end the turn
// with the final answer Text.
type Step struct {
	// Agent is who asks ("architect", "engineer-1"), when the script can
	// tell; Role is its role, "" for a conversation it has no part for.
	Agent, Role string
	// From is the sender of the message the turn works on ("" when none
	// was found).
	From string
	// Shell is the command to run; "" means the turn ends with Text.
	Shell string
	// Text is the final answer of the turn when Shell is "".
	Text string
	// Failed reports that the previous command failed; Text says which
	// and how.
	Failed bool
}

// NoPart is the answer to a request the script has no part for.
const NoPart = "I am batty's scripted stand-in model and only play the demo script; this message is not part of it."

// DemoScript returns the script `batty demo` plays: the architect hands two
// tasks out, engineer-1 writes a greeting and lists it, engineer-2 writes
// the numbers 1 to 5 and counts them (each in its own worktree), each
// reports with its final answer (which batty delivers to the architect as
// a reply), and the architect queues both branches for landing and sends
// the human the summary.
func DemoScript() Script {
	return Script{
		ArchitectPrompt: "You are the architect of a small demo team.\n" +
			"Split the human's goal into tasks and hand each to an engineer with batty send engineer-N \"...\";\n" +
			"your final answer to the goal is your reply to the human. Each engineer's report comes back to you\n" +
			"as a reply; once every engineer has reported, land each engineer's branch with batty merge engineer-N,\n" +
			"then send the human the summary with batty send human \"...\".",
		EngineerPrompt: "You are an engineer of a small demo team.\n" +
			"Do the task the architect sends you in your working directory. Your final answer is your report,\n" +
			"which batty delivers to the architect: say what you did and what your command printed.",
		Tasks: []Task{
			{
				Engineer: "engineer-1",
				Ask:      "Write greeting.txt with a greeting signed with your name, then list it with ls -l.",
				Command:  `printf 'Hello from %s.\n' "$BATTY_AGENT" > greeting.txt && ls -l greeting.txt && cat greeting.txt`,
				File:     "greeting.txt",
			},
			{
				Engineer: "engineer-2",
				Ask:      "Write numbers.txt with the numbers 1 to 5, one per line, then count its lines and words with wc.",
				Command:  `seq 1 5 > numbers.txt && wc -l -w numbers.txt`,
				File:     "numbers.txt",
			},
		},
		Land: true,
	}
}

// Goal is the message `batty demo` sends the architect.
const Goal = "Show me that the team works: have two engineers each write a small file in their scratch directory, run a command on it, and tell me what they got."

// headerRE matches the first line batty puts before every message an agent
// receives (shim.FormatPrompt): "--- batty message <id> from <sender> ---",
// with ", reply to <id>" for a reply, and possibly a redelivery note
// before the closing dashes.
var headerRE = regexp.MustCompile(`(?m)^--- batty message (\S+) from ([a-z0-9][a-z0-9-]*)(?:, reply to (\S+))?(?: \([^\n]*\))? ---$`)

// battyRE finds the batty command in an agent's instructions: the line of
// batty's own section (shim.CrewInstructions) that gives it, shell-quoted
// as it is to be run.
var battyRE = regexp.MustCompile(`(?m)^Your batty command: (.+)$`)

// parsedMessage is one batty message found in the conversation.
type parsedMessage struct {
	index   int // position in Request.Items
	from    string
	replyTo string // the message it replies to ("" when it is none)
	body    string
}

// messages returns the batty messages among the user messages of req, in
// order.
func messages(req Request) []parsedMessage {
	var out []parsedMessage
	for i, it := range req.Items {
		if it.Kind != ItemMessage || it.Role != "user" {
			continue
		}
		m := headerRE.FindStringSubmatchIndex(it.Text)
		if m == nil {
			continue
		}
		from := it.Text[m[4]:m[5]]
		replyTo := ""
		if m[6] >= 0 {
			replyTo = it.Text[m[6]:m[7]]
		}
		body := it.Text[m[1]:]
		// The header is followed by one line on how to answer and a blank
		// line; the body comes after them.
		if _, after, ok := strings.Cut(body, "\n\n"); ok {
			body = after
		}
		out = append(out, parsedMessage{index: i, from: from, replyTo: replyTo, body: strings.TrimSpace(body)})
	}
	return out
}

// Next returns the step for req. It depends on req alone.
func (s Script) Next(req Request) Step {
	msgs := messages(req)
	if len(msgs) == 0 {
		return Step{Text: NoPart}
	}
	cur := msgs[len(msgs)-1]
	var outputs []string
	for _, it := range req.Items[cur.index+1:] {
		if it.Kind == ItemOutput {
			outputs = append(outputs, it.Text)
		}
	}
	step := Step{From: cur.from, Role: s.role(req)}
	var task *Task
	switch step.Role {
	case RoleArchitect:
		step.Agent = RoleArchitect
	case RoleEngineer:
		for i, t := range s.Tasks {
			if cur.from == RoleArchitect && strings.Contains(cur.body, t.Ask) {
				task, step.Agent = &s.Tasks[i], t.Engineer
				break
			}
		}
	}
	batty := battyRE.FindStringSubmatch(req.instructions())
	if step.Role != "" && batty == nil {
		// A real model would not know how to reach its team either.
		step.Failed = true
		step.Text = "My instructions do not say how to run batty (no \"Your batty command:\" line), so I cannot reach my team."
		return step
	}
	if len(outputs) > 0 {
		if code, out := execResult(outputs[len(outputs)-1]); code != 0 {
			step.Failed = true
			step.Text = fmt.Sprintf("The command `%s` failed (exit code %d): %s", lastCommand(req), code, textclip.Bytes(out, 400+len(textclip.Ellipsis), textclip.Ellipsis))
			return step
		}
	}
	switch {
	case step.Role == RoleArchitect && cur.from == Human:
		return s.handOut(step, batty[1], len(outputs))
	case step.Role == RoleArchitect && s.taskOf(cur.from) >= 0:
		return s.collect(step, batty[1], msgs, len(outputs))
	case task != nil:
		return s.work(step, *task, outputs)
	}
	step.Text = NoPart
	return step
}

// handOut is the architect's turn on the human's goal: one `batty send`
// per task (batty, the command its instructions give), then an
// acknowledgement: its final answer, which batty delivers to the human as
// the reply.
func (s Script) handOut(step Step, batty string, done int) Step {
	if done < len(s.Tasks) {
		t := s.Tasks[done]
		step.Shell = batty + " send " + t.Engineer + " " + shellQuote(t.Ask)
		return step
	}
	var names []string
	for _, t := range s.Tasks {
		names = append(names, t.Engineer)
	}
	step.Text = fmt.Sprintf("I split the goal into %d tasks and handed them to %s. I will answer you when every engineer has reported.",
		len(s.Tasks), strings.Join(names, " and "))
	return step
}

// collect is the architect's turn on an engineer's report (the engineer's
// final answer, a reply): with every task reported it queues each
// engineer's branch for landing (with Land), then sends the human the
// answer with batty send — the final answer of a reply goes to no one —
// else it waits for the others.
func (s Script) collect(step Step, batty string, msgs []parsedMessage, done int) Step {
	reports := map[string]string{} // engineer → its latest report
	for _, m := range msgs {
		if s.taskOf(m.from) >= 0 {
			reports[m.from] = m.body
		}
	}
	var missing []string
	for _, t := range s.Tasks {
		if _, ok := reports[t.Engineer]; !ok {
			missing = append(missing, t.Engineer)
		}
	}
	lands := 0
	if s.Land {
		lands = len(s.Tasks)
	}
	switch {
	case len(missing) > 0:
		step.Text = fmt.Sprintf("Noted %s's report; waiting for %s.", step.From, strings.Join(missing, " and "))
	case done < lands:
		step.Shell = batty + " merge " + s.Tasks[done].Engineer
	case done == lands:
		step.Shell = batty + " send human " + shellQuote(s.Answer(reports))
	default:
		step.Text = "Every engineer has reported; I sent the human the answer."
	}
	return step
}

// Answer is the architect's answer to the human given every engineer's
// report: AnswerHeading, then one paragraph per task.
func (s Script) Answer(reports map[string]string) string {
	var b strings.Builder
	b.WriteString(AnswerHeading)
	if s.Land {
		b.WriteString(" Each engineer worked on a branch of its own; I queued both branches for landing on the base branch (batty merge), which lands each once the team's check passes.")
	}
	for _, t := range s.Tasks {
		fmt.Fprintf(&b, "\n\n%s: %s", t.Engineer, reports[t.Engineer])
	}
	return b.String()
}

// work is an engineer's turn on its task: run the command, then end the
// turn with the report as its final answer, which batty delivers to the
// architect as the reply.
func (s Script) work(step Step, t Task, outputs []string) Step {
	if len(outputs) == 0 {
		step.Shell = t.Command
		return step
	}
	_, out := execResult(outputs[0])
	step.Text = Report(t, out)
	return step
}

// Report is an engineer's report on task t whose command printed out.
func Report(t Task, out string) string {
	return fmt.Sprintf("I wrote %s; my command printed:\n%s", t.File, textclip.Bytes(out, 1000+len(textclip.Ellipsis), textclip.Ellipsis))
}

// role tells which role's instructions req carries.
func (s Script) role(req Request) string {
	instr := req.instructions()
	switch {
	case s.ArchitectPrompt != "" && strings.Contains(instr, firstLine(s.ArchitectPrompt)):
		return RoleArchitect
	case s.EngineerPrompt != "" && strings.Contains(instr, firstLine(s.EngineerPrompt)):
		return RoleEngineer
	}
	return ""
}

// taskOf returns the index of the task of engineer name, or -1.
func (s Script) taskOf(name string) int {
	for i, t := range s.Tasks {
		if t.Engineer == name {
			return i
		}
	}
	return -1
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// exitRE finds the exit status in the output codex returns for a command.
var exitRE = regexp.MustCompile(`(?m)^Process exited with code (-?\d+)$`)

// execResult splits the output codex returns for a finished command
// ("…\nProcess exited with code N\n…\nOutput:\n<output>") into its exit
// code and what the command printed. Text in another shape is taken as the
// output of a command that succeeded.
func execResult(s string) (int, string) {
	code := 0
	if m := exitRE.FindStringSubmatch(s); m != nil {
		code, _ = strconv.Atoi(m[1])
	}
	if _, after, ok := strings.Cut(s, "\nOutput:\n"); ok {
		s = after
	}
	return code, strings.TrimSpace(s)
}

// lastCommand returns the command of the last shell call in req.
func lastCommand(req Request) string {
	for i := len(req.Items) - 1; i >= 0; i-- {
		it := req.Items[i]
		if it.Kind != ItemCall {
			continue
		}
		var a struct {
			Cmd string `json:"cmd"`
		}
		if json.Unmarshal([]byte(it.Arguments), &a) == nil && a.Cmd != "" {
			return a.Cmd
		}
		return it.Arguments
	}
	return "?"
}

// shellQuote quotes s as one bash word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
