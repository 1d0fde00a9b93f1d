package orchestrator

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/recall"
)

// recallTimeout bounds the search behind one answer: the agent's goroutine
// waits for it.
const recallTimeout = 10 * time.Second

// recallRefusal decides whether a recall asked as request id at now is
// answered: not when it is older than outbox.RecallWait (nobody waits for
// the answer any more). It returns why not, "" when it is answered. Pure.
func recallRefusal(id string, now time.Time) string {
	at, ok := inbox.GeneratedIDTime(id)
	if !ok {
		return fmt.Sprintf("%q: not a request's id", id)
	}
	if now.Sub(at) > outbox.RecallWait {
		return fmt.Sprintf("asked at %s, more than %s ago: nobody waits for the answer", at.Format(time.RFC3339), outbox.RecallWait)
	}
	return ""
}

// answerRecall answers the recall q the agent asked as request id
// (recallAnswer): the answer goes to the agent's shim, which writes it into
// the outbox it relays (here or on the agent's host), where the command
// waits for it. A recall not answered at all, or with no shim to take the
// answer, is an error, for the acknowledgement. Run's goroutine only.
func (a *agent) answerRecall(id string, q outbox.Recall, now time.Time) error {
	ans, err := a.recallAnswer(id, q, now)
	if err != nil {
		return err
	}
	if a.p == nil {
		return fmt.Errorf("recall not answered: the shim that relayed it is gone")
	}
	if err := a.p.Send(protocol.RecallAnswer{ID: id, Output: ans.Output, Notes: ans.Notes, Error: ans.Error}); err != nil {
		return fmt.Errorf("recall not answered: %w", err)
	}
	a.log.Info("Answered a recall of the agent", "request", id, "bytes", len(ans.Output), "refused", ans.Error != "")
	return nil
}

// recallAnswer is the answer to the recall q the agent asked as request
// id at now: a search or a thread of its own team, redacted, bounded
// (recall.Answer), or, when the agent's bucket has no token for it, when
// to ask again. A recall not answered at all (recallRefusal) is an error.
// Run's goroutine only: it owns the bucket.
func (a *agent) recallAnswer(id string, q outbox.Recall, now time.Time) (outbox.Answer, error) {
	if why := recallRefusal(id, now); why != "" {
		return outbox.Answer{}, fmt.Errorf("recall not answered: %s", why)
	}
	var ans outbox.Answer
	if wait := a.recalls.Take(now); wait > 0 {
		ans.Error = fmt.Sprintf("too many searches of %s: try again in %s", a.def.Name, time.Duration(math.Ceil(wait.Seconds()))*time.Second)
		return ans, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), recallTimeout)
	defer cancel()
	return recall.Answer(ctx, a.layout, a.cfg, q, time.Local), nil
}
