package main

// The command log format, version 2.
//
// A log is UTF-8 text, one record per line, fields separated by single
// spaces. Lines starting with '#' are comments. The first line is
//
//	radixkv-log 2
//
// then zero or more settings, each "set NAME VALUE", where NAME is a replay
// flag (engine, components, page-size, capacity, host-capacity, policy,
// write-policy, canary, output-tokens, and for hybrid component sets
// swa-window, swa-capacity, mamba-chunk, mamba-cap, mamba-capacity) and
// VALUE its value as replay would take it, or "set source QUOTED" with a Go-quoted description of where
// the requests came from. Then one line per request, in replay order:
//
//	req TIMESTAMP OUTPUT_LENGTH INPUT_LENGTH REF SHARED CHECK TOKENS NAMESPACE
//
// TIMESTAMP is the arrival time in ms, OUTPUT_LENGTH the tokens the request
// decodes, INPUT_LENGTH its prompt length. The prompt is the first SHARED
// tokens of the prompt of request REF (0-based, earlier than this one; REF
// is -1 when SHARED is 0), followed by TOKENS: the remaining
// INPUT_LENGTH-SHARED tokens as little-endian uint32 values, base64
// (standard alphabet, padded), or "-" when there are none. NAMESPACE is the
// Go-quoted tenant ("" for none) and is the last field, so it may hold
// spaces. The recorder shares whole 512-token blocks, which keeps logs of
// prefix-heavy workloads small. CHECK is the CRC-32C of the line's other
// fields as written (TIMESTAMP through NAMESPACE, single spaces, without
// CHECK), 8 lowercase hex digits: a changed character fails on its line.
// The last line is
//
//	end REQUESTS INPUT_TOKENS CRC
//
// whose totals guard against a truncated file, and CRC, the CRC-32C (8 hex
// digits) of every byte before the end line, against any other change.
//
// Version 1 logs (no CHECK field, no CRC) are still read. Every claimed size
// is checked before memory is allocated: INPUT_LENGTH against the tokens the
// line holds, the device pool the run has and the memory the machine has.

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/workload"
)

const (
	logMagic   = "radixkv-log 2"
	logMagicV1 = "radixkv-log 1"
)

// crcTable is the CRC-32C (Castagnoli) table of the log checksums.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// reqFieldNames name the numeric fields of a req line in messages.
var reqFieldNames = [5]string{"timestamp", "output_length", "input_length", "ref", "shared"}

// logBlock is the granularity at which the recorder shares prefixes.
const logBlock = 512

// loggedSettings are the flags a log records, in the order written.
var loggedSettings = []string{"engine", "components", "page-size", "capacity", "host-capacity", "policy", "write-policy", "canary", "output-tokens"}

// Settings a log records only with their component.
var (
	swaSettings   = []string{"swa-window", "swa-capacity"}
	mambaSettings = []string{"mamba-chunk", "mamba-cap", "mamba-capacity"}
)

// settingValue renders the value of a logged flag.
func (s *settings) settingValue(name string) string {
	switch name {
	case "engine":
		return s.engine
	case "components":
		return s.components
	case "page-size":
		return strconv.Itoa(s.pageSize)
	case "capacity":
		return strconv.Itoa(s.capacity)
	case "host-capacity":
		return strconv.Itoa(s.hostCapacity)
	case "policy":
		return s.policy
	case "write-policy":
		return s.writePolicy
	case "canary":
		return strconv.FormatBool(s.canary)
	case "output-tokens":
		return strconv.FormatBool(s.outputTokens)
	case "swa-window":
		return strconv.Itoa(s.swaWindow)
	case "swa-capacity":
		return strconv.Itoa(s.swaCapacity)
	case "mamba-chunk":
		return strconv.Itoa(s.mambaChunk)
	case "mamba-cap":
		return strconv.Itoa(s.mambaCap)
	case "mamba-capacity":
		return strconv.Itoa(s.mambaCapacity)
	}
	panic("unknown logged setting " + name)
}

