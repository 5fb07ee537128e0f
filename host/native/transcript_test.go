package native

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcript"
	"github.com/radixkv/radixkv/internal/transcripttest"
	"github.com/stretchr/testify/require"
)

// TestEngines_Transcripts replays core's transcript scripts
// (core/testdata/*.txt, see internal/transcripttest for the commands)
// through every engine and compares with the recorded output, which the
// core tree itself produced. Node ids are printed in core form (see
// coreID) and literal handles such as n3.1 are converted to each
// engine's form; the one other normalisation is that the "node 0x…: "
// prefix the dispatcher puts before a stale-node error (naming the id as
// the host sent it) is removed. Commands only a core.Tree answers and
// that change nothing (coreOnly: hashes) are commented out of the
// engine's copy of a script, keeping its line numbers. Regenerate the
// scripts from core, never from here.
func TestEngines_Transcripts(t *testing.T) {
	if transcript.Rewriting() {
		t.Skip("the scripts are owned by core: rewrite them with go test ./core -rewrite")
	}
	paths, err := filepath.Glob("../../core/testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	forEachEngine(t, func(t *testing.T, ctor engineCtor) {
		for _, path := range paths {
			t.Run(filepath.Base(path), func(t *testing.T) {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				script, masked := maskCoreOnly(string(data))
				if why := unsupportedCommand(script); why != "" {
					t.Skipf("skipping %s: %s", filepath.Base(path), why)
				}
				if masked > 0 {
					t.Logf("%d core-only command(s) commented out", masked)
					path = filepath.Join(t.TempDir(), filepath.Base(path))
					require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
				}
				transcripttest.Run(t, path, engineOptions(ctor))
			})
		}
	})
}

// TestEngines_TranscriptsRunEvents guards against the events script
// being skipped again: every engine must be able to run it.
func TestEngines_TranscriptsRunEvents(t *testing.T) {
	data, err := os.ReadFile("../../core/testdata/events.txt")
	require.NoError(t, err)
	script, masked := maskCoreOnly(string(data))
	require.Empty(t, unsupportedCommand(script))
	require.Equal(t, 1, masked, "events.txt has one hashes command")
	require.Equal(t, strings.Count(string(data), "\n"), strings.Count(script, "\n"), "line numbers are kept")
}

// TestEngines_TranscriptsRunAll guards against scripts being skipped:
// every command of every script (the host-tier ones included) is an
// Engine operation the harness runs.
func TestEngines_TranscriptsRunAll(t *testing.T) {
	paths, err := filepath.Glob("../../core/testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		script, _ := maskCoreOnly(string(data))
		require.Empty(t, unsupportedCommand(script), filepath.Base(path))
	}
}

// engineOptions runs the transcripts on engines from ctor.
func engineOptions(ctor engineCtor) transcripttest.Options {
	return transcripttest.Options{
		New: func(cfg core.Config) (transcripttest.Target, error) {
			e, err := ctor(cfg)
			if err != nil {
				return nil, err
			}
			return engineTarget{e, e.(transcripttest.Inspector)}, nil
		},
		ErrorText: func(err error) string { return wireNodePrefix.ReplaceAllString(err.Error(), "") },
	}
}

// wireNodePrefix is what the dispatcher puts before a stale-node error.
var wireNodePrefix = regexp.MustCompile(`node 0x[0-9a-f]{16}: `)

// transcriptArgs lists the commands the engine harness runs and the
// arguments each takes.
var transcriptArgs = map[string][]string{
	"new": {"page", "policy", "bigram", "host-tier", "kv-events", "hash", "write-back", "components",
		"window", "mamba-chunk", "mamba-cap", "wt-threshold", "linker"},
	"insert":        {"tokens", "slots", "ns", "prev", "prio", "chunked", "track", "session", "as", "swa-evicted", "swa-branching", "mamba"},
	"begin-insert":  {"tokens", "slots", "ns", "prev", "prio", "chunked", "track", "session", "as", "swa-evicted", "swa-branching", "mamba"},
	"resume-insert": {"as"},
	"end-insert":    {},
	"match":         {"tokens", "ns", "as", "best"},
	"lock":          {"node", "skip", "as"},
	"unlock":        {"node", "receipt", "skip-swa", "forge"},
	"unlock-swa":    {"node", "receipt", "forge"},
	"evict-excess":  {"node"},
	"lru":           {"comp", "host"},
	"evict":         {"n", "comp"},
	"evict-start":   {"n", "comp"},
	"evict-next":    {}, "evict-end": {}, "render": {}, "sanity": {}, "nodes": {},
	"leaves": {}, "receipts": {}, "reset": {},
	"inspect":   {"node"},
	"dfs-order": {"nodes"},
	"events":    {},
	// The host tier, storage keys and the external linker.
	"backup":           {"node"},
	"demote":           {"node"},
	"mark-pending":     {"nodes", "ack"},
	"finish-wt":        {"nodes", "ack"},
	"write-through":    {"nodes"},
	"plan-load-back":   {"node"},
	"commit-load-back": {"node"},
	"finish-load-back": {"node"},
	"load-back":        {"node"},
	"host-lock":        {"node", "as"},
	"host-unlock":      {"node", "receipt", "forge"},
	"evict-host":       {"n", "comp"},
	"insert-host":      {"node", "tokens", "slots", "ns", "as"},
	"drop-subtree":     {"node"},
	"storage-spec":     {"node"},
	"backfill":         {},
	"linker-chain":     {"node"},
	"linker-pending":   {"nodes", "id"},
	"linker-finish":    {"nodes", "id", "ok"},
	"linker-stored":    {"node", "until"},
	"sanity-ongoing":   {"wt", "lb"},
}

