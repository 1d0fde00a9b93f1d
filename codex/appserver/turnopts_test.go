package appserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRunTurnWithSendsTheOutputSchema: a turn's output schema goes in
// turn/start as outputSchema, as given; without one there is none.
func TestRunTurnWithSendsTheOutputSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	for _, o := range []TurnOptions{{OutputSchema: schema}, {}} {
		c, p := newPeer(t, Options{})
		done := make(chan error, 1)
		go func() {
			_, err := c.RunTurnWith(ctxT(t), "T1", "hello", o, nil)
			done <- err
		}()
		r := p.expect(MethodTurnStart)
		var params struct {
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if err := json.Unmarshal(r.Params, &params); err != nil {
			t.Fatal(err)
		}
		if string(params.OutputSchema) != string(o.OutputSchema) {
			t.Errorf("outputSchema %s, want %s", params.OutputSchema, o.OutputSchema)
		}
		p.reply(r, `{"turn":{"id":"U1","items":[],"status":"inProgress","error":null}}`)
		for _, l := range turnLines("T1", "U1")[1:] {
			p.send(l)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestEphemeralThreads: an ephemeral thread says so in thread/start; a
// resume never does.
func TestEphemeralThreads(t *testing.T) {
	c, p := newPeer(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := c.StartThread(ctxT(t), ThreadOptions{Cwd: "/w", Ephemeral: true})
		done <- err
	}()
	r := p.expect(MethodThreadStart)
	if !strings.Contains(string(r.Params), `"ephemeral":true`) {
		t.Errorf("thread/start params %s: not ephemeral", r.Params)
	}
	p.reply(r, `{"thread":{"id":"T1","turns":[]},"model":"m","modelProvider":"mock","cwd":"/w"}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := c.ResumeThread(ctxT(t), "T1", ThreadOptions{Cwd: "/w", Ephemeral: true})
		done <- err
	}()
	r = p.expect(MethodThreadResume)
	if strings.Contains(string(r.Params), `ephemeral`) {
		t.Errorf("thread/resume params %s: ephemeral", r.Params)
	}
	p.reply(r, `{"thread":{"id":"T1","turns":[]},"model":"m","modelProvider":"mock","cwd":"/w"}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := (ThreadOptions{}).params()["ephemeral"]; ok {
		t.Error("a thread is ephemeral by default")
	}
}