// setSetting applies a logged flag's value.
func (s *settings) setSetting(name, value string) error {
	var err error
	switch name {
	case "engine":
		s.engine = value
	case "components":
		s.components = value
	case "page-size":
		s.pageSize, err = strconv.Atoi(value)
	case "capacity":
		s.capacity, err = strconv.Atoi(value)
	case "host-capacity":
		s.hostCapacity, err = strconv.Atoi(value)
	case "policy":
		s.policy = value
	case "write-policy":
		s.writePolicy = value
	case "canary":
		s.canary, err = strconv.ParseBool(value)
	case "output-tokens":
		s.outputTokens, err = strconv.ParseBool(value)
	case "swa-window":
		s.swaWindow, err = strconv.Atoi(value)
	case "swa-capacity":
		s.swaCapacity, err = strconv.Atoi(value)
	case "mamba-chunk":
		s.mambaChunk, err = strconv.Atoi(value)
	case "mamba-cap":
		s.mambaCap, err = strconv.Atoi(value)
	case "mamba-capacity":
		s.mambaCapacity, err = strconv.Atoi(value)
	default:
		return fmt.Errorf("unknown setting %q", name)
	}
	return err
}

// writeLog writes l with the settings of s in the log format.
func writeLog(w io.Writer, s *settings, l *loaded) error {
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	fmt.Fprintln(bw, logMagic)
	fmt.Fprintln(bw, "# radixkv command log: replay it with `radixkv replay --log FILE`")
	names := loggedSettings
	if s.has(core.SWA) {
		names = append(names[:len(names):len(names)], swaSettings...)
	}
	if s.has(core.Mamba) {
		names = append(names[:len(names):len(names)], mambaSettings...)
	}
	for _, name := range names {
		fmt.Fprintf(bw, "set %s %s\n", name, s.settingValue(name))
	}
	fmt.Fprintf(bw, "set source %s\n", strconv.Quote(l.source))

	// seen maps the chained hash of every whole-block prefix recorded so
	// far to the first request that had it.
	seen := map[uint64]int{}
	var raw []byte
	var total int64
	for k := range l.reqs {
		r := &l.reqs[k]
		ref, shared := -1, 0
		h := uint64(fnvOffset)
		for end := logBlock; end <= len(r.Tokens); end += logBlock {
			h = hashBlock(h, r.Tokens[end-logBlock:end])
			j, ok := seen[h]
			if !ok || len(l.reqs[j].Tokens) < end {
				break
			}
			// Compare the tokens too, so that a hash collision can never
			// corrupt the log: the new block, or the whole prefix when the
			// reference changes.
			from := end - logBlock
			if j != ref {
				from = 0
			}
			if !slices.Equal(l.reqs[j].Tokens[from:end], r.Tokens[from:end]) {
				break
			}
			ref, shared = j, end
		}
		registerPrefixes(seen, r.Tokens, k)

		rest := r.Tokens[shared:]
		tok := "-"
		if len(rest) > 0 {
			raw = slices.Grow(raw[:0], 4*len(rest))[:4*len(rest)]
			for i, t := range rest {
				binary.LittleEndian.PutUint32(raw[4*i:], t)
			}
			tok = base64.StdEncoding.EncodeToString(raw)
		}
		head := fmt.Sprintf("%d %d %d %d %d", r.Timestamp, r.OutputLength, len(r.Tokens), ref, shared)
		ns := strconv.Quote(r.Namespace)
		fmt.Fprintf(bw, "req %s %08x %s %s\n", head, lineCheck(head, tok, ns), tok, ns)
		total += int64(len(r.Tokens))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "end %d %d %08x\n", len(l.reqs), total, crc.Sum32())
	return err
}

// lineCheck is the CHECK field of a req line: the CRC-32C of its other
// fields joined by single spaces.
func lineCheck(head, tokens, namespace string) uint32 {
	c := crc32.Update(0, crcTable, []byte(head))
	c = crc32.Update(c, crcTable, []byte{' '})
	c = crc32.Update(c, crcTable, []byte(tokens))
	c = crc32.Update(c, crcTable, []byte{' '})
	return crc32.Update(c, crcTable, []byte(namespace))
}

