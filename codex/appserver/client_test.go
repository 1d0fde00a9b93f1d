package appserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is a fake app-server on the far end of two pipes: it reads the
// client's requests and lets the test answer them.
type peer struct {
	t   *testing.T
	in  *bufio.Scanner // what the client wrote
	out *io.PipeWriter // what the client reads
}

// newPeer returns a client connected to a fake peer. Cleanup closes both.
func newPeer(t *testing.T, opts Options) (*Client, *peer) {
	t.Helper()
	cr, pw := io.Pipe() // peer -> client
	pr, cw := io.Pipe() // client -> peer
	c := newClient(cr, cw, opts)
	p := &peer{t: t, in: bufio.NewScanner(pr), out: pw}
	p.in.Buffer(nil, 1<<20)
	t.Cleanup(func() {
		_ = pw.Close()
		_ = pr.Close()
		_ = c.Close()
	})
	return c, p
}

// request is a message the client sent.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
	Trace  *struct {
		TraceParent string `json:"traceparent"`
	} `json:"trace"`
}

// recv reads the client's next message.
func (p *peer) recv() request {
	p.t.Helper()
	if !p.in.Scan() {
		p.t.Fatalf("peer: client closed: %v", p.in.Err())
	}
	var r request
	if err := json.Unmarshal(p.in.Bytes(), &r); err != nil {
		p.t.Fatalf("peer: bad line %q: %v", p.in.Text(), err)
	}
	return r
}

// expect reads the next message and checks its method.
func (p *peer) expect(method string) request {
	p.t.Helper()
	r := p.recv()
	if r.Method != method {
		p.t.Fatalf("peer: got method %q, want %q", r.Method, method)
	}
	return r
}

// send writes one line to the client.
func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.out, line+"\n"); err != nil {
		p.t.Fatalf("peer: write: %v", err)
	}
}

