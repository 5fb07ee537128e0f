package core

import (
	"fmt"
	"strconv"
	"strings"
)

// ActionKind names what the host must do. The tree never touches memory
// pools: every slot it frees, copies or remaps reaches the host as an
// action, and the host executes actions in the order given.
type ActionKind uint8

const (
	// ActionFreeDeviceKV: free Slots in the device Full pool, and the SWA
	// slots they map to when the tree has SWA. Emitted by insert for
	// incoming slots that duplicate what the tree already holds.
	ActionFreeDeviceKV ActionKind = iota + 1
	// ActionFreeDeviceKVFullOnly: free Slots in the device Full pool only
	// (their SWA side was already released by the request).
	ActionFreeDeviceKVFullOnly
	// ActionBackupKV: copy Nodes (ancestors first) from device to host,
	// then report completion. A barrier: the host runs it before resuming.
	ActionBackupKV
	// ActionReplaceWriteThroughOnSplit: a node with a pending
	// write-through (Ack) was split; in the publish list replace Nodes[0]
	// by Nodes[1], Nodes[2].
	ActionReplaceWriteThroughOnSplit
	// ActionFreeDeviceSlots: free Slots of Component's device pool
	// (eviction). For SWA, Slots are the node's Full slots to translate.
	ActionFreeDeviceSlots
	// ActionFreeHostSlots: free Slots of Component's host pool.
	ActionFreeHostSlots
	// ActionSWARebuild: Node's SWA value is now the SWA translation of its
	// Full Slots; the host checks (or builds) that mapping. A barrier.
	ActionSWARebuild
	// ActionRecoverSWAWithLockedFull: Node, an SWA tombstone whose Full
	// slots (Slots) are locked, takes the request's SWA slots instead: map
	// each Slots[k] to the SWA slot of Incoming[k], unmap Incoming and free
	// Incoming in the Full pool only. A barrier.
	ActionRecoverSWAWithLockedFull
	// ActionMambaEvictExcessPathStates: call Tree.EvictExcessPathStates on
	// Node and execute its frees. A barrier.
	ActionMambaEvictExcessPathStates
	// ActionRebuildFullToSWAMapping: a load-back restored Node's SWA data
	// into the device SWA slots Incoming; map each Full slot Slots[k] to
	// Incoming[k].
	ActionRebuildFullToSWAMapping
)

var actionNames = [...]string{
	ActionFreeDeviceKV:               "FreeDeviceKV",
	ActionFreeDeviceKVFullOnly:       "FreeDeviceKVFullOnly",
	ActionBackupKV:                   "BackupKV",
	ActionReplaceWriteThroughOnSplit: "ReplaceWriteThroughOnSplit",
	ActionFreeDeviceSlots:            "FreeDeviceSlots",
	ActionFreeHostSlots:              "FreeHostSlots",
	ActionSWARebuild:                 "SWARebuild",
	ActionRecoverSWAWithLockedFull:   "RecoverSWAWithLockedFull",
	ActionMambaEvictExcessPathStates: "MambaEvictExcessPathStates",
	ActionRebuildFullToSWAMapping:    "RebuildFullToSWAMapping",
}

// String returns the kind's name.
func (k ActionKind) String() string {
	if int(k) < len(actionNames) && actionNames[k] != "" {
		return actionNames[k]
	}
	return "ActionKind(" + strconv.Itoa(int(k)) + ")"
}

// deferrable reports whether the host may batch the action until the next
// barrier; every other kind suspends a resumable insert.
func (k ActionKind) deferrable() bool {
	switch k {
	case ActionFreeDeviceKV, ActionFreeDeviceKVFullOnly, ActionReplaceWriteThroughOnSplit:
		return true
	}
	return false
}

// Action is one unit of work for the host. Which fields are set depends on
// Kind (see each kind's doc). Slots are valid until the next call on the
// tree: they may alias the caller's own input (Insert's duplicate frees)
// or a tree-owned buffer that the next eviction reuses. Execute actions
// right away, or copy Slots to keep them.
type Action struct {
	Kind      ActionKind
	Component Component
	Node      NodeID
	Nodes     []NodeID
	Ack       int64
	Slots     []int32
	// Incoming is the request's slots for ActionRecoverSWAWithLockedFull
	// and the device SWA slots for ActionRebuildFullToSWAMapping.
	Incoming []int32
}

// String renders the action on one line, deterministically.
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(a.Kind.String())
	switch a.Kind {
	case ActionFreeDeviceSlots, ActionFreeHostSlots:
		fmt.Fprintf(&b, " %s node=%v", a.Component, a.Node)
	case ActionBackupKV:
		b.WriteString(" nodes=")
		writeIDs(&b, a.Nodes)
	case ActionReplaceWriteThroughOnSplit:
		fmt.Fprintf(&b, " ack=%d nodes=", a.Ack)
		writeIDs(&b, a.Nodes)
	case ActionSWARebuild, ActionRecoverSWAWithLockedFull, ActionMambaEvictExcessPathStates, ActionRebuildFullToSWAMapping:
		fmt.Fprintf(&b, " node=%v", a.Node)
	}
	if a.Slots != nil {
		b.WriteString(" slots=")
		writeInts(&b, a.Slots)
	}
	if a.Incoming != nil {
		b.WriteString(" incoming=")
		writeInts(&b, a.Incoming)
	}
	return b.String()
}

// FormatActions renders a list of actions, one per line.
func FormatActions(acts []Action) string {
	var b strings.Builder
	for _, a := range acts {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func writeIDs(b *strings.Builder, ids []NodeID) {
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(id.String())
	}
	b.WriteByte(']')
}

// writeInts renders a slice compactly: runs of consecutive values collapse
// to a-b, so long slot lists stay readable in transcripts.
func writeInts[T ~int32 | ~uint32](b *strings.Builder, v []T) {
	b.WriteByte('[')
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(int64(v[i]), 10))
		if j-i >= 2 {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(int64(v[j]), 10))
			i = j + 1
		} else {
			i++
		}
	}
	b.WriteByte(']')
}