// coreOnly lists the commands that only a core.Tree answers and that
// change nothing the other commands observe (hashes computes page digests
// of the storage chain, which events do not use): maskCoreOnly comments
// them out of an engine's copy of a script.
var coreOnly = map[string]bool{"hashes": true}

var parenList = regexp.MustCompile(`\([^)]*\)`)

// scriptCommand is one command of a script: its fields (parenthesised
// lists collapsed to "()") and its first and last line (0-based,
// inclusive: the command line through its output).
type scriptCommand struct {
	fields      []string
	first, last int
}

// scriptCommands splits a script into its commands, with the same
// framing as package transcript: a command starts after a blank or
// comment line, its output after "----" runs to a blank line, or between
// doubled separators.
func scriptCommands(lines []string) []scriptCommand {
	var cmds []scriptCommand
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := scriptCommand{fields: strings.Fields(parenList.ReplaceAllString(l, "()")), first: i}
		// Skip the command's input and output.
		for i+1 < len(lines) && lines[i+1] != "----" && strings.TrimSpace(lines[i+1]) != "" {
			i++
		}
		if i+1 < len(lines) && lines[i+1] == "----" {
			i++
			if i+1 < len(lines) && lines[i+1] == "----" {
				for i += 2; i+1 < len(lines) && !(lines[i] == "----" && lines[i+1] == "----"); i++ {
				}
				i++
			} else {
				for i+1 < len(lines) && lines[i+1] != "" {
					i++
				}
			}
		}
		c.last = min(i, len(lines)-1)
		cmds = append(cmds, c)
	}
	return cmds
}

func scriptLines(script string) []string {
	return strings.Split(strings.ReplaceAll(script, "\r\n", "\n"), "\n")
}

// unsupportedCommand says why the engine harness cannot run a script: a
// command or argument that is not an Engine operation. It returns "" when
// every command is supported.
func unsupportedCommand(script string) string {
	for _, c := range scriptCommands(scriptLines(script)) {
		known, ok := transcriptArgs[c.fields[0]]
		if !ok {
			return fmt.Sprintf("line %d: command %q is not an Engine operation", c.first+1, c.fields[0])
		}
		for _, f := range c.fields[1:] {
			key, _, _ := strings.Cut(f, "=")
			if !slices.Contains(known, key) {
				return fmt.Sprintf("line %d: %s takes argument %q, which the engine harness does not know", c.first+1, c.fields[0], key)
			}
		}
	}
	return ""
}

// maskCoreOnly comments out the coreOnly commands of a script, with their
// output, line for line (so positions in failures stay those of the
// original), and returns the new script and how many it masked.
func maskCoreOnly(script string) (string, int) {
	lines := scriptLines(script)
	n := 0
	for _, c := range scriptCommands(lines) {
		if !coreOnly[c.fields[0]] {
			continue
		}
		n++
		for k := c.first; k <= c.last; k++ {
			lines[k] = "# (core only) " + lines[k]
		}
	}
	return strings.Join(lines, "\n"), n
}

// engineTarget runs the transcripts on an engine: the inspection
// commands go through the engine's Inspector (the direct engine answers
// from its tree, the wire engines through ABI ops that Engine does not
// expose), and ids print in core form. UnlockSWA and
// EvictExcessPathStates (the unlock-swa and evict-excess commands) and
// the host-tier, storage and linker operations are Engine's own, with
// the harness's signatures (BackfillHashes aside, adapted below).
type engineTarget struct {
	Engine
	transcripttest.Inspector
}

func (e engineTarget) CoreID(id core.NodeID) core.NodeID   { return coreID(e.Engine, id) }
func (e engineTarget) TargetID(id core.NodeID) core.NodeID { return engineID(e.Engine, id) }

// LRUOrder answers the lru command: the direct engine from its tree, the
// wire engines through the lru_order op (which Engine does not expose).
// The harness's signature has no error: a failed call lists nothing.
func (e engineTarget) LRUOrder(c core.Component, host bool) []core.NodeID {
	ids, err := e.Engine.(lruLister).lruOrder(c, host)
	if err != nil {
		return nil
	}
	return ids
}

