package eventlog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// Alert kinds: what on_alert is told about (BATTY_ALERT_KIND).
const (
	AlertQuota         = "quota"            // an account ran out of quota; dispatch paused
	AlertAuth          = "auth"             // codex needs a login; dispatch paused
	AlertNetwork       = "network"          // the API is unreachable; turns wait for it
	AlertContext       = "context"          // an agent's context window ran out
	AlertMessageFailed = "message_failed"   // a message ended without a reply
	AlertAgentFailed   = "agent_failed"     // crash loop: the agent waits for its cool-down
	AlertAgentWedged   = "agent_wedged"     // a shim stopped answering and was killed
	AlertAgentParked   = "agent_parked"     // an agent's codex cannot run; its messages wait
	AlertReply         = "reply"            // an agent replied to the human (alert_on_reply)
	AlertSchedule      = "schedule_failed"  // a schedule stopped as failed (a failed or refused run)
	AlertRecordFailed  = "record_failed"    // an outcome could not be written (a full disk); the agent waits
	AlertLandingFailed = "landing_failed"   // a branch did not land: a conflict or a red verify; base unchanged
	AlertAccount       = "account_switched" // agents moved to another account (a usage limit, or back after a reset)
	AlertQuotaWarning  = "quota_warning"    // an account's rate-limit use crossed quota.warn_pct
	AlertHost          = "host_unreachable" // a host of the team cannot be reached; its agents wait
	AlertReviewWaiting = "review_waiting"   // a landing passed verify and waits for the human's review
	AlertBudgetWarning = "budget_warning"   // a token budget's use crossed its warn_at
	AlertBudgetReached = "budget_reached"   // a token budget was reached; its agents wait for the next window
	AlertMemory        = "memory_low"       // free memory here is below limits.min_free_memory; no new turn starts
	AlertAppServer     = "app_server_died"  // a shared app-server died; it was started again and its agents' turns retried
)

// maxAlertText bounds an alert's message (in the environment and the
// JSON): a long reply or error is cut, marked with "…".
const maxAlertText = 2000

// Alert is what on_alert receives as JSON on its stdin.
type Alert struct {
	Kind      string    `json:"kind"`
	Agent     string    `json:"agent,omitempty"`
	Message   string    `json:"message"`
	MessageID string    `json:"message_id,omitempty"`
	Event     string    `json:"event"`
	Time      time.Time `json:"time"`
	Team      string    `json:"team"`
	Data      Payload   `json:"data,omitempty"`
	// Detail is the event's own detail, for a channel that words the
	// alert itself (the cockpit); not in the JSON.
	Detail string `json:"-"`
}

