// Package outbox is the one thing an agent writes for the team: requests,
// each a small JSON file in a directory of the agent's own
// (<state dir>/outboxes/<agent>/new/<id>.json), the only directory of
// batty's that the agent's sandbox may write. A request asks for a message
// to be sent or a branch to be landed; it is never a record: it carries no
// sender, attempt, outcome or reply target. The sender is stamped by who
// reads the directory (the agent's shim, which relays every request to the
// daemon as protocol.Outgoing): a file in outboxes/<agent> is from <agent>,
// whatever it says, because no other agent's sandbox can write there.
//
// Everything read from an outbox is hostile input: Decode is strict
// (unknown fields, oversized files and ids that are not of the generated
// form are refused) and Read never follows a link nor opens anything but a
// regular file.
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

// DirName is the directory under a team's state directory that holds one
// outbox per agent.
const DirName = "outboxes"

// The subdirectories of an outbox: requests are written into tmp/ and
// renamed into new/, so that a reader never sees a partial file.
const (
	SubNew = "new"
	SubTmp = "tmp"
)

// MaxFileLen bounds a request file: the longest body, its JSON escaping
// and the rest of the request.
const MaxFileLen = 2*inbox.MaxBodyLen + 4096

// filePerm is the mode of a request file.
const filePerm = 0o600

// Path is the outbox of agent in the state directory stateDir.
func Path(stateDir, agent string) string { return filepath.Join(stateDir, DirName, agent) }

// Request is what an agent asks for: exactly one of a message (To and
// Body), a landing (Land) or a recall (Recall: a search of the team's
// threads or one thread's conversation, which the daemon answers into the
// outbox's answers/, see WriteAnswer).
type Request struct {
	// To is the recipient as the agent names it: an agent, a role,
	// "@role" or "human".
	To string `json:"to,omitempty"`
	// Body is the message's text.
	Body string `json:"body,omitempty"`
	// Land names the worktree agent whose branch is to be landed.
	Land string `json:"land,omitempty"`
	// Recall asks for a search or a thread's conversation.
	Recall *Recall `json:"recall,omitempty"`
}

// Validate reports whether r asks for exactly one thing, within bounds.
func (r Request) Validate() error {
	switch {
	case r.Recall != nil && (r.Land != "" || r.To != "" || r.Body != ""):
		return errors.New("a request asks for a message (to, body), a landing (land) or a recall, one of them")
	case r.Recall != nil:
		return r.Recall.Validate()
	case r.Land != "" && (r.To != "" || r.Body != ""):
		return errors.New("a request asks for a message (to, body) or a landing (land), not both")
	case r.Land != "":
		if !inbox.ValidBoxName(r.Land) {
			return fmt.Errorf("land %q: not an agent name", r.Land)
		}
		return nil
	case r.To == "":
		return errors.New("a message request needs a recipient (to)")
	case !inbox.ValidBoxName(strings.TrimPrefix(r.To, "@")):
		return fmt.Errorf("to %q: not a recipient name", r.To)
	case strings.TrimSpace(r.Body) == "":
		return errors.New("a message request needs a body")
	case len(r.Body) > inbox.MaxBodyLen:
		return fmt.Errorf("body of %d bytes: more than %d", len(r.Body), inbox.MaxBodyLen)
	}
	return nil
}

// MaxAhead is how far in the future a request's id may lie: a clock
// difference between the agent's host and this one, no more. An id from
// later is refused: it would sort after messages not written yet.
const MaxAhead = 5 * time.Minute

// ValidName reports whether name is of a request file's form:
// "<time>-<8 hex digits>.json", as Write makes it. Pure.
func ValidName(name string) bool {
	id, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return false
	}
	_, ok = inbox.GeneratedIDTime(id)
	return ok
}

// ID returns the message id that a request file's name carries, checking
// that it is of the generated form and not from after now+MaxAhead. It is
// a pure function.
func ID(name string, now time.Time) (string, error) {
	id, _ := strings.CutSuffix(name, ".json")
	t, ok := inbox.GeneratedIDTime(id)
	if !ok || !strings.HasSuffix(name, ".json") {
		return "", fmt.Errorf("file %q: not a request's name (<time>-<8 hex digits>.json, as batty send makes it)", name)
	}
	if t.After(now.Add(MaxAhead)) {
		return "", fmt.Errorf("file %q: its time %s is in the future", name, t.Format(time.RFC3339))
	}
	return id, nil
}

// Decode parses a request file strictly: one JSON object with no field
// but Request's, at most MaxFileLen bytes, valid. It is a pure function.
func Decode(data []byte) (Request, error) {
	if len(data) > MaxFileLen {
		return Request{}, fmt.Errorf("request of %d bytes: more than %d", len(data), MaxFileLen)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Request
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("not a request: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Request{}, errors.New("not a request: data after the JSON object")
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Encode returns the file of a valid request.
func Encode(r Request) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// Make makes the outbox of agent under the state directory stateDir (the
// outbox, its tmp/ and new/; mode 0700), never through a link below
// stateDir, which must exist. Idempotent. The agent's shim makes it before
// the agent starts: inside the agent's sandbox only the outbox is
// writable.
func Make(stateDir, agent string) error {
	o, err := open(stateDir, agent)
	if err == nil {
		o.close()
	}
	return err
}

// outboxDirs are an outbox's tmp/ and new/, open.
type outboxDirs struct{ tmp, new *atomicfile.Dir }

func (o outboxDirs) close() {
	o.tmp.Close()
	o.new.Close()
}

// open opens (making them where missing) the tmp/ and new/ of agent's
// outbox under stateDir, never through a link below stateDir. The caller
// closes them.
func open(stateDir, agent string) (outboxDirs, error) {
	if !inbox.ValidBoxName(agent) {
		return outboxDirs{}, fmt.Errorf("outbox of %q: not an agent name", agent)
	}
	dir := filepath.Join(DirName, agent)
	openSub := func(sub string) (*atomicfile.Dir, error) {
		d, err := atomicfile.OpenDirBeneath(stateDir, filepath.Join(dir, sub), true)
		if errors.Is(err, fs.ErrPermission) {
			// Inside the agent's permission profile the state directory
			// can be passed through, not opened: the outbox, made by the
			// shim, is reached by its path, its last component not
			// followed if a link. The directories above it are not the
			// agent's to replace.
			return atomicfile.OpenDir(filepath.Join(Path(stateDir, agent), sub))
		}
		return d, err
	}
	tmp, err := openSub(SubTmp)
	if err != nil {
		return outboxDirs{}, fmt.Errorf("open the outbox of %s: %w", agent, err)
	}
	nd, err := openSub(SubNew)
	if err != nil {
		tmp.Close()
		return outboxDirs{}, fmt.Errorf("open the outbox of %s: %w", agent, err)
	}
	return outboxDirs{tmp: tmp, new: nd}, nil
}

// Write stores r in the outbox of agent under the state directory
// stateDir (Path) as new/<id>.json with a fresh id (inbox.NewID), durably,
// via tmp/, never through a link below stateDir, and returns the id: the
// id the delivered message will have. The directories of the outbox are
// made (0700) where missing (Make). It blocks for the fsyncs.
func Write(stateDir, agent string, r Request) (string, error) {
	data, err := Encode(r)
	if err != nil {
		return "", err
	}
	o, err := open(stateDir, agent)
	if err != nil {
		return "", err
	}
	defer o.close()
	id, _ := inbox.NewID()
	if err := o.new.CreateVia(o.tmp, id+".json", filePerm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return "", fmt.Errorf("write the request into %s: %w", Path(stateDir, agent), err)
	}
	return id, nil
}
