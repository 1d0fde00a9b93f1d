package orchestrator

import "github.com/battyhq/batty/protocol"

func (a *agent) relayed(e protocol.Outgoing) {}
