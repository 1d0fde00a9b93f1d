package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/inbox"
)

// SubAnswers is the subdirectory of an outbox where the agent's shim
// writes the daemon's answer to a recall request: answers/<id>.json, <id>
// the request's.
const SubAnswers = "answers"

// Bounds of a recall request.
const (
	// MaxRecallText bounds the text searched for and a thread's name.
	MaxRecallText = 1024
	// MaxRecallAgents bounds the agents a search names.
	MaxRecallAgents = 64
	// MaxRecallLimit bounds the hits a search asks for.
	MaxRecallLimit = 500
)

// The formats of a recall's answer.
const (
	FormatText     = ""
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// RecallWait is how long `batty search` and `batty threads show` inside an
// agent wait for the daemon's answer; the daemon answers no request older
// than that (nobody waits for it any more).
const RecallWait = 30 * time.Second

// Recall asks the daemon for what `batty search` (Search) or `batty threads
// show` (Thread) prints, of the agent's own team, secrets redacted:
// exactly one of Search and Thread.
type Recall struct {
	// Search is the text to search for.
	Search string `json:"search,omitempty"`
	// Agents and Role keep the turns of those agents, of that role.
	Agents []string `json:"agents,omitempty"`
	Role   string   `json:"role,omitempty"`
	// Since and Until bound when the turn ended ([Since, Until); zero:
	// none).
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Limit bounds the hits (0: the default).
	Limit int `json:"limit,omitempty"`
	// Thread is the thread to show: its id or a prefix of it.
	Thread string `json:"thread,omitempty"`
	// Format is FormatText, FormatJSON or (a thread only) FormatMarkdown.
	Format string `json:"format,omitempty"`
}

// Validate reports whether r asks for one thing, within bounds. Pure.
func (r Recall) Validate() error {
	switch {
	case (r.Search == "") == (r.Thread == ""):
		return errors.New("a recall asks for a search or a thread, one of them")
	case len(r.Search) > MaxRecallText || len(r.Thread) > MaxRecallText:
		return fmt.Errorf("recall text of more than %d bytes", MaxRecallText)
	case r.Thread != "" && (len(r.Agents) > 0 || r.Role != "" || !r.Since.IsZero() || !r.Until.IsZero() || r.Limit != 0):
		return errors.New("a thread's recall takes no search filter")
	case len(r.Agents) > MaxRecallAgents:
		return fmt.Errorf("recall of %d agents: more than %d", len(r.Agents), MaxRecallAgents)
	case r.Role != "" && !inbox.ValidBoxName(r.Role):
		return fmt.Errorf("role %q: not a role name", r.Role)
	case r.Limit < 0 || r.Limit > MaxRecallLimit:
		return fmt.Errorf("limit %d: not within 0..%d", r.Limit, MaxRecallLimit)
	case !r.Since.IsZero() && !r.Until.IsZero() && !r.Since.Before(r.Until):
		return errors.New("since must come before until")
	}
	for _, a := range r.Agents {
		if !inbox.ValidBoxName(a) {
			return fmt.Errorf("agent %q: not an agent name", a)
		}
	}
	switch r.Format {
	case FormatText, FormatJSON:
	case FormatMarkdown:
		if r.Thread == "" {
			return errors.New("a search has no markdown format")
		}
	default:
		return fmt.Errorf("format %q: not text, json or markdown", r.Format)
	}
	return nil
}

// MaxAnswerOutput bounds the output of an answer: the daemon cuts a longer
// one and says so in its Notes.
const MaxAnswerOutput = 64 << 10

// maxAnswerFileLen bounds an answer file: the output, JSON-escaped (at most
// 6 bytes a byte), and the rest.
const maxAnswerFileLen = 6*MaxAnswerOutput + 16<<10

// Answer is the daemon's answer to a recall: what the command prints.
type Answer struct {
	// Output is what the command prints on its standard output.
	Output string `json:"output,omitempty"`
	// Notes are the lines it prints on its standard error (escaped).
	Notes []string `json:"notes,omitempty"`
	// Error, when set, is why there is no answer: the command fails with
	// it.
	Error string `json:"error,omitempty"`
}

// DecodeAnswer parses an answer file strictly (one JSON object with no
// field but Answer's, bounded). Pure.
func DecodeAnswer(data []byte) (Answer, error) {
	if len(data) > maxAnswerFileLen {
		return Answer{}, fmt.Errorf("answer of %d bytes: more than %d", len(data), maxAnswerFileLen)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var a Answer
	if err := dec.Decode(&a); err != nil {
		return Answer{}, fmt.Errorf("not an answer: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Answer{}, errors.New("not an answer: data after the JSON object")
	}
	if len(a.Output) > MaxAnswerOutput {
		return Answer{}, fmt.Errorf("answer output of %d bytes: more than %d", len(a.Output), MaxAnswerOutput)
	}
	return a, nil
}

// answerName is the file of the answer to request id.
func answerName(id string) (string, error) {
	if _, ok := inbox.GeneratedIDTime(id); !ok {
		return "", fmt.Errorf("%q: not a request's id", id)
	}
	return id + ".json", nil
}

// answerKeep is how long an answer nobody took stays in answers/: a
// command that gave up waiting leaves it; the next answer written removes
// it.
const answerKeep = 10 * time.Minute

// WriteAnswer writes a, the answer to agent's request id, into the
// agent's outbox under stateDir as answers/<id>.json (mode 0600),
// atomically, and removes the answers older than answerKeep that nobody
// took. The outbox is the agent's to write, so every step is hostile
// ground: the directories are opened one component at a time without
// following a link (a link or a non-directory where answers/ is refuses
// the answer), the file is created relative to answers/ and never replaces
// an entry (a planted file or link of that name refuses the answer; only
// regular files and links are pruned, as entries, never followed). The
// agent's shim calls it (protocol.RecallAnswer); it blocks for the fsyncs.
func WriteAnswer(stateDir, agent, id string, a Answer, now time.Time) error {
	name, err := answerName(id)
	if err != nil {
		return err
	}
	if !inbox.ValidBoxName(agent) {
		return fmt.Errorf("outbox of %q: not an agent name", agent)
	}
	if len(a.Output) > MaxAnswerOutput {
		return fmt.Errorf("answer output of %d bytes: more than %d", len(a.Output), MaxAnswerOutput)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a); err != nil {
		return fmt.Errorf("encode the answer: %w", err)
	}
	d, err := atomicfile.OpenDirBeneath(stateDir, filepath.Join(DirName, agent, SubAnswers), true)
	if err != nil {
		return fmt.Errorf("open the answers of %s: %w", agent, err)
	}
	defer d.Close()
	pruneAnswers(d, now)
	if err := d.CreateVia(nil, name, filePerm, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	}); err != nil {
		return fmt.Errorf("write the answer to %s: %w", id, err)
	}
	return nil
}

// pruneAnswers removes the entries of d that look like answers (or the
// temporary files of one) and changed before now-answerKeep: regular files
// and links, never followed. Best effort.
func pruneAnswers(d *atomicfile.Dir, now time.Time) {
	names, err := d.Names()
	if err != nil {
		return
	}
	for _, n := range names {
		fi, err := d.Lstat(n)
		if err != nil || fi.IsDir() || !fi.ModTime().Before(now.Add(-answerKeep)) {
			continue
		}
		_ = d.Remove(n)
	}
}

// ErrNoAnswer is matched (errors.Is) by TakeAnswer's error when the answer
// is not there (yet).
var ErrNoAnswer = errors.New("no answer yet")

// TakeAnswer reads and removes the daemon's answer to agent's request id
// from the agent's outbox under stateDir (answers/<id>.json): a regular
// file, never through a link, strictly decoded. An answer not written yet
// gives an error matching ErrNoAnswer. Run inside the agent's sandbox:
// only the outbox may be opened there.
func TakeAnswer(stateDir, agent, id string) (Answer, error) {
	name, err := answerName(id)
	if err != nil {
		return Answer{}, err
	}
	if !inbox.ValidBoxName(agent) {
		return Answer{}, fmt.Errorf("outbox of %q: not an agent name", agent)
	}
	d, err := atomicfile.OpenDir(filepath.Join(Path(stateDir, agent), SubAnswers))
	if errors.Is(err, fs.ErrNotExist) {
		return Answer{}, ErrNoAnswer
	}
	if err != nil {
		return Answer{}, fmt.Errorf("open the answers of %s: %w", agent, err)
	}
	defer d.Close()
	f, err := d.OpenFile(name, 0, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Answer{}, ErrNoAnswer
	}
	if err != nil {
		return Answer{}, fmt.Errorf("read the answer: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAnswerFileLen+1))
	f.Close()
	if err != nil {
		return Answer{}, fmt.Errorf("read the answer: %w", err)
	}
	_ = d.Remove(name)
	return DecodeAnswer(data)
}

// Withdraw removes agent's request id from its outbox under stateDir
// when it is still there (not relayed yet): a recall nobody waits for any
// more. Best effort: a request already relayed is answered and the answer
// pruned later.
func Withdraw(stateDir, agent, id string) {
	if !inbox.ValidBoxName(agent) || strings.ContainsRune(id, '/') {
		return
	}
	d, err := atomicfile.OpenDir(filepath.Join(Path(stateDir, agent), SubNew))
	if err != nil {
		return
	}
	defer d.Close()
	_ = d.Remove(id + ".json")
}