// reply answers r with result.
func (p *peer) reply(r request, result string) {
	p.send(`{"id":` + string(r.ID) + `,"result":` + result + `}`)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestInitializeSendsRequestThenInitialized(t *testing.T) {
	c, p := newPeer(t, Options{ClientName: "batty", ClientVersion: "1.2"})
	done := make(chan error, 1)
	var res InitializeResult
	go func() {
		var err error
		res, err = c.Initialize(ctxT(t))
		done <- err
	}()
	r := p.expect(MethodInitialize)
	var params struct {
		ClientInfo struct{ Name, Version string } `json:"clientInfo"`
	}
	if err := json.Unmarshal(r.Params, &params); err != nil || params.ClientInfo.Name != "batty" || params.ClientInfo.Version != "1.2" {
		t.Fatalf("initialize params %s (%v)", r.Params, err)
	}
	p.reply(r, `{"userAgent":"ua","codexHome":"/h","platformFamily":"unix","platformOs":"linux"}`)
	if n := p.recv(); n.Method != MethodInitialized || n.ID != nil {
		t.Fatalf("after initialize: %+v, want the initialized notification", n)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.CodexHome != "/h" || res.PlatformOS != "linux" {
		t.Fatalf("result %+v", res)
	}
}

func TestStartThreadParamsAndResult(t *testing.T) {
	c, p := newPeer(t, Options{})
	done := make(chan error, 1)
	var th Thread
	go func() {
		var err error
		th, err = c.StartThread(ctxT(t), ThreadOptions{Cwd: "/w", Model: "m", Sandbox: "danger-full-access",
			ApprovalPolicy: "never", DeveloperInstructions: "be brief"})
		done <- err
	}()
	r := p.expect(MethodThreadStart)
	var got map[string]string
	if err := json.Unmarshal(r.Params, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cwd": "/w", "model": "m", "sandbox": "danger-full-access",
		"approvalPolicy": "never", "developerInstructions": "be brief"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("param %s = %q, want %q", k, got[k], v)
		}
	}
	p.reply(r, `{"thread":{"id":"T1","path":"/h/r.jsonl","turns":[]},"model":"m","modelProvider":"mock","cwd":"/w"}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if th.ID != "T1" || th.ModelProvider != "mock" || th.Path != "/h/r.jsonl" {
		t.Fatalf("thread %+v", th)
	}
}

func TestResumeThreadRefusedIsRPCError(t *testing.T) {
	c, p := newPeer(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := c.ResumeThread(ctxT(t), "nope", ThreadOptions{})
		done <- err
	}()
	r := p.expect(MethodThreadResume)
	if !strings.Contains(string(r.Params), `"threadId":"nope"`) || !strings.Contains(string(r.Params), `"excludeTurns":true`) {
		t.Fatalf("resume params %s", r.Params)
	}
	p.send(`{"error":{"code":-32600,"message":"invalid session id"},"id":` + string(r.ID) + `}`)
	err := <-done
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32600 {
		t.Fatalf("err %v, want an RPCError -32600", err)
	}
}

// turnLines are a completed turn's notifications as codex 0.169.0 writes
// them (shortened), with a straggler of another turn and thread mixed in.
func turnLines(thread, turn string) []string {
	return []string{
		`{"method":"thread/status/changed","params":{"threadId":"` + thread + `","status":{"type":"active"}}}`,
		`{"method":"turn/started","params":{"threadId":"` + thread + `","turn":{"id":"` + turn + `","items":[],"status":"inProgress","error":null}}}`,
		`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"x","text":"OTHER THREAD"},"threadId":"other","turnId":"zz"}}`,
		`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"y","text":"OLD TURN"},"threadId":"` + thread + `","turnId":"old"}}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"` + thread + `","turnId":"` + turn + `","itemId":"m","delta":"hi"}}`,
		`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m","text":"hi there"},"threadId":"` + thread + `","turnId":"` + turn + `"}}`,
		`{"method":"thread/tokenUsage/updated","params":{"threadId":"` + thread + `","turnId":"` + turn + `","tokenUsage":{"total":{"totalTokens":12,"inputTokens":10,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":2,"reasoningOutputTokens":0},"last":{"totalTokens":12,"inputTokens":10,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":2,"reasoningOutputTokens":0},"modelContextWindow":1000}}}`,
		`{"method":"account/rateLimits/updated","params":{"rateLimits":{"limitId":"codex","primary":{"usedPercent":43,"windowDurationMins":300,"resetsAt":1900000000},"secondary":null,"planType":null}}}`,
		`{"method":"error","params":{"error":{"message":"retrying","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":502}}},"willRetry":true,"threadId":"` + thread + `","turnId":"` + turn + `"}}`,
		`{"method":"turn/completed","params":{"threadId":"` + thread + `","turn":{"id":"` + turn + `","items":[],"status":"completed","error":null}}}`,
	}
}

