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

// answerRecall answers the recall q the agent asked as request id: the
// decision (recallRefusal, the bucket) is made here, the search
// (recall.Answer, up to recallTimeout) on a goroutine of its own, so that
// the agent's shim events never wait for it; the answer goes to the shim
// that relayed the request, which writes it into the outbox it relays
// (here or on the agent's host), where the command waits for it. A recall
// not answered at all, or with no shim to take the answer, is an error,
// for the acknowledgement. Run's goroutine only (it owns the bucket); run
// waits for the searches it started before it returns (recalling).
func (a *agent) answerRecall(id string, q outbox.Recall, now time.Time) error {
	ans, search, err := a.recallDecision(id, now)
	if err != nil {
		return err
	}
	p := a.p
	if p == nil {
		return fmt.Errorf("recall not answered: the shim that relayed it is gone")
	}
	send := func(ans outbox.Answer) {
		if err := p.Send(protocol.RecallAnswer{ID: id, Output: ans.Output, Notes: ans.Notes, Error: ans.Error}); err != nil {
			a.log.Warn("A recall's answer not sent: the shim that relayed it is gone", "request", id, "error", err)
			return
		}
		a.log.Info("Answered a recall of the agent", "request", id, "bytes", len(ans.Output), "refused", ans.Error != "")
	}
	if !search {
		send(ans)
		return nil
	}
	layout, cfg := a.layout, a.cfg
	a.recalling.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), recallTimeout)
		defer cancel()
		send(recall.Answer(ctx, layout, cfg, q, time.Local))
	})
	return nil
}

// recallDecision decides the recall the agent asked as request id at now:
// an error when it is not answered at all (recallRefusal); when the
// agent's bucket has no token for it, the answer saying when to ask again;
// else search, the answer to be searched. Run's goroutine only: it owns
// the bucket.
func (a *agent) recallDecision(id string, now time.Time) (ans outbox.Answer, search bool, err error) {
	if why := recallRefusal(id, now); why != "" {
		return outbox.Answer{}, false, fmt.Errorf("recall not answered: %s", why)
	}
	if wait := a.recalls.Take(now); wait > 0 {
		ans.Error = fmt.Sprintf("too many searches of %s: try again in %s", a.def.Name, time.Duration(math.Ceil(wait.Seconds()))*time.Second)
		return ans, false, nil
	}
	return outbox.Answer{}, true, nil
}
