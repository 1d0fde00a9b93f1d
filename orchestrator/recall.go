package orchestrator

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/recall"
	"github.com/battyhq/batty/team"
)

// recallTimeout bounds the search behind one answer: the agent's goroutine
// waits for it.
const recallTimeout = 10 * time.Second

// recallRefusal decides whether a recall asked as request id at now (by an
// agent on host, "" for this machine) is answered: not for an agent on
// another host (its outbox is there), not when it is older than
// outbox.RecallWait (nobody waits for the answer any more). It returns
// why not, "" when it is answered. Pure.
func recallRefusal(host, id string, now time.Time) string {
	if host != "" && host != team.LocalHost {
		return "batty search and batty threads show are not available for agents on hosts yet"
	}
	at, ok := inbox.GeneratedIDTime(id)
	if !ok {
		return fmt.Sprintf("%q: not a request's id", id)
	}
	if now.Sub(at) > outbox.RecallWait {
		return fmt.Sprintf("asked at %s, more than %s ago: nobody waits for the answer", at.Format(time.RFC3339), outbox.RecallWait)
	}
	return ""
}

// answerRecall answers the recall q the agent asked as request id (a
// search or a thread of its own team, redacted, bounded: recall.Answer)
// into its outbox (outbox.WriteAnswer), where its command waits for it; a
// recall the agent's bucket has no token for is answered with when to ask
// again. A recall not answered at all (recallRefusal) is an error, for the
// acknowledgement. Run's goroutine only: it owns the bucket.
func (a *agent) answerRecall(id string, q outbox.Recall, now time.Time) error {
	if why := recallRefusal(a.def.Host, id, now); why != "" {
		return fmt.Errorf("recall not answered: %s", why)
	}
	var ans outbox.Answer
	if wait := a.recalls.Take(now); wait > 0 {
		ans.Error = fmt.Sprintf("too many searches of %s: try again in %s", a.def.Name, time.Duration(math.Ceil(wait.Seconds()))*time.Second)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), recallTimeout)
		ans = recall.Answer(ctx, a.layout, a.cfg, q, time.Local)
		cancel()
	}
	if err := outbox.WriteAnswer(a.layout.Dir, a.def.Name, id, ans, now); err != nil {
		return err
	}
	a.log.Info("Answered a recall of the agent", "request", id, "bytes", len(ans.Output), "refused", ans.Error != "")
	return nil
}
