package codex

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mixedStream concatenates the stdout of every recorded run except the two
// 5 MB ones: a realistic mix of short lifecycle lines, command output,
// patches, web searches, errors and retry notices.
func mixedStream(b *testing.B) []byte {
	b.Helper()
	var buf bytes.Buffer
	for _, name := range fixtureNames(b) {
		if strings.HasPrefix(name, "big") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(fixtureDir, name+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(data)
	}
	return buf.Bytes()
}

func benchmarkRead(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), 0)
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReader measures JSONL parse throughput over a mixed stream.
func BenchmarkReader(b *testing.B) {
	benchmarkRead(b, mixedStream(b))
}

// BenchmarkReaderBigLine measures a stream holding one 5 MB agent_message
// line (the recorded big fixture).
func BenchmarkReaderBigLine(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(fixtureDir, "big.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkRead(b, data)
}

func BenchmarkParseEvent(b *testing.B) {
	lines := map[string]string{
		"turn.started":      `{"type":"turn.started"}`,
		"turn.completed":    `{"type":"turn.completed","usage":{"input_tokens":9526,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":3,"reasoning_output_tokens":0}}`,
		"command_execution": `{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo EXEC_OK_exec-fresh'","aggregated_output":"EXEC_OK_exec-fresh\n","exit_code":0,"status":"completed"}}`,
		"web_search":        `{"type":"item.started","item":{"id":"item_0","type":"web_search","id":"ws_000025","query":"mock query websearch-fresh","action":{"type":"search","query":"mock query websearch-fresh"}}}`,
	}
	for name, line := range lines {
		b.Run(name, func(b *testing.B) {
			data := []byte(line)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseEvent(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkClassify(b *testing.B) {
	msgs := []string{
		"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 1:14 PM.",
		"stream disconnected before completion: stream closed before response.completed",
		"some message nobody recognises at all, which scans every pattern",
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			Classify(m)
		}
	}
}

func BenchmarkParseRetryAt(b *testing.B) {
	msg := "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Nov 22nd, 2026 12:21 AM."
	now := time.Date(2026, 11, 21, 12, 14, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ParseRetryAt(msg, now, time.UTC); !ok {
			b.Fatal("no time")
		}
	}
}