// registerPrefixes records every whole-block prefix of tokens not seen yet
// as first held by request k.
func registerPrefixes(seen map[uint64]int, tokens []uint32, k int) {
	h := uint64(fnvOffset)
	for end := logBlock; end <= len(tokens); end += logBlock {
		h = hashBlock(h, tokens[end-logBlock:end])
		if _, ok := seen[h]; !ok {
			seen[h] = k
		}
	}
}

// fnvOffset seeds the prefix hash chain.
const fnvOffset = 14695981039346656037

// hashBlock extends a chained FNV-1a style hash over one block of tokens.
func hashBlock(h uint64, block []uint32) uint64 {
	for _, t := range block {
		h ^= uint64(t)
		h *= 1099511628211
	}
	return h
}

// logError names the log file and line.
func logError(path string, line int, format string, a ...any) error {
	return fmt.Errorf("log %s:%d: %s", path, line, fmt.Sprintf(format, a...))
}

// loadLog reads the log named by --log; its settings fill every cache flag
// not given on the command line.
func (s *settings) loadLog() (*loaded, error) {
	f, err := os.Open(s.logFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return s.readLog(f, s.logFile)
}

func (s *settings) readLog(r io.Reader, path string) (*loaded, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	l := &loaded{}
	line := 0
	ended := false
	version := 2
	var total int64
	var raw []byte
	budget := tokenBudget()
	crc := crc32.New(crcTable)
	for {
		text, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("log %s: %w", path, err)
		}
		if text == "" && errors.Is(err, io.EOF) {
			break
		}
		line++
		if !strings.HasPrefix(text, "end ") && !ended {
			crc.Write([]byte(text))
		}
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		switch {
		case line == 1:
			switch text {
			case logMagic:
			case logMagicV1:
				version = 1
			default:
				return nil, logError(path, line, "not a radixkv command log (want first line %q)", logMagic)
			}
		case ended:
			if text != "" {
				return nil, logError(path, line, "content after the end line")
			}
		case text == "" || strings.HasPrefix(text, "#"):
		case strings.HasPrefix(text, "set "):
			name, value, _ := strings.Cut(text[4:], " ")
			if name == "source" {
				src, err := strconv.Unquote(value)
				if err != nil {
					return nil, logError(path, line, "source %s: %v", value, err)
				}
				l.source = src
				l.trace = strings.HasPrefix(src, "trace ")
				continue
			}
			if s.explicit[name] {
				continue // the command line wins
			}
			if err := s.setSetting(name, value); err != nil {
				return nil, logError(path, line, "set %s %s: %v", name, value, err)
			}
			if name == "capacity" {
				s.capacitySet = fmt.Sprintf("log %s:%d: set capacity", path, line)
				if err := s.checkCapacitySet(); err != nil {
					return nil, err
				}
				if !s.sweeping {
					s.requestLimit = int64(s.capacity)
				}
			}
		case strings.HasPrefix(text, "req "):
			want := 8
			if version == 1 {
				want = 7
			}
			f := strings.SplitN(text[4:], " ", want)
			if len(f) != want {
				return nil, logError(path, line, "req line has %d fields, want %d", len(f), want)
			}
			if version == 2 {
				check := f[5]
				f = append(f[:5:5], f[6:]...)
				c, err := strconv.ParseUint(check, 16, 32)
				if err != nil || len(check) != 8 {
					return nil, logError(path, line, "check %q: want 8 hex digits", check)
				}
				if got := lineCheck(strings.Join(f[:5], " "), f[5], f[6]); uint32(c) != got {
					return nil, logError(path, line, "check %s: the line's fields give %08x; the line was changed after it was recorded", check, got)
				}
			}
			var n [5]int64
			for i := range n {
				if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
					return nil, logError(path, line, "%s %q: %v", reqFieldNames[i], f[i], errors.Unwrap(err))
				}
			}
			ts, out, inLen, ref, shared := n[0], n[1], n[2], n[3], n[4]
			k := len(l.reqs)
			// The tokens after the shared prefix must all be on the line:
			// check the claimed sizes before anything is allocated.
			onLine := int64(0)
			if f[5] != "-" {
				onLine = int64(base64.StdEncoding.DecodedLen(len(f[5])) / 4)
			}
			switch {
			case ts < 0:
				return nil, logError(path, line, "timestamp %d is negative", ts)
			case out < 0 || out > 1<<31-1:
				return nil, logError(path, line, "output_length %d out of range [0, 2^31-1]", out)
			case inLen < 0:
				return nil, logError(path, line, "input_length %d is negative", inLen)
			case shared < 0 || shared > inLen:
				return nil, logError(path, line, "shared %d outside [0, input_length %d]", shared, inLen)
			case shared > 0 && (ref < 0 || ref >= int64(k) || shared > int64(len(l.reqs[ref].Tokens))):
				return nil, logError(path, line, "shared prefix of %d tokens from ref %d, which does not precede request %d or is shorter", shared, ref, k)
			case inLen-shared > onLine:
				return nil, logError(path, line, "input_length %d: %d tokens after the shared %d, but the tokens field holds at most %d", inLen, inLen-shared, shared, onLine)
			case s.requestLimit > 0 && inLen > s.requestLimit:
				return nil, logError(path, line, "input_length %d: more than the %d-token device pool (%s) holds, so no replay of it can run; give a larger --capacity", inLen, s.requestLimit, s.capFlag())
			case total+inLen > budget:
				return nil, logError(path, line, "input_length %d: the log's requests up to here hold %d tokens, past the %d this machine's memory can keep", inLen, total+inLen, budget)
			}
			tokens := make([]uint32, shared, inLen)
			if shared > 0 {
				copy(tokens, l.reqs[ref].Tokens[:shared])
			}
			if f[5] != "-" {
				raw, err = base64.StdEncoding.AppendDecode(raw[:0], []byte(f[5]))
				if err != nil {
					return nil, logError(path, line, "tokens: %v", err)
				}
				if len(raw)%4 != 0 {
					return nil, logError(path, line, "tokens: %d bytes is not a whole number of uint32", len(raw))
				}
				for i := 0; i < len(raw); i += 4 {
					tokens = append(tokens, binary.LittleEndian.Uint32(raw[i:]))
				}
			}
			if int64(len(tokens)) != inLen {
				return nil, logError(path, line, "input length %d, but the line holds %d tokens", inLen, len(tokens))
			}
			ns, err := strconv.Unquote(f[6])
			if err != nil {
				return nil, logError(path, line, "namespace %s: %v", f[6], err)
			}
			l.reqs = append(l.reqs, workload.Request{Timestamp: ts, InputLength: int(inLen), OutputLength: int(out), Tokens: tokens, Namespace: ns})
			l.where = append(l.where, fmt.Sprintf("%s:%d", path, line))
			total += inLen
		case strings.HasPrefix(text, "end "):
			var reqs, toks int64
			var sum uint32
			if version == 1 {
				_, err = fmt.Sscanf(text, "end %d %d", &reqs, &toks)
			} else {
				_, err = fmt.Sscanf(text, "end %d %d %08x", &reqs, &toks, &sum)
			}
			if err != nil {
				return nil, logError(path, line, "end line: %v", err)
			}
			if reqs != int64(len(l.reqs)) || toks != total {
				return nil, logError(path, line, "end line promises %d requests and %d tokens, the log holds %d and %d", reqs, toks, len(l.reqs), total)
			}
			if version == 2 && sum != crc.Sum32() {
				return nil, logError(path, line, "end line: checksum %08x, but the lines before it give %08x; the log was changed after it was recorded", sum, crc.Sum32())
			}
			ended = true
		default:
			return nil, logError(path, line, "unknown record %q", strings.SplitN(text, " ", 2)[0])
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if line == 0 {
		return nil, fmt.Errorf("log %s is empty: not a radixkv command log", path)
	}
	if !ended {
		return nil, fmt.Errorf("log %s: no end line after line %d (truncated?)", path, line)
	}
	if len(l.reqs) == 0 {
		return nil, fmt.Errorf("log %s holds no requests: nothing to replay", path)
	}
	if l.source == "" {
		l.source = "log " + path
	} else {
		l.source = fmt.Sprintf("log %s (recorded from %s)", path, l.source)
	}
	return l, nil
}