func TestRunTurnReadsNotificationsUntilCompleted(t *testing.T) {
	var snaps []RateLimits
	var snapMu sync.Mutex
	c, p := newPeer(t, Options{OnRateLimits: func(r RateLimits) {
		snapMu.Lock()
		snaps = append(snaps, r)
		snapMu.Unlock()
	}})
	type out struct {
		res TurnResult
		err error
	}
	done := make(chan out, 1)
	var methods []string
	go func() {
		res, err := c.RunTurn(ctxT(t), "T1", "hello", func(n Notification) { methods = append(methods, n.Method) })
		done <- out{res, err}
	}()
	r := p.expect(MethodTurnStart)
	var params struct {
		ThreadID string `json:"threadId"`
		Input    []struct{ Type, Text string }
	}
	if err := json.Unmarshal(r.Params, &params); err != nil || params.ThreadID != "T1" || len(params.Input) != 1 || params.Input[0].Text != "hello" {
		t.Fatalf("turn/start params %s (%v)", r.Params, err)
	}
	// A notification may come before the response: it must not be lost.
	lines := turnLines("T1", "U1")
	p.send(lines[0])
	p.reply(r, `{"turn":{"id":"U1","items":[],"status":"inProgress","error":null}}`)
	for _, l := range lines[1:] {
		p.send(l)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	res := o.res
	if res.TurnID != "U1" || res.Status != StatusCompleted || res.Err() != nil {
		t.Fatalf("result %+v", res)
	}
	if res.FinalMessage != "hi there" {
		t.Errorf("final message %q (a message of another thread or turn leaked?)", res.FinalMessage)
	}
	if res.Usage == nil || res.Usage.Total.InputTokens != 10 || res.Usage.ModelContextWindow != 1000 {
		t.Errorf("usage %+v", res.Usage)
	}
	if res.RateLimits == nil || res.RateLimits.Primary == nil || res.RateLimits.Primary.UsedPercent != 43 ||
		res.RateLimits.Primary.Reset().Unix() != 1900000000 || res.RateLimits.Secondary != nil {
		t.Errorf("rate limits %+v", res.RateLimits)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Code != "responseStreamDisconnected" || res.Warnings[0].HTTPStatus != 502 {
		t.Errorf("warnings %+v", res.Warnings)
	}
	want := []string{"thread/status/changed", NotifyTurnStarted, NotifyAgentMessageDelta, NotifyItemCompleted,
		NotifyTokenUsage, NotifyRateLimits, NotifyError, NotifyTurnCompleted}
	if strings.Join(methods, ",") != strings.Join(want, ",") {
		t.Errorf("callback saw %v, want %v", methods, want)
	}
	snapMu.Lock()
	defer snapMu.Unlock()
	if len(snaps) != 1 || snaps[0].LimitID != "codex" {
		t.Errorf("OnRateLimits saw %+v", snaps)
	}
}

func TestRunTurnFailedCarriesTypedError(t *testing.T) {
	res := turnEndedBy(t, `{"method":"turn/completed","params":{"threadId":"T1","turn":{"id":"U2","items":[],"status":"failed","error":{"message":"You’ve hit your usage limit.","codexErrorInfo":"usageLimitExceeded","additionalDetails":null}}}}`)
	var te *TurnError
	if res.Status != StatusFailed || !errors.As(res.Err(), &te) || te.Code != "usageLimitExceeded" {
		t.Fatalf("result %+v err %v", res, res.Err())
	}
}

func TestInterruptStopsRunningTurn(t *testing.T) {
	c, p := newPeer(t, Options{})
	ctx := ctxT(t)
	if err := c.Interrupt(ctx, "T1"); err == nil {
		t.Fatal("Interrupt with no turn running: no error")
	}
	done := make(chan TurnResult, 1)
	started := make(chan struct{})
	go func() {
		// Notifications reach the callback only once RunTurn knows the
		// turn's id, so Interrupt may be called from turn/started on.
		res, err := c.RunTurn(ctx, "T1", "slow", func(n Notification) {
			if n.Method == NotifyTurnStarted {
				close(started)
			}
		})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	r := p.expect(MethodTurnStart)
	p.reply(r, `{"turn":{"id":"U3","items":[],"status":"inProgress","error":null}}`)
	p.send(`{"method":"turn/started","params":{"threadId":"T1","turn":{"id":"U3","items":[],"status":"inProgress","error":null}}}`)
	ierr := make(chan error, 1)
	go func() {
		<-started
		ierr <- c.Interrupt(ctx, "T1")
	}()
	ir := p.expect(MethodTurnInterrupt)
	if string(ir.Params) != `{"threadId":"T1","turnId":"U3"}` {
		t.Fatalf("interrupt params %s", ir.Params)
	}
	p.reply(ir, `{}`)
	if err := <-ierr; err != nil {
		t.Fatal(err)
	}
	p.send(`{"method":"turn/completed","params":{"threadId":"T1","turn":{"id":"U3","items":[],"status":"interrupted","error":null}}}`)
	if res := <-done; res.Status != StatusInterrupted || res.Err() == nil {
		t.Fatalf("result %+v", res)
	}
}

func TestRunTurnContextEndInterrupts(t *testing.T) {
	c, p := newPeer(t, Options{})
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.RunTurn(ctx, "T1", "slow", func(n Notification) {
			if n.Method == NotifyTurnStarted {
				cancel()
			}
		})
		done <- err
	}()
	r := p.expect(MethodTurnStart)
	p.reply(r, `{"turn":{"id":"U4","items":[],"status":"inProgress","error":null}}`)
	p.send(`{"method":"turn/started","params":{"threadId":"T1","turn":{"id":"U4","items":[],"status":"inProgress","error":null}}}`)
	ir := p.expect(MethodTurnInterrupt)
	p.reply(ir, `{}`)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestRunTurnContextEndDuringStartStillInterrupts(t *testing.T) {
	c, p := newPeer(t, Options{})
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.RunTurn(ctx, "T1", "x", nil)
		done <- err
	}()
	r := p.expect(MethodTurnStart)
	cancel() // before the server has answered turn/start
	p.reply(r, `{"turn":{"id":"U6","items":[],"status":"inProgress","error":null}}`)
	ir := p.expect(MethodTurnInterrupt)
	if string(ir.Params) != `{"threadId":"T1","turnId":"U6"}` {
		t.Fatalf("interrupt params %s", ir.Params)
	}
	p.reply(ir, `{}`)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestServerRequestIsRefused(t *testing.T) {
	_, p := newPeer(t, Options{})
	p.send(`{"id":"s1","method":"item/commandExecution/requestApproval","params":{}}`)
	r := p.recv()
	if string(r.ID) != `"s1"` || r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("answer to a server request: %+v", r)
	}
}

func TestPeerGoneFailsPendingAndLaterCalls(t *testing.T) {
	c, p := newPeer(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := c.StartThread(ctxT(t), ThreadOptions{})
		done <- err
	}()
	p.expect(MethodThreadStart)
	_ = p.out.Close() // the server's stdout ends: it died
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending call: %v, want ErrClosed", err)
	}
	<-c.Done()
	if _, err := c.RunTurn(ctxT(t), "T1", "x", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("later call: %v, want ErrClosed", err)
	}
}

func TestRunTurnEndsWhenPeerDiesMidTurn(t *testing.T) {
	c, p := newPeer(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := c.RunTurn(ctxT(t), "T1", "x", nil)
		done <- err
	}()
	r := p.expect(MethodTurnStart)
	p.reply(r, `{"turn":{"id":"U5","items":[],"status":"inProgress","error":null}}`)
	_ = p.out.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", err)
	}
}

