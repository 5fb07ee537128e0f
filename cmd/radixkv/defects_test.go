package main

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Regression tests for inputs that crashed the CLI, ran it out of memory
// or were silently misread. Each must fail with a message naming the
// file, the line and the field, before the claimed memory is allocated.

// v2Log builds a version 2 log with the given set lines and req lines
// (each "TS OUT IN REF SHARED TOKENS NS"), with correct checks and end
// line unless the caller edits them afterwards.
func v2Log(sets []string, reqs []string) string {
	var b strings.Builder
	b.WriteString(logMagic + "\n")
	for _, s := range sets {
		b.WriteString("set " + s + "\n")
	}
	var total int64
	for _, r := range reqs {
		f := strings.SplitN(r, " ", 7)
		head := strings.Join(f[:5], " ")
		fmt.Fprintf(&b, "req %s %08x %s %s\n", head, lineCheck(head, f[5], f[6]), f[5], f[6])
		n, _ := strconv.ParseInt(f[2], 10, 64)
		total += n
	}
	body := b.String()
	return body + fmt.Sprintf("end %d %d %08x\n", len(reqs), total, crc32.Checksum([]byte(body), crcTable))
}

func tokensField(toks ...uint32) string {
	raw := make([]byte, 4*len(toks))
	for i, t := range toks {
		binary.LittleEndian.PutUint32(raw[4*i:], t)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func replayFails(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"replay", "--engine", "direct"}, args...)...)
	require.Equal(t, exitError, code, "stdout: %s\nstderr: %s", out, errOut)
	require.Empty(t, out)
	require.NotContains(t, errOut, "panic")
	return errOut
}

func TestDefect_LogHugeInputLength(t *testing.T) {
	// The line that panicked with "makeslice: cap out of range", in both
	// log versions.
	v1 := writeFile(t, "v1.log", "radixkv-log 1\nreq 0 0 9223372036854775807 -1 0 - \"\"\nend 1 1\n")
	msg := replayFails(t, "--log", v1)
	require.Contains(t, msg, "v1.log:2: input_length 9223372036854775807")
	v2 := writeFile(t, "v2.log", v2Log(nil, []string{`0 0 9223372036854775807 -1 0 - ""`}))
	require.Contains(t, replayFails(t, "--log", v2), "v2.log:2: input_length 9223372036854775807")

	// 10^11 and 2^31-1 tokens claimed by a line that holds three.
	for _, n := range []string{"100000000000", "2147483647"} {
		p := writeFile(t, "big.log", v2Log(nil, []string{"0 0 " + n + " -1 0 " + tokensField(1, 2, 3) + ` ""`}))
		require.Contains(t, replayFails(t, "--log", p), "big.log:2: input_length "+n+": "+n+" tokens after the shared 0, but the tokens field holds at most 3")
	}
	// A request that is on its line but larger than the recorded pool.
	p := writeFile(t, "pool.log", v2Log([]string{"capacity 2"}, []string{"0 0 3 -1 0 " + tokensField(1, 2, 3) + ` ""`}))
	require.Contains(t, replayFails(t, "--log", p), "pool.log:3: input_length 3: more than the 2-token device pool")
	// Field names, not numbers.
	p = writeFile(t, "ts.log", v2Log(nil, []string{`x 0 0 -1 0 - ""`}))
	require.Contains(t, replayFails(t, "--log", p), `ts.log:2: timestamp "x"`)
}

func TestDefect_LogChecksums(t *testing.T) {
	good := v2Log([]string{"policy lru"}, []string{"0 0 3 -1 0 " + tokensField(1, 2, 3) + ` ""`, "1 0 3 -1 0 " + tokensField(1, 2, 4) + ` "a"`})
	p := writeFile(t, "good.log", good)
	code, _, errOut := cli(t, "replay", "--engine", "direct", "--log", p, "--capacity", "100")
	require.Equal(t, 0, code, errOut)

	// One base64 character flipped in the second request: refused on
	// its line.
	lines := strings.SplitAfter(good, "\n")
	i := strings.LastIndex(lines[3], " ") - 3
	b := []byte(lines[3])
	b[i] ^= 0x01
	lines[3] = string(b)
	p = writeFile(t, "flip.log", strings.Join(lines, ""))
	require.Contains(t, replayFails(t, "--log", p, "--capacity", "100"), "flip.log:4: check ")

	// A changed setting: refused by the end line's checksum.
	p = writeFile(t, "set.log", strings.Replace(good, "set policy lru", "set policy lfu", 1))
	require.Contains(t, replayFails(t, "--log", p, "--capacity", "100"), "set.log:5: end line: checksum")
}