// UnmarshalJSON reads an alert's JSON, its data as the payload of its
// event's type (as Decode reads an event's).
func (a *Alert) UnmarshalJSON(b []byte) error {
	type plain Alert
	var in struct {
		plain
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*a = Alert(in.plain)
	a.Data = decodeData(a.Event, in.Data)
	return nil
}

// AlertFor says whether event e is an alert and, if so, which. It is a
// pure function: the one place that decides which events reach on_alert
// (and what else shows alerts, reading the event log). Replies
// (AlertReply) are alerts here; whether on_alert hears of them is up to
// alert_on_reply. The alert's Team is left empty.
func AlertFor(e Event) (Alert, bool) {
	a := Alert{Agent: e.Agent, MessageID: e.Message, Event: e.Type, Time: e.Time, Data: e.Data, Message: e.Detail, Detail: e.Detail}
	who := e.Agent
	if who == "" {
		who = "the team"
	}
	switch e.Type {
	case EvQuotaBlocked:
		if q, _ := e.Data.(QuotaBlocked); q.Switched {
			// Every agent of the account went on on another: the
			// account_switched alert says so.
			return Alert{}, false
		}
		a.Kind, a.Message = AlertQuota, "quota exhausted (reported by "+who+"): "+e.Detail
	case EvAccountSwitched:
		a.Kind, a.Message = AlertAccount, e.Detail
	case EvQuotaWarning:
		a.Kind, a.Message = AlertQuotaWarning, e.Detail
	case EvBudgetWarning:
		a.Kind, a.Message = AlertBudgetWarning, e.Detail
	case EvBudgetReached:
		a.Kind, a.Message = AlertBudgetReached, e.Detail
	case EvAuthRequired:
		a.Kind, a.Message = AlertAuth, "codex needs a login (reported by "+who+"): "+e.Detail
	case EvMemoryLow:
		a.Kind, a.Message = AlertMemory, "free memory is low, no new turn starts: "+e.Detail
	case EvAppServerDied:
		a.Kind, a.Message = AlertAppServer, "a shared codex app-server died and was started again; the turns it cut off are retried: "+e.Detail
	case EvNetworkWaiting:
		a.Kind, a.Message = AlertNetwork, "the API is unreachable (reported by "+who+"): "+e.Detail
	case EvContextExhaust:
		a.Kind, a.Message = AlertContext, who+"'s context window is full: "+e.Detail
	case EvMessageFailed:
		a.Kind, a.Message = AlertMessageFailed, fmt.Sprintf("message %s to %s failed: %s", e.Message, who, e.Detail)
	case EvTurnFinished:
		t, _ := e.Data.(TurnFinished)
		if t.Requeued || t.Status == "completed" || t.Alerted || t.Cancelled {
			// Not final, no failure, told by its own alert event
			// (message_failed, context_exhausted), or ended by the user
			// (batty cancel --interrupt: the cancelled event says so).
			return Alert{}, false
		}
		what := t.Status
		if t.Failure != "" {
			what += " (" + t.Failure + ")"
		}
		a.Kind, a.Message = AlertMessageFailed, fmt.Sprintf("message %s to %s %s: %s", e.Message, who, what, e.Detail)
	case EvRejected:
		a.Kind, a.Message = AlertMessageFailed, fmt.Sprintf("message %s to %s rejected: %s", e.Message, who, e.Detail)
	case EvAgentFailed:
		a.Kind, a.Message = AlertAgentFailed, who+" failed: "+e.Detail
	case EvWedged:
		a.Kind, a.Message = AlertAgentWedged, who+"'s shim stopped answering and was killed: "+e.Detail
	case EvAgentParked:
		a.Kind, a.Message = AlertAgentParked, who+" is parked: "+e.Detail
	case EvHostUnreachable:
		a.Kind, a.Message = AlertHost, fmt.Sprintf("host %s is unreachable; its agents wait: %s", hostOf(e), e.Detail)
	case EvScheduleFailed:
		a.Kind, a.Message = AlertSchedule, fmt.Sprintf("schedule %s failed: %s", scheduleOf(e), e.Detail)
	case EvRecordFailed:
		a.Kind, a.Message = AlertRecordFailed, who+" cannot record an outcome: "+e.Detail
	case EvLandingFailed:
		a.Kind, a.Message = AlertLandingFailed, fmt.Sprintf("%s's branch did not land: %s", who, e.Detail)
	case EvReviewWaiting:
		a.Kind, a.Message = AlertReviewWaiting, fmt.Sprintf("%s's branch passed verify and waits for your review: batty review, then batty approve %s or batty reject %s --reason ...", who, e.Agent, e.Agent)
	case EvReply:
		r, _ := e.Data.(Reply)
		if r.To != "" && r.To != team.Human {
			// A reply between agents: the feed shows it.
			return Alert{}, false
		}
		if r.Outcome != "" && r.Outcome != "completed" {
			// Word of a message that ended without an answer: the
			// failure's own alert (message_failed) tells it.
			return Alert{}, false
		}
		a.Kind, a.Message = AlertReply, who+" replied to you"
		if r.Preview != "" {
			a.Message += ": " + r.Preview
		}
	default:
		return Alert{}, false
	}
	a.Message = textclip.Bytes(strings.TrimSuffix(a.Message, ": "), maxAlertText, textclip.Ellipsis)
	return a, true
}

// ReplyPreview is the start of a reply on one line, for the reply alert
// (EvReply's "preview").
func ReplyPreview(reply string) string {
	return textclip.Bytes(strings.Join(strings.Fields(reply), " "), 200, textclip.Ellipsis)
}

// hostOf is the host an event of a host names ("" when it names none).
func hostOf(e Event) string {
	h, _ := e.Data.(Host)
	return h.Host
}

// scheduleOf is the schedule an event of a schedule names ("" when it
// names none).
func scheduleOf(e Event) string {
	s, _ := e.Data.(Schedule)
	return s.Schedule
}
