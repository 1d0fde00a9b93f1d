package shimconfig

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/battyhq/batty/codex"
)

// usageFormat is how --thread-usage spells a codex.Usage.
const usageFormat = "input=N,cached_input=N,cache_write_input=N,output=N,reasoning_output=N"

// usageValue is a codex.Usage as a flag value: comma-separated key=N pairs
// (any subset, in any order; missing keys are zero). Set refuses unknown
// keys, repeated keys and counts that are not non-negative integers.
type usageValue codex.Usage

func (u *usageValue) fields() []struct {
	key string
	v   *int64
} {
	return []struct {
		key string
		v   *int64
	}{
		{"input", &u.InputTokens}, {"cached_input", &u.CachedInputTokens}, {"cache_write_input", &u.CacheWriteInputTokens},
		{"output", &u.OutputTokens}, {"reasoning_output", &u.ReasoningOutputTokens},
	}
}

// String renders every count, e.g. "input=19124,cached_input=0,…".
func (u *usageValue) String() string {
	parts := make([]string, 0, 5)
	for _, f := range u.fields() {
		parts = append(parts, f.key+"="+strconv.FormatInt(*f.v, 10))
	}
	return strings.Join(parts, ",")
}

// Set parses s; on error u is left unchanged.
func (u *usageValue) Set(s string) error {
	var parsed usageValue
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		key, num, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%q is not key=N (want %s)", part, usageFormat)
		}
		var dst *int64
		for _, f := range parsed.fields() {
			if f.key == key {
				dst = f.v
			}
		}
		if dst == nil {
			return fmt.Errorf("unknown usage key %q (want %s)", key, usageFormat)
		}
		if seen[key] {
			return fmt.Errorf("usage key %q given twice", key)
		}
		seen[key] = true
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("usage %s=%q is not a non-negative integer", key, num)
		}
		*dst = n
	}
	*u = parsed
	return nil
}

// Type names the value in help output.
func (u *usageValue) Type() string { return "usage" }
