package control

// AgentFinishing is the state status shows for an agent whose turn has
// ended and whose outcome is still being recorded (its edits committed,
// its reply and outcome written): its message is still InFlight, but it
// runs nothing and holds no slot under the team's cap on turns at once
// (the slot is given back when the turn ends).
const AgentFinishing = "finishing"

// agentWorking is the shim's state while its turn runs
// (protocol.StateWorking).
const agentWorking = "working"

// TurnRuns reports whether a's turn runs: a message in flight, or the
// shim working, unless the turn has ended and only its outcome is being
// recorded (AgentFinishing). Status's count of turns running (the TOTAL
// row's "working") counts these, so it never shows more than the team's
// cap lets run. It is a pure function.
func (a AgentStatus) TurnRuns() bool {
	return (a.InFlight != nil || a.State == agentWorking) && a.State != AgentFinishing
}
