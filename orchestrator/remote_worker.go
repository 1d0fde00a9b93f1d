package orchestrator

import (
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/ptylog"
)

// remoteWorker is the worker of an agent on a host as the actor sees it:
// the events a local shim gives. The shim there has no transcript file,
// so it sends its transcript as TranscriptLines, which remoteWorker
// appends to the transcript here; they never reach Events. Everything
// else passes through in order (the replies whole: the shim's client
// joined them, as it does for a shim here).
//
// It owns one goroutine (forward), which ends when the inner worker's
// events end or Close is called; the transcript is closed by it.
type remoteWorker struct {
	Worker // the shim on the host: Send, Pid, Done, ExitCode, BeginStop, Kill and Err are its own

	events    chan protocol.Message
	quit      chan struct{} // closed by Close: forward stops delivering
	read      chan struct{} // closed when forward has ended
	closeOnce sync.Once

	// owned by forward
	transcript, root string // the transcript here and the root it must stay under
	log              hclog.Logger
	tlog             *ptylog.Writer // opened on the first lines
}

// newRemoteWorker adapts w, the worker of an agent on a host, whose
// transcript here is transcript (under root), and starts forwarding its
// events.
func newRemoteWorker(w Worker, transcript, root string, log hclog.Logger) *remoteWorker {
	r := &remoteWorker{
		Worker: w, events: make(chan protocol.Message, clientEvents),
		quit: make(chan struct{}), read: make(chan struct{}),
		transcript: transcript, root: root, log: log,
	}
	go r.forward()
	return r
}

// clientEvents is how many events remoteWorker holds for an actor busy
// elsewhere, as a local shim's client does.
const clientEvents = 64

// Events delivers the events of the shim there as a local shim gives them.
func (r *remoteWorker) Events() <-chan protocol.Message { return r.events }

// Close releases the shim there and ends forward; idempotent.
func (r *remoteWorker) Close() {
	r.Worker.Close()
	r.closeOnce.Do(func() { close(r.quit) })
	<-r.read
}

// forward takes the inner worker's events until they end, handling the
// ones a local shim does not send and passing the rest on.
func (r *remoteWorker) forward() {
	defer close(r.read)
	defer close(r.events)
	defer func() { r.tlog.Close() }()
	for m := range r.Worker.Events() {
		switch e := m.(type) {
		case protocol.TranscriptLines:
			r.transcriptLines(e.Lines)
			continue
		}
		select {
		case r.events <- m:
		case <-r.quit:
			return
		}
	}
}

// transcriptLines appends lines to the agent's transcript here, through
// the writer a local shim uses, opened on the first lines (a file it
// cannot open is logged once per try, and the lines are dropped).
func (r *remoteWorker) transcriptLines(lines []string) {
	if r.tlog == nil {
		w, err := ptylog.Open(r.transcript, ptylog.Options{
			Color: true, Root: r.root,
			OnError: func(err error) { r.log.Warn("Transcript write failed", "path", r.transcript, "error", err) },
		})
		if err != nil {
			r.log.Warn("Transcript not opened; lines from the host dropped", "path", r.transcript, "error", err)
			return
		}
		r.tlog = w
	}
	r.tlog.Raw(lines...)
}