func TestHugeLineIsRefusedNotBuffered(t *testing.T) {
	const max = 1 << 20
	c, p := newPeer(t, Options{MaxLine: max})
	done := make(chan error, 1)
	go func() {
		_, err := c.StartThread(ctxT(t), ThreadOptions{})
		done <- err
	}()
	r := p.expect(MethodThreadStart)
	// 50 MB in one line, written in pieces as a pipe would carry it.
	go func() {
		chunk := []byte(strings.Repeat("x", 1<<20))
		_, _ = io.WriteString(p.out, `{"id":`+string(r.ID)+`,"result":{"pad":"`)
		for i := 0; i < 50; i++ {
			if _, err := p.out.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(p.out, "\"}}\n")
	}()
	err := <-done
	if !errors.Is(c.Err(), ErrLineTooLong) || !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("call err %v, client err %v: want ErrLineTooLong", err, c.Err())
	}
}

func TestReadLineBounds(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		lines   []string
		tooLong bool
	}{
		{"two lines", "a\nbb\n", 4, []string{"a", "bb"}, false},
		{"last without newline", "a\nbb", 4, []string{"a", "bb"}, false},
		{"exactly max", "abcd\n", 4, []string{"abcd"}, false},
		{"over max", "abcde\nz\n", 4, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
			var got []string
			for {
				l, err := readLine(br, tt.max)
				if errors.Is(err, ErrLineTooLong) {
					if !tt.tooLong {
						t.Fatalf("unexpected %v", err)
					}
					return
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(l))
			}
			if tt.tooLong || strings.Join(got, "|") != strings.Join(tt.lines, "|") {
				t.Fatalf("lines %q, want %q (too long %v)", got, tt.lines, tt.tooLong)
			}
		})
	}
}

