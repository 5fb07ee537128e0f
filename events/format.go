package events

import (
	"fmt"
	"strings"
)

// Dialect is the engine whose field layout a payload follows.
type Dialect uint8

const (
	// VLLM is vLLM's vllm/distributed/kv_events.py layout.
	VLLM Dialect = iota
	// SGLang is SGLang's python/sglang/srt/disaggregation/kv_events.py layout.
	SGLang
)

// String returns "vllm" or "sglang".
func (d Dialect) String() string {
	if d == SGLang {
		return "sglang"
	}
	return "vllm"
}

// Shape is how structs are laid out in msgpack.
type Shape uint8

const (
	// Array lays events out as tagged arrays ["BlockStored", f1, f2, ...]
	// and the batch as [ts, events, dp_rank]; trailing fields that hold
	// their default are omitted (msgspec array_like + omit_defaults).
	Array Shape = iota
	// Map lays events out as maps with a "type" key and the batch as a map
	// with "ts", "events" and the rank key; defaulted fields that hold
	// their default are omitted (msgspec tag=True + omit_defaults).
	Map
)

// String returns "array" or "map".
func (s Shape) String() string {
	if s == Map {
		return "map"
	}
	return "array"
}

// Layout versions. A version fixes the field list of every struct.
const (
	// V0 is the first published layout, shared by both dialects:
	// BlockStored(block_hashes, parent_block_hash, token_ids, block_size,
	// lora_id), BlockRemoved(block_hashes), batch (ts, events).
	V0 = 0
	// V1 is the current layout of each dialect (see SPEC.md).
	V1 = 1
	// Latest is the newest version this package writes.
	Latest = V1
)

// Format names the dialect, shape and layout version an encoder writes.
// Decoding needs no format: it accepts every dialect, shape and version.
type Format struct {
	Dialect Dialect
	Shape   Shape
	Version int
}

// Formats this package writes, for tests and flags.
var (
	VLLMArray   = Format{VLLM, Array, Latest}
	VLLMMap     = Format{VLLM, Map, Latest}
	SGLangArray = Format{SGLang, Array, Latest}
	SGLangMap   = Format{SGLang, Map, Latest}
)

// AllFormats lists every format an encoder accepts, in a fixed order.
func AllFormats() []Format {
	var out []Format
	for _, d := range []Dialect{VLLM, SGLang} {
		for _, s := range []Shape{Array, Map} {
			for v := V0; v <= Latest; v++ {
				out = append(out, Format{d, s, v})
			}
		}
	}
	return out
}

// String renders the format as dialect/shape/vN, e.g. "vllm/array/v1".
func (f Format) String() string {
	return fmt.Sprintf("%s/%s/v%d", f.Dialect, f.Shape, f.Version)
}

// ParseFormat reads a format written by Format.String; the version may be
// left out ("sglang/map" means the latest).
func ParseFormat(s string) (Format, error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "/")
	if len(parts) < 2 || len(parts) > 3 {
		return Format{}, fmt.Errorf("%w: %q, want dialect/shape[/vN] such as vllm/array/v1", ErrInvalidFormat, s)
	}
	var f Format
	switch parts[0] {
	case "vllm":
		f.Dialect = VLLM
	case "sglang":
		f.Dialect = SGLang
	default:
		return Format{}, fmt.Errorf("%w: dialect %q, want vllm or sglang", ErrInvalidFormat, parts[0])
	}
	switch parts[1] {
	case "array":
		f.Shape = Array
	case "map":
		f.Shape = Map
	default:
		return Format{}, fmt.Errorf("%w: shape %q, want array or map", ErrInvalidFormat, parts[1])
	}
	f.Version = Latest
	if len(parts) == 3 {
		switch parts[2] {
		case "v0":
			f.Version = V0
		case "v1":
			f.Version = V1
		default:
			return Format{}, fmt.Errorf("%w: version %q, want v0 or v1", ErrInvalidFormat, parts[2])
		}
	}
	return f, nil
}

func (f Format) validate() error {
	if f.Dialect > SGLang || f.Shape > Map || f.Version < V0 || f.Version > Latest {
		return fmt.Errorf("%w: %+v", ErrInvalidFormat, f)
	}
	return nil
}

// field ids: every wire field either dialect knows.
type field uint8

const (
	fBlockHashes field = iota
	fParent
	fTokenIDs
	fBlockSize
	fLoRAID
	fMedium
	fLoRAName
	fExtraKeys
	fGroupIdx
	fSpecKind
	fSlidingWindow
	fCacheSalt
	fSessionID
	numFields
)

var fieldNames = [numFields]string{
	fBlockHashes:   "block_hashes",
	fParent:        "parent_block_hash",
	fTokenIDs:      "token_ids",
	fBlockSize:     "block_size",
	fLoRAID:        "lora_id",
	fMedium:        "medium",
	fLoRAName:      "lora_name",
	fExtraKeys:     "extra_keys",
	fGroupIdx:      "group_idx",
	fSpecKind:      "kv_cache_spec_kind",
	fSlidingWindow: "kv_cache_spec_sliding_window",
	fCacheSalt:     "cache_salt",
	fSessionID:     "session_id",
}

func fieldByName(s string) (field, bool) {
	for i, n := range fieldNames {
		if n == s {
			return field(i), true
		}
	}
	return 0, false
}

// layout is one struct's field list: the positional order, and how many
// leading fields are required (always written, nil when unset); the rest
// have a default (None) and are omitted while they hold it.
type layout struct {
	fields   []field
	required int
}

// layouts returns the BlockStored and BlockRemoved layouts of a format,
// and the batch's rank key ("" when the batch has none).
func (f Format) layouts() (stored, removed layout, rankKey string) {
	if f.Version == V0 {
		return layout{[]field{fBlockHashes, fParent, fTokenIDs, fBlockSize, fLoRAID}, 5},
			layout{[]field{fBlockHashes}, 1}, ""
	}
	if f.Dialect == SGLang {
		return layout{[]field{fBlockHashes, fParent, fTokenIDs, fBlockSize, fLoRAID,
				fMedium, fCacheSalt, fSessionID, fLoRAName}, 5},
			layout{[]field{fBlockHashes, fMedium}, 1}, "attn_dp_rank"
	}
	return layout{[]field{fBlockHashes, fParent, fTokenIDs, fBlockSize, fLoRAID,
			fMedium, fLoRAName, fExtraKeys, fGroupIdx, fSpecKind, fSlidingWindow}, 7},
		layout{[]field{fBlockHashes, fMedium, fGroupIdx}, 2}, "data_parallel_rank"
}
