package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/team"
)

// deliverError words a failed delivery to to. A full backlog names the
// recipient's box, its backlog and the limit, and says how to go on.
func deliverError(cfg *team.Config, to string, err error) error {
	var full *inbox.FullError
	if !errors.As(err, &full) {
		return fmt.Errorf("send to %s: %w", to, err)
	}
	where := "the inbox of " + full.Box
	if strings.HasPrefix(full.Box, "@") {
		where = "the queue of role " + strings.TrimPrefix(full.Box, "@") + " (" + full.Box + ")"
	}
	return fmt.Errorf("send to %s refused, nothing queued: %s holds %d messages (its backlog: waiting and in flight), its limit (backlog_limit: %d in %s); "+
		"wait until its agents work them off (`batty status` shows the backlog) or raise backlog_limit",
		to, where, full.Backlog, full.Limit, cfg.Path)
}
