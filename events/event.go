package events

import (
	"errors"
	"fmt"

	"github.com/radixkv/radixkv/core"
)

// Kind names a KV cache event.
type Kind uint8

const (
	// BlockStored: blocks became cached on a medium.
	BlockStored Kind = iota + 1
	// BlockRemoved: blocks left a medium.
	BlockRemoved
	// AllBlocksCleared: the worker's cache was reset.
	AllBlocksCleared
)

// tag returns the wire tag of the kind ("BlockStored", ...).
func (k Kind) tag() string {
	switch k {
	case BlockStored:
		return "BlockStored"
	case BlockRemoved:
		return "BlockRemoved"
	case AllBlocksCleared:
		return "AllBlocksCleared"
	}
	return ""
}

// String returns the wire tag, or Kind(n) for an unknown kind.
func (k Kind) String() string {
	if s := k.tag(); s != "" {
		return s
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Medium names of the wire. Engines publish free-form strings; these are
// the ones radixkv and the engines it speaks with use.
const (
	MediumGPU       = "GPU"
	MediumCPUPinned = "CPU_PINNED"
	MediumCPUTier1  = "CPU_TIER1"
	MediumCPUTier2  = "CPU_TIER2"
)

// Event is one KV cache event with every field either dialect carries.
// Fields a dialect does not have are dropped when encoding in it; fields
// absent from a payload decode to their zero value with the Has flag false.
type Event struct {
	Kind Kind
	// BlockHashes names the blocks in path order. Hashes that arrive as
	// byte strings (vLLM's ExternalBlockHash) are folded to their last
	// eight bytes, big-endian.
	BlockHashes []int64
	// ParentBlockHash is the block before the first one (HasParent false
	// directly under the root, encoded as nil).
	ParentBlockHash int64
	HasParent       bool
	// TokenIDs holds the blocks' tokens (BlockStored only). SGLang bigram
	// pages (token pairs) are flattened.
	TokenIDs []uint32
	// BlockSize is the block size in tokens (BlockStored only).
	BlockSize int
	// LoRAID is the deprecated numeric adapter id (HasLoRAID false: nil).
	LoRAID    int64
	HasLoRAID bool
	// Medium is the wire medium string; empty means nil (absent).
	Medium string
	// LoRAName is the adapter name; empty means nil.
	LoRAName string
	// CacheSalt and SessionID (SGLang only); empty means nil.
	CacheSalt string
	SessionID string
	// ExtraKeys is vLLM's per-block extra_keys list, kept as the raw
	// msgpack value so that it survives a round trip; nil means absent.
	ExtraKeys []byte
	// GroupIdx is vLLM's KV cache group (hybrid models), HasGroupIdx false
	// when absent.
	GroupIdx    int
	HasGroupIdx bool
	// SpecKind is vLLM's kv_cache_spec_kind (for example "full_attention",
	// "sliding_window", "mamba"); empty means absent.
	SpecKind string
	// SlidingWindow is kv_cache_spec_sliding_window in tokens; 0 absent.
	SlidingWindow int
}

// Batch is what one wire message carries: a timestamp (seconds), the
// events in order, and optionally the data-parallel rank that produced
// them (vLLM's data_parallel_rank, SGLang's attn_dp_rank).
type Batch struct {
	TS        float64
	Events    []Event
	DPRank    int
	HasDPRank bool
	// Skipped counts events of an unknown type that decoding ignored.
	Skipped int
}

// Errors returned by this package. Decoding errors are *DecodeError values
// that match ErrMalformed with errors.Is.
var (
	ErrMalformed     = errors.New("events: malformed payload")
	ErrInvalidFormat = errors.New("events: invalid format")
	ErrInvalidEvent  = errors.New("events: invalid event")
)

// DecodeError says where in a payload decoding failed.
type DecodeError struct {
	// Path is where the value sits, for example "events[2].block_hashes".
	Path string
	// Err is the underlying cause.
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("events: malformed payload at %s: %v", e.Path, e.Err)
}

// Unwrap lets errors.Is match ErrMalformed and the cause.
func (e *DecodeError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

// FromCore converts an event recorded by a core.Tree.
func FromCore(e core.Event) (Event, error) {
	out := Event{
		BlockHashes:     e.BlockHashes,
		ParentBlockHash: e.ParentBlockHash,
		HasParent:       e.HasParent,
		TokenIDs:        e.TokenIDs,
		BlockSize:       e.BlockSize,
		CacheSalt:       e.CacheSalt,
		SessionID:       e.SessionID,
		LoRAName:        e.LoRA,
	}
	switch e.Kind {
	case core.EventBlockStored:
		out.Kind = BlockStored
		out.Medium = e.Medium.String()
	case core.EventBlockRemoved:
		out.Kind = BlockRemoved
		out.Medium = e.Medium.String()
		out.TokenIDs, out.BlockSize, out.HasParent, out.ParentBlockHash = nil, 0, false, 0
	case core.EventAllBlocksCleared:
		out = Event{Kind: AllBlocksCleared}
	default:
		return Event{}, fmt.Errorf("%w: unknown core event kind %d", ErrInvalidEvent, e.Kind)
	}
	return out, nil
}

// FromCoreEvents converts a slice of core events (see FromCore).
func FromCoreEvents(evs []core.Event) ([]Event, error) {
	out := make([]Event, 0, len(evs))
	for i, e := range evs {
		c, err := FromCore(e)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Validate checks what an encoder needs: a known kind, and for stores at
// least one block, a positive block size and block_size tokens per block.
func (e *Event) Validate() error {
	switch e.Kind {
	case BlockStored:
		if len(e.BlockHashes) == 0 {
			return fmt.Errorf("%w: BlockStored without block hashes", ErrInvalidEvent)
		}
		if e.BlockSize <= 0 {
			return fmt.Errorf("%w: BlockStored block_size %d, want ≥ 1", ErrInvalidEvent, e.BlockSize)
		}
	case BlockRemoved:
		if len(e.BlockHashes) == 0 {
			return fmt.Errorf("%w: BlockRemoved without block hashes", ErrInvalidEvent)
		}
	case AllBlocksCleared:
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrInvalidEvent, e.Kind)
	}
	return nil
}
