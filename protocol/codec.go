package protocol

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrUnknownKind is returned (wrapped) when a frame names a message kind
// this version does not know.
var ErrUnknownKind = errors.New("unknown message kind")

// On the wire a message is a msgpack array of two elements: the kind as a
// string, then the message as a map keyed by the field names of its json
// tags, so the msgpack and JSON forms of a message have the same keys.

// Encode returns the frame body for m.
func Encode(m Message) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeTo(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeTo(buf *bytes.Buffer, m Message) error {
	if m == nil {
		return errors.New("encode message: nil")
	}
	enc := msgpack.NewEncoder(buf)
	enc.SetCustomStructTag("json")
	if err := enc.EncodeArrayLen(2); err != nil {
		return fmt.Errorf("encode %s: %w", m.Kind(), err)
	}
	if err := enc.EncodeString(string(m.Kind())); err != nil {
		return fmt.Errorf("encode %s: %w", m.Kind(), err)
	}
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("encode %s: %w", m.Kind(), err)
	}
	return nil
}

// Decode parses a frame body into a message value (never a pointer), so
// callers can switch on the concrete type. It never panics on bad input.
func Decode(body []byte) (Message, error) {
	r := bytes.NewReader(body)
	dec := msgpack.NewDecoder(r)
	dec.SetCustomStructTag("json")
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("decode message header: %w", err)
	}
	if n != 2 {
		return nil, fmt.Errorf("decode message: envelope has %d elements, want 2", n)
	}
	kind, err := dec.DecodeString()
	if err != nil {
		return nil, fmt.Errorf("decode message kind: %w", err)
	}
	decode, ok := decoders[Kind(kind)]
	if !ok {
		return nil, fmt.Errorf("decode message: %q: %w", kind, ErrUnknownKind)
	}
	m, err := decode(dec)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("decode %s: %d trailing bytes", kind, r.Len())
	}
	return m, nil
}

func decodeAs[T Message](dec *msgpack.Decoder) (Message, error) {
	var v T
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

var decoders = map[Kind]func(*msgpack.Decoder) (Message, error){
	KindWelcome:          decodeAs[Welcome],
	KindSend:             decodeAs[SendMessage],
	KindInterrupt:        decodeAs[Interrupt],
	KindGetState:         decodeAs[GetState],
	KindCapture:          decodeAs[Capture],
	KindPing:             decodeAs[Ping],
	KindResetThread:      decodeAs[ResetThread],
	KindShutdown:         decodeAs[Shutdown],
	KindKill:             decodeAs[Kill],
	KindHello:            decodeAs[Hello],
	KindAccepted:         decodeAs[Accepted],
	KindRejected:         decodeAs[Rejected],
	KindTurnStarted:      decodeAs[TurnStarted],
	KindThreadChanged:    decodeAs[ThreadChanged],
	KindStateChanged:     decodeAs[StateChanged],
	KindTurnFinished:     decodeAs[TurnFinished],
	KindQuotaBlocked:     decodeAs[QuotaBlocked],
	KindAuthRequired:     decodeAs[AuthRequired],
	KindContextExhausted: decodeAs[ContextExhausted],
	KindContextPressure:  decodeAs[ContextPressure],
	KindSessionStats:     decodeAs[SessionStats],
	KindStateReport:      decodeAs[StateReport],
	KindTranscript:       decodeAs[Transcript],
	KindPong:             decodeAs[Pong],
	KindWarning:          decodeAs[Warning],
	KindError:            decodeAs[Error],
}
