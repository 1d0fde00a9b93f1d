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
// callers can switch on the concrete type. It never panics on bad input: a
// frame it cannot decode is an error naming the kind when the kind was read.
// Two guards make that hold, because the msgpack library does not by itself:
// nesting is bounded before decoding (checkNesting; a stack overflow is
// fatal, not a panic), and a panic inside the library (v5.4.1 panics on nil
// where a time.Time is due) is recovered and returned as an error.
func Decode(body []byte) (m Message, err error) {
	if err := checkNesting(body); err != nil {
		return nil, err
	}
	what := "message" // the kind, once it is known
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("decode %s: malformed body: msgpack decoder panicked: %v", what, p)
		}
	}()
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
	what = kind
	m, err = decode(dec)
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
	KindPing:             decodeAs[Ping],
	KindResetThread:      decodeAs[ResetThread],
	KindSwitchThread:     decodeAs[SwitchThread],
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
	KindPong:             decodeAs[Pong],
	KindWarning:          decodeAs[Warning],
	KindError:            decodeAs[Error],
	KindNetworkWait:      decodeAs[NetworkWait],
	KindRateLimits:       decodeAs[RateLimits],
	KindTranscriptLines:  decodeAs[TranscriptLines],
	KindOutgoing:         decodeAs[Outgoing],
	KindReplyChunk:       decodeAs[ReplyChunk],
	KindOutgoingAck:      decodeAs[OutgoingAck],
	KindRecallAnswer:     decodeAs[RecallAnswer],
}

// maxNesting bounds how deeply msgpack arrays and maps may nest in a frame
// body. The messages of this version nest three deep (envelope, message,
// Usage or Lines); the margin leaves room for fields added later, which an
// older reader skips. The msgpack decoder skips unknown fields recursively,
// so without a bound a frame of a few MiB of nested arrays would overflow
// the goroutine stack: a fatal error that no recover catches.
const maxNesting = 64

// checkNesting walks the first msgpack value of b without recursion and
// fails if it is malformed or nests deeper than maxNesting. It allocates
// nothing.
func checkNesting(b []byte) error {
	var open [maxNesting]uint64 // elements still due in each open container
	depth := 0
	i := 0
	for {
		if i >= len(b) {
			return fmt.Errorf("decode message: truncated msgpack at byte %d", i)
		}
		at := i
		c := b[i]
		i++
		var skip, elems uint64 // payload bytes; child elements
		var lenSize int        // size of a big-endian length after the code
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
			// fixint, nil, bool: the code is the whole value
		case c <= 0x8f:
			elems = 2 * uint64(c&0x0f) // fixmap
		case c <= 0x9f:
			elems = uint64(c & 0x0f) // fixarray
		case c <= 0xbf:
			skip = uint64(c & 0x1f) // fixstr
		case c == 0xc4 || c == 0xd9: // bin8, str8
			lenSize = 1
		case c == 0xc5 || c == 0xda: // bin16, str16
			lenSize = 2
		case c == 0xc6 || c == 0xdb: // bin32, str32
			lenSize = 4
		case c == 0xc7: // ext8: length, type, data
			lenSize, skip = 1, 1
		case c == 0xc8:
			lenSize, skip = 2, 1
		case c == 0xc9:
			lenSize, skip = 4, 1
		case c == 0xca || c == 0xce || c == 0xd2: // 32-bit numbers
			skip = 4
		case c == 0xcb || c == 0xcf || c == 0xd3: // 64-bit numbers
			skip = 8
		case c == 0xcc || c == 0xd0:
			skip = 1
		case c == 0xcd || c == 0xd1:
			skip = 2
		case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16 plus the type
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc || c == 0xde: // array16, map16
			lenSize = 2
		case c == 0xdd || c == 0xdf: // array32, map32
			lenSize = 4
		default: // 0xc1 is never used
			return fmt.Errorf("decode message: invalid msgpack code 0x%02x at byte %d", c, at)
		}
		if lenSize > 0 {
			if len(b)-i < lenSize {
				return fmt.Errorf("decode message: truncated msgpack at byte %d", at)
			}
			var n uint64
			for _, x := range b[i : i+lenSize] {
				n = n<<8 | uint64(x)
			}
			i += lenSize
			switch c {
			case 0xdc, 0xdd:
				elems = n
			case 0xde, 0xdf:
				elems = 2 * n
			default:
				skip += n
			}
		}
		// Every element takes at least one byte.
		if skip+elems > uint64(len(b)-i) {
			return fmt.Errorf("decode message: truncated msgpack at byte %d", at)
		}
		i += int(skip)
		if elems > 0 {
			if depth == maxNesting {
				return fmt.Errorf("decode message: msgpack nested more than %d deep at byte %d", maxNesting, at)
			}
			open[depth] = elems
			depth++
			continue
		}
		// A value is complete: close every container it completes.
		for {
			if depth == 0 {
				return nil
			}
			open[depth-1]--
			if open[depth-1] > 0 {
				break
			}
			depth--
		}
	}
}
