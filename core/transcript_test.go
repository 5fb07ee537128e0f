package core_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/internal/transcripttest"
)

// TestTranscripts replays every testdata/*.txt script against a tree and
// compares each command's output with the recorded one (the commands are
// those of package internal/transcripttest). Regenerate with
//
//	go test ./core -run TestTranscripts -rewrite
//
// and review the diff like code.
func TestTranscripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no transcript scripts in testdata")
	opts := transcripttest.Options{New: func(cfg core.Config) (transcripttest.Target, error) {
		tree, err := core.New(cfg)
		if err != nil {
			return nil, err
		}
		return treeTarget{tree}, nil
	}}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) { transcripttest.Run(t, path, opts) })
	}
}

// treeTarget adapts a tree to the transcript harness, with every optional
// capability: the methods below give the tree's answers the harness's
// signatures, which return errors as an engine's do.
type treeTarget struct{ *core.Tree }

var (
	_ transcripttest.Inspector        = treeTarget{}
	_ transcripttest.TreeIntrospector = treeTarget{}
	// The tree's own methods already have the harness's signatures.
	_ transcripttest.SWAUnlocker        = treeTarget{}
	_ transcripttest.PathStateEvictor   = treeTarget{}
	_ transcripttest.LRUInspector       = treeTarget{}
	_ transcripttest.HostBackuper       = treeTarget{}
	_ transcripttest.Demoter            = treeTarget{}
	_ transcripttest.WriteThroughMarker = treeTarget{}
	_ transcripttest.LoadBacker         = treeTarget{}
	_ transcripttest.HostLocker         = treeTarget{}
	_ transcripttest.HostEvictor        = treeTarget{}
	_ transcripttest.HostInserter       = treeTarget{}
	_ transcripttest.SubtreeDropper     = treeTarget{}
	_ transcripttest.StorageSpecer      = treeTarget{}
	_ transcripttest.Linker             = treeTarget{}
	_ transcripttest.OngoingChecker     = treeTarget{}
)

func (t treeTarget) EndInsert() ([]core.Action, error)    { return t.Tree.EndInsert(), nil }
func (t treeTarget) EvictEnd() error                      { t.Tree.EvictEnd(); return nil }
func (t treeTarget) Render() (string, error)              { return t.Tree.Render(), nil }
func (t treeTarget) Reset() error                         { t.Tree.Reset(); return nil }
func (t treeTarget) Root() (core.NodeID, error)           { return t.Tree.Root(), nil }
func (t treeTarget) Nodes() ([]core.NodeID, error)        { return t.Tree.Nodes(), nil }
func (t treeTarget) DeviceLeaves() ([]core.NodeID, error) { return t.Tree.DeviceLeaves(), nil }
func (t treeTarget) LiveReceiptCount() (int, error)       { return t.Tree.LiveReceiptCount(), nil }