func TestDefect_TraceClaimsTooMuch(t *testing.T) {
	// 2^31-1 tokens claimed with one hash id: refused before the
	// 8 GiB token array is allocated, with and without --capacity.
	p := writeFile(t, "claim.jsonl", goodLine+`{"timestamp": 1, "input_length": 2147483647, "output_length": 1, "hash_ids": [1]}`+"\n")
	msg := replayFails(t, "--trace", p)
	require.Contains(t, msg, "claim.jsonl:2: input_length 2147483647")
	require.Contains(t, msg, "at most 1000000 tokens")
	require.Contains(t, replayFails(t, "--trace", p, "--capacity", "5000"), "at most 5000 tokens")

	// A line of 2^21 hash ids (17 MB, 2^30 tokens): refused while the
	// line is read, not after expanding it.
	var b strings.Builder
	b.WriteString(`{"timestamp": 1, "input_length": 1073741824, "output_length": 1, "hash_ids": [`)
	for i := range 1 << 21 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(1_000_000 + i))
	}
	b.WriteString("]}\n")
	p = writeFile(t, "long.jsonl", goodLine+b.String())
	msg = replayFails(t, "--trace", p)
	require.Contains(t, msg, "long.jsonl:2: line longer than")
}

func TestDefect_CapacityNeedsMoreMemoryThanAvailable(t *testing.T) {
	old := availableMemory
	availableMemory = func() (uint64, bool) { return 1 << 30, true }
	defer func() { availableMemory = old }()
	msg := replayFails(t, "--capacity", "2147483647", "--requests", "5")
	require.Contains(t, msg, "the pools need about 16.2 GiB of memory") // 2^31 slots of 4 canary bytes and the pool's bookkeeping
	require.Contains(t, msg, "device KV pool of 2147483647 slots, is set by --capacity")
	require.Contains(t, msg, "1.0 GiB available")
	require.Contains(t, msg, "--canary=false")
	msg = replayFails(t, "--capacity", "100000", "--host-capacity", "2000000000", "--requests", "5")
	require.Contains(t, msg, "host full pool of 2000000000 slots, is set by --host-capacity")
}

func TestDefect_CapacityZeroIsNotTheDefault(t *testing.T) {
	require.Contains(t, replayFails(t, "--capacity", "0"), "--capacity 0: the device pool needs at least one slot")
	p := writeFile(t, "zero.log", v2Log([]string{"capacity 0"}, []string{"0 0 3 -1 0 " + tokensField(1, 2, 3) + ` ""`}))
	require.Contains(t, replayFails(t, "--log", p), "log "+p+":2: set capacity 0: the device pool needs at least one slot")
}

func TestDefect_SweepMessages(t *testing.T) {
	code, _, errOut := cli(t, "sweep", "--requests", "20", "--policies", "nope", "--svg", "")
	require.Equal(t, exitError, code)
	require.Equal(t, 1, strings.Count(errOut, "known:"), errOut)
	code, _, errOut = cli(t, "sweep", "--requests", "20", "--capacities", "10", "--svg", "")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "use --capacities ")
	require.NotContains(t, errOut, "--capacity ")
}

func TestDefect_Version1LogsStillRead(t *testing.T) {
	p := writeFile(t, "old.log", "radixkv-log 1\nset capacity 100\nreq 0 0 3 -1 0 "+tokensField(1, 2, 3)+" \"\"\nend 1 3\n")
	code, _, errOut := cli(t, "replay", "--engine", "direct", "--log", p)
	require.Equal(t, 0, code, errOut)
}