// Compact sends thread/compact/start and waits for the compaction's own
// turn to complete, skipping other threads' news, and keeps the usage.
func TestCompactWaitsForTheCompactionTurn(t *testing.T) {
	c, p := newPeer(t, Options{})
	type out struct {
		res TurnResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := c.Compact(ctxT(t), "T1")
		done <- out{res, err}
	}()
	r := p.expect(MethodThreadCompact)
	if string(r.Params) != `{"threadId":"T1"}` {
		t.Fatalf("params %s", r.Params)
	}
	p.reply(r, `{}`)
	p.send(`{"method":"turn/completed","params":{"threadId":"other","turn":{"id":"X","items":[],"status":"completed","error":null}}}`)
	p.send(`{"method":"turn/started","params":{"threadId":"T1","turn":{"id":"C1","items":[],"status":"inProgress","error":null}}}`)
	p.send(`{"method":"item/started","params":{"item":{"type":"contextCompaction","id":"i"},"threadId":"T1","turnId":"C1"}}`)
	p.send(`{"method":"thread/tokenUsage/updated","params":{"threadId":"T1","turnId":"C1","tokenUsage":{"total":{"totalTokens":9,"inputTokens":7,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":2,"reasoningOutputTokens":0},"last":{"totalTokens":9,"inputTokens":7,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":2,"reasoningOutputTokens":0},"modelContextWindow":100}}}`)
	select {
	case o := <-done:
		t.Fatalf("Compact returned before the compaction ended: %+v %v", o.res, o.err)
	default:
	}
	p.send(`{"method":"turn/completed","params":{"threadId":"T1","turn":{"id":"C1","items":[],"status":"completed","error":null}}}`)
	o := <-done
	if o.err != nil || o.res.Status != StatusCompleted || o.res.TurnID != "C1" || o.res.Usage == nil || o.res.Usage.Total.InputTokens != 7 {
		t.Fatalf("Compact = %+v, %v", o.res, o.err)
	}
}

// A refused compaction is an *RPCError.
func TestCompactRefused(t *testing.T) {
	c, p := newPeer(t, Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Compact(ctxT(t), "T1")
		errc <- err
	}()
	r := p.expect(MethodThreadCompact)
	p.send(`{"id":` + string(r.ID) + `,"error":{"code":-32600,"message":"thread not found: T1"}}`)
	var rpc *RPCError
	if err := <-errc; !errors.As(err, &rpc) || rpc.Code != -32600 {
		t.Fatalf("refused Compact: %v", err)
	}

}

// turnEndedBy runs a turn (thread T1, turn U2) on a peer that answers its
// start and then sends completed, the turn/completed notification, and
// returns RunTurn's result; RunTurn must not fail.
func turnEndedBy(t *testing.T, completed string) TurnResult {
	t.Helper()
	c, p := newPeer(t, Options{})
	done := make(chan TurnResult, 1)
	go func() {
		res, err := c.RunTurn(ctxT(t), "T1", "x", nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	r := p.expect(MethodTurnStart)
	p.reply(r, `{"turn":{"id":"U2","items":[],"status":"inProgress","error":null}}`)
	p.send(completed)
	return <-done
}

// A turn started with a traceparent carries it in turn/start's envelope
// (the app-server's "trace"); one without carries none.
func TestRunTurnCarriesTheTraceParent(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, want := range []string{tp, ""} {
		c, p := newPeer(t, Options{})
		done := make(chan error, 1)
		go func() {
			_, err := c.RunTurn(WithTraceParent(ctxT(t), want), "T1", "hello", nil)
			done <- err
		}()
		r := p.expect(MethodTurnStart)
		switch {
		case want != "" && (r.Trace == nil || r.Trace.TraceParent != want):
			t.Fatalf("turn/start's trace %+v, want %s", r.Trace, want)
		case want == "" && r.Trace != nil:
			t.Fatalf("turn/start carries a trace %+v", r.Trace)
		}
		p.reply(r, `{"turn":{"id":"U1","items":[],"status":"inProgress","error":null}}`)
		for _, l := range turnLines("T1", "U1") {
			p.send(l)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