// BackfillHashes answers the backfill command. The harness's signature
// has no error: a failed call hashed nothing.
func (e engineTarget) BackfillHashes() int {
	n, err := e.Engine.BackfillHashes()
	if err != nil {
		return 0
	}
	return n
}

type lruLister interface {
	lruOrder(c core.Component, host bool) ([]core.NodeID, error)
}

var (
	_ transcripttest.Inspector        = (*directEngine)(nil)
	_ transcripttest.Inspector        = (*wireEngine)(nil)
	_ transcripttest.IDMapper         = engineTarget{}
	_ transcripttest.SWAUnlocker      = engineTarget{}
	_ transcripttest.PathStateEvictor = engineTarget{}
	_ transcripttest.LRUInspector     = engineTarget{}

	_ transcripttest.HostBackuper       = engineTarget{}
	_ transcripttest.Demoter            = engineTarget{}
	_ transcripttest.WriteThroughMarker = engineTarget{}
	_ transcripttest.LoadBacker         = engineTarget{}
	_ transcripttest.HostLocker         = engineTarget{}
	_ transcripttest.HostEvictor        = engineTarget{}
	_ transcripttest.HostInserter       = engineTarget{}
	_ transcripttest.SubtreeDropper     = engineTarget{}
	_ transcripttest.StorageSpecer      = engineTarget{}
	_ transcripttest.Linker             = engineTarget{}
	_ transcripttest.OngoingChecker     = engineTarget{}
	_ lruLister                         = (*directEngine)(nil)
	_ lruLister                         = (*wireEngine)(nil)
)

func (e *directEngine) lruOrder(c core.Component, host bool) ([]core.NodeID, error) {
	return e.t.LRUOrder(c, host), nil
}

func (e *wireEngine) lruOrder(c core.Component, host bool) ([]core.NodeID, error) {
	e.q.Component, e.q.Host = c, host
	defer func() { e.q.Component, e.q.Host = 0, false }()
	return e.nodeList(abi.OpLRUOrder)
}

func (e *directEngine) Root() (core.NodeID, error) { return e.t.Root(), nil }
func (e *directEngine) Inspect(id core.NodeID) (core.NodeInfo, error) {
	return e.t.Inspect(id)
}
func (e *directEngine) Nodes() ([]core.NodeID, error)        { return e.t.Nodes(), nil }
func (e *directEngine) DeviceLeaves() ([]core.NodeID, error) { return e.t.DeviceLeaves(), nil }
func (e *directEngine) DFSWeightOrder(ids []core.NodeID) ([]int, error) {
	return e.t.DFSWeightOrder(ids)
}
func (e *directEngine) LiveReceiptCount() (int, error) { return e.t.LiveReceiptCount(), nil }

func (e *wireEngine) Root() (core.NodeID, error) {
	s, err := e.stats()
	if err != nil {
		return 0, err
	}
	return e.fromWire(s.Root), nil
}

func (e *wireEngine) Inspect(id core.NodeID) (core.NodeInfo, error) {
	e.q.Node = e.toWire(id)
	err := e.roundTrip(abi.OpInspect)
	e.q.Node = 0
	if err != nil {
		return core.NodeInfo{}, err
	}
	info := e.r.Info
	info.ID, info.Parent = e.fromWire(info.ID), e.fromWire(info.Parent)
	for i, c := range info.Children {
		info.Children[i] = e.fromWire(c)
	}
	return info, nil
}

func (e *wireEngine) Nodes() ([]core.NodeID, error)        { return e.nodeList(abi.OpNodes) }
func (e *wireEngine) DeviceLeaves() ([]core.NodeID, error) { return e.nodeList(abi.OpDeviceLeaves) }

func (e *wireEngine) nodeList(op abi.Op) ([]core.NodeID, error) {
	if err := e.roundTrip(op); err != nil {
		return nil, err
	}
	ids := e.r.Nodes
	for i, id := range ids {
		ids[i] = e.fromWire(id)
	}
	return ids, nil
}

func (e *wireEngine) DFSWeightOrder(ids []core.NodeID) ([]int, error) {
	e.q.Nodes = make([]core.NodeID, len(ids))
	for i, id := range ids {
		e.q.Nodes[i] = e.toWire(id)
	}
	err := e.roundTrip(abi.OpDFSOrder)
	e.q.Nodes = nil
	if err != nil {
		return nil, err
	}
	out := make([]int, len(e.r.Order))
	for i, p := range e.r.Order {
		out[i] = int(p)
	}
	return out, nil
}

func (e *wireEngine) LiveReceiptCount() (int, error) {
	s, err := e.stats()
	if err != nil {
		return 0, err
	}
	return int(s.LiveReceipts), nil
}
