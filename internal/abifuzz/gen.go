package abifuzz

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/radixkv/radixkv/abi"
	"github.com/radixkv/radixkv/core"
)

// Kind is how a call was made.
type Kind int

const (
	// Structured calls are well-formed requests with random field values:
	// a known op on a live instance, node ids and receipts the guest
	// handed out, configurations near and past the valid ones.
	Structured Kind = iota
	// Mutated calls are corpus requests (golden vectors and earlier
	// structured calls) with bytes flipped, words overwritten by
	// boundary values, tails cut or added, chunks duplicated or spliced.
	Mutated
	// Random calls are random bytes, some behind a valid header.
	Random
	// BadBuffer calls pass radixkv_call a pointer that is not a live
	// allocation or a length past the buffer's end, or free a pointer
	// the guest never handed out.
	BadBuffer
	numKinds
)

var kindNames = [numKinds]string{"structured", "mutated", "random", "bad_buffer"}

func (k Kind) String() string { return kindNames[k] }

// maxLive bounds the cache instances the generator keeps alive, so the
// module's memory stays bounded by the stream's shape, not its length.
const maxLive = 8

// gen makes calls. It learns handles, node ids and receipts from the
// reference dispatcher's decoded responses.
type gen struct {
	r        *rand.Rand
	handles  []uint32
	ids      []core.NodeID
	receipts []core.Receipt
	corpus   [][]byte
	next     int // corpus ring position once full
	buf      []byte
	q        abi.Request
	match    uint64 // the id of the last structured match, for begin_insert_matched
}

const corpusCap = 1024

func newGen(seed uint64, seedCorpus [][]byte) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for _, c := range seedCorpus {
		g.remember(c)
	}
	return g
}

func (g *gen) remember(req []byte) {
	c := append([]byte(nil), req...)
	if len(g.corpus) < corpusCap {
		g.corpus = append(g.corpus, c)
		return
	}
	g.corpus[g.next] = c
	g.next = (g.next + 1) % corpusCap
}

// ops are the defined op codes, in a fixed order.
var ops = []abi.Op{
	abi.OpVersion, abi.OpCreate, abi.OpDestroy, abi.OpReset, abi.OpStats,
	abi.OpMatch, abi.OpInsert, abi.OpBeginInsert, abi.OpResumeInsert, abi.OpEndInsert,
	abi.OpLock, abi.OpUnlock, abi.OpEvict, abi.OpEvictStart, abi.OpEvictNext, abi.OpEvictEnd,
	abi.OpEvictExcessPathStates, abi.OpSanityCheck, abi.OpInspect, abi.OpRender,
	abi.OpDeviceLeaves, abi.OpNodes, abi.OpDFSOrder, abi.OpLRUOrder, abi.OpSanityCheckOngoing,
	abi.OpUnlockSWAEarly, abi.OpHostLock, abi.OpHostUnlock, abi.OpEvictHost, abi.OpCommitBackup,
	abi.OpLoadBack, abi.OpFinishLoadBack, abi.OpTakeEvents, abi.OpBackupSpec,
	abi.OpMarkWriteThroughPending, abi.OpFinishWriteThrough, abi.OpDemote, abi.OpDropSubtreeNoHost,
	abi.OpCommitLoadBack, abi.OpInsertHost, abi.OpStorageSpec, abi.OpBackfillHashes,
	abi.OpLinkerChain, abi.OpMarkLinkerPending, abi.OpFinishLinkerOffload, abi.OpMarkLinkerStoredPath,
	abi.OpBeginInsertMatched, abi.OpMatchLock, abi.OpBeginInsertMatchedUnlock,
}

// kind picks the next call's kind.
func (g *gen) kind() Kind {
	switch p := g.r.IntN(100); {
	case p < 55:
		return Structured
	case p < 88:
		return Mutated
	case p < 97:
		return Random
	default:
		return BadBuffer
	}
}

// request returns a call of kind k (not BadBuffer), valid until the next
// call to request.
func (g *gen) request(k Kind) []byte {
	switch k {
	case Structured:
		b := g.structured()
		if g.r.IntN(8) == 0 {
			g.remember(b)
		}
		return b
	case Mutated:
		if len(g.corpus) == 0 {
			return g.structured()
		}
		return g.mutated()
	default:
		return g.random()
	}
}

func (g *gen) pick32(vals []uint32) uint32 { return vals[g.r.IntN(len(vals))] }

// instance is a live handle most of the time, else 0, a destroyed or
// never-issued one.
func (g *gen) instance() uint32 {
	if len(g.handles) > 0 && g.r.IntN(10) != 0 {
		return g.handles[g.r.IntN(len(g.handles))]
	}
	return g.pick32([]uint32{0, 1, 2, 3, g.r.Uint32(), 1 << 31, ^uint32(0)})
}

func (g *gen) node() core.NodeID {
	if len(g.ids) > 0 && g.r.IntN(8) != 0 {
		return g.ids[g.r.IntN(len(g.ids))]
	}
	switch g.r.IntN(3) {
	case 0:
		return 0
	case 1:
		return core.NodeID(g.r.Uint64())
	}
	return core.NodeID(uint64(g.r.IntN(4)+1)<<32 | uint64(g.r.IntN(16)))
}

func (g *gen) nodes() []core.NodeID {
	out := make([]core.NodeID, g.r.IntN(4))
	for i := range out {
		out[i] = g.node()
	}
	return out
}

func (g *gen) receipt() core.Receipt {
	if len(g.receipts) > 0 && g.r.IntN(4) != 0 {
		rc := g.receipts[g.r.IntN(len(g.receipts))]
		if g.r.IntN(10) == 0 {
			rc.Serial ^= 1
		}
		return rc
	}
	return core.Receipt{Node: g.node(), Serial: g.r.Uint64N(8)}
}

// length is a small array length, sometimes a page-sized or large one.
func (g *gen) length() int {
	switch g.r.IntN(20) {
	case 0:
		return 0
	case 1:
		return 256 + g.r.IntN(2048)
	}
	return 1 + g.r.IntN(48)
}

// tokens come from a small alphabet so that keys share prefixes.
func (g *gen) tokens(n int) []uint32 {
	out := make([]uint32, n)
	base := uint32(g.r.IntN(4))
	for i := range out {
		if g.r.IntN(6) == 0 {
			out[i] = uint32(g.r.IntN(8))
		} else {
			out[i] = base + uint32(i)
		}
	}
	return out
}

func (g *gen) slots(n int) []int32 {
	out := make([]int32, n)
	base := int32(g.r.IntN(1 << 12))
	for i := range out {
		out[i] = base + int32(i)
	}
	if n > 0 && g.r.IntN(12) == 0 {
		out[g.r.IntN(n)] = []int32{-1, -7, 1 << 30, out[0]}[g.r.IntN(4)]
	}
	return out
}

func (g *gen) slotLists() [][]int32 {
	out := make([][]int32, g.r.IntN(3))
	for i := range out {
		out[i] = g.slots(g.r.IntN(6))
	}
	return out
}

func (g *gen) namespace() core.Namespace {
	if g.r.IntN(4) != 0 {
		return core.Namespace{}
	}
	names := []string{"", "a", "tenant-b", "\xff\xfe", "lora"}
	return core.Namespace{ExtraKey: names[g.r.IntN(len(names))], CacheSalt: names[g.r.IntN(len(names))], LoRA: names[g.r.IntN(len(names))]}
}

// validConfigs are configurations core accepts, one per component set
// and host-tier shape; config varies their page size and policy.
var validConfigs = []core.Config{
	{PageSize: 1},
	{PageSize: 4, KVEvents: true},
	{PageSize: 1, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 4},
	{PageSize: 1, Components: []core.Component{core.Full, core.Mamba}, MambaChunkSize: 1},
	{PageSize: 1, Components: []core.Component{core.Full, core.SWA, core.Mamba}, SWAWindow: 2, MambaChunkSize: 1, MambaMaxPathStates: 2},
	{PageSize: 1, HostTier: true},
	{PageSize: 2, HostTier: true, WritePolicy: core.WriteBack},
	{PageSize: 1, HostTier: true, ExternalLinker: true},
	{PageSize: 1, Components: []core.Component{core.Full, core.SWA}, SWAWindow: 2, HostTier: true, WritePolicy: core.WriteBack},
	{PageSize: 1, Bigram: true},
}

func (g *gen) config() core.Config {
	if g.r.IntN(4) != 0 {
		cfg := validConfigs[g.r.IntN(len(validConfigs))]
		cfg.Components = append([]core.Component(nil), cfg.Components...)
		if g.r.IntN(3) == 0 {
			cfg.Policy = core.PolicyNames()[g.r.IntN(len(core.PolicyNames()))]
		}
		return cfg
	}
	sets := [][]core.Component{{core.Full}, {core.Full, core.SWA}, {core.Full, core.Mamba}, {core.Full, core.SWA, core.Mamba}, {}, {core.SWA}, {core.Full, core.Full}, {core.Component(9)}}
	policies := append(core.PolicyNames(), "", "nope")
	cfg := core.Config{
		PageSize:   []int{1, 1, 2, 4, 16, 0, -1, 1 << 20}[g.r.IntN(8)],
		Components: sets[g.r.IntN(len(sets))],
		Policy:     policies[g.r.IntN(len(policies))],
		Bigram:     g.r.IntN(8) == 0,
		HostTier:   g.r.IntN(3) == 0,
		KVEvents:   g.r.IntN(4) == 0,
	}
	if g.r.IntN(2) == 0 {
		cfg.WritePolicy = core.WriteBack
	}
	if g.r.IntN(10) == 0 {
		cfg.WritePolicy = core.WritePolicy(7)
	}
	cfg.WriteThroughThreshold = []int{0, 0, 1, 2, -1}[g.r.IntN(5)]
	cfg.SWAWindow = []int{0, 1, 2, 8, 64, -3}[g.r.IntN(6)]
	cfg.MambaChunkSize = []int{0, 1, 2, 16, -1}[g.r.IntN(5)]
	cfg.MambaMaxPathStates = []int{0, 0, 1, 3, -2}[g.r.IntN(5)]
	cfg.ExternalLinker = cfg.HostTier && g.r.IntN(4) == 0
	cfg.HashConvention = core.HashConvention(g.r.IntN(3))
	return cfg
}

// structured encodes a well-formed request with random values.
func (g *gen) structured() []byte {
	q := &g.q
	*q = abi.Request{ID: g.r.Uint64N(1 << 20)}
	switch {
	case len(g.handles) >= maxLive && g.r.IntN(4) == 0:
		q.Op = abi.OpDestroy
	case len(g.handles) < 2 && g.r.IntN(2) == 0:
		q.Op = abi.OpCreate
	case g.r.IntN(200) == 0:
		q.Op = abi.OpDestroy
	default:
		q.Op = ops[g.r.IntN(len(ops))]
		if q.Op == abi.OpCreate && len(g.handles) >= maxLive {
			q.Op = abi.OpStats
		}
		if q.Op == abi.OpDestroy && g.r.IntN(4) != 0 {
			q.Op = abi.OpMatch // destroys stay rare, so trees grow some
		}
	}
	if q.Op.NeedsInstance() {
		q.Instance = g.instance()
	}
	switch q.Op {
	case abi.OpCreate:
		q.Config = g.config()
	case abi.OpMatch:
		q.Insert.Namespace, q.Insert.Tokens = g.namespace(), g.tokens(g.length())
		g.match = q.ID
	case abi.OpMatchLock:
		// Skip sets the lock mostly takes, sometimes not (full, or a
		// component the tree lacks): the match then stands.
		q.Insert.Namespace, q.Insert.Tokens = g.namespace(), g.tokens(g.length())
		if g.r.IntN(4) == 0 {
			q.Skip = core.ComponentSet(g.r.IntN(8))
		}
		g.match = q.ID
	case abi.OpBeginInsertMatched, abi.OpBeginInsertMatchedUnlock:
		// Mostly the last match (on whichever instance), with counts that
		// may exceed what it kept; the unlock names a learned receipt or
		// a made-up one.
		if q.Op == abi.OpBeginInsertMatchedUnlock {
			q.Receipt, q.SkipSWA = g.receipt(), g.r.IntN(4) == 0
			q.Node = q.Receipt.Node
			if g.r.IntN(4) == 0 {
				q.Node = g.node()
			}
		}
		n := g.length()
		q.Matched = abi.MatchedRef{MatchID: g.match, Tokens: uint32(g.r.IntN(n + 2)), Slots: uint32(g.r.IntN(n/2 + 2))}
		if g.r.IntN(4) == 0 {
			q.Matched.MatchID = g.r.Uint64N(1 << 20)
		}
		q.Insert = core.InsertParams{Namespace: g.namespace(), Slots: g.slots(n / 2),
			PrevPrefixLen: g.r.IntN(n + 2), MambaSlot: int32(g.r.IntN(64)) - 1}
	case abi.OpInsert, abi.OpBeginInsert:
		n := g.length()
		q.Insert = core.InsertParams{Namespace: g.namespace(), Tokens: g.tokens(n), Slots: g.slots(n),
			PrevPrefixLen: g.r.IntN(n + 2), Priority: int64(g.r.IntN(3)) - 1, Chunked: g.r.IntN(4) == 0,
			TrackAdopted: g.r.IntN(4) == 0, MambaSlot: int32(g.r.IntN(64)) - 1}
		if g.r.IntN(10) == 0 {
			q.Insert.Slots = q.Insert.Slots[:n/2]
		}
	case abi.OpInsertHost:
		n := g.length()
		q.Insert = core.InsertParams{Namespace: g.namespace(), Tokens: g.tokens(n), Slots: g.slots(n)}
		q.Node = g.node()
	case abi.OpLock, abi.OpHostLock:
		q.Node, q.Skip = g.node(), core.ComponentSet(g.r.IntN(8))
	case abi.OpUnlock, abi.OpUnlockSWAEarly, abi.OpHostUnlock:
		q.Receipt, q.SkipSWA = g.receipt(), g.r.IntN(2) == 0
	case abi.OpEvict, abi.OpEvictStart, abi.OpEvictHost:
		q.Component = core.Component(g.r.IntN(4))
		q.Want = []int64{0, 1, 16, 1000, -1, 1 << 40}[g.r.IntN(6)]
	case abi.OpLRUOrder:
		q.Component, q.Host = core.Component(g.r.IntN(4)), g.r.IntN(2) == 0
	case abi.OpDFSOrder, abi.OpMarkWriteThroughPending, abi.OpFinishWriteThrough,
		abi.OpMarkLinkerPending, abi.OpFinishLinkerOffload:
		q.Nodes = g.nodes()
		q.Ack = int64(g.r.IntN(4)) - 1
		q.OffloadID = int64(g.r.IntN(4)) - 1
		q.OK = g.r.IntN(2) == 0
	case abi.OpMarkLinkerStoredPath:
		q.Node, q.Until = g.node(), g.node()
	case abi.OpCommitBackup:
		q.Node = g.node()
		q.Backup = core.BackupCommit{Full: g.slots(g.r.IntN(6)), SWA: g.slotLists(), Mamba: int32(g.r.IntN(8)) - 1}
	case abi.OpCommitLoadBack:
		q.Node = g.node()
		q.LoadBack = core.LoadBackCommit{Full: g.slotLists(), SWA: g.slotLists(), Mamba: int32(g.r.IntN(8)) - 1}
	case abi.OpSanityCheckOngoing:
		q.Ongoing = core.Ongoing{WriteThrough: g.nodes(), LoadBack: g.nodes()}
	default:
		q.Node = g.node()
	}
	g.buf = abi.AppendRequest(g.buf[:0], q)
	return g.buf
}

// interesting32 are boundary values written over u32 fields (counts,
// handles, lengths).
var interesting32 = []uint32{0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}

// mutated is a corpus entry with one to four mutations.
func (g *gen) mutated() []byte {
	b := append(g.buf[:0], g.corpus[g.r.IntN(len(g.corpus))]...)
	for range 1 + g.r.IntN(4) {
		switch g.r.IntN(8) {
		case 0, 1: // flip a bit
			if len(b) > 0 {
				b[g.r.IntN(len(b))] ^= 1 << g.r.IntN(8)
			}
		case 2: // a boundary byte
			if len(b) > 0 {
				b[g.r.IntN(len(b))] = []byte{0, 1, 0x7f, 0x80, 0xff}[g.r.IntN(5)]
			}
		case 3: // a boundary word (often a count) in the body
			if len(b) >= 28 {
				off := 24 + g.r.IntN(len(b)-27)
				binary.LittleEndian.PutUint32(b[off:], g.pick32(interesting32))
			}
		case 4: // cut the tail
			if len(b) > 0 {
				b = b[:g.r.IntN(len(b))]
			}
		case 5: // add random bytes
			for range 1 + g.r.IntN(8) {
				b = append(b, byte(g.r.Uint32()))
			}
		case 6: // duplicate a chunk
			if len(b) > 1 {
				i := g.r.IntN(len(b))
				j := i + g.r.IntN(min(len(b)-i, 64))
				b = append(b[:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
			}
		case 7: // splice another entry's tail
			o := g.corpus[g.r.IntN(len(g.corpus))]
			if len(b) > 0 && len(o) > 0 {
				b = append(b[:g.r.IntN(len(b))], o[g.r.IntN(len(o)):]...)
			}
		}
	}
	// Mutations may rename the instance: keep it live half the time, so
	// the body reaches the op's decoder.
	if len(b) >= 12 && len(g.handles) > 0 && g.r.IntN(2) == 0 {
		op := abi.Op(binary.LittleEndian.Uint16(b[6:]))
		if op.NeedsInstance() {
			binary.LittleEndian.PutUint32(b[8:], g.handles[g.r.IntN(len(g.handles))])
		}
	}
	g.buf = b
	return b
}

// random is random bytes, behind a valid header a third of the time.
func (g *gen) random() []byte {
	b := g.buf[:0]
	if g.r.IntN(3) == 0 {
		b = abi.AppendRequest(b, &abi.Request{Op: ops[g.r.IntN(len(ops))], Instance: g.instance()})
		b = b[:24]
	}
	for range g.r.IntN(64) {
		b = append(b, byte(g.r.Uint32()))
	}
	g.buf = b
	return b
}

// learn takes handles, node ids and receipts from a decoded reference
// response.
func (g *gen) learn(r *abi.Response) {
	if r.Status != abi.StatusOK {
		return
	}
	switch r.Op {
	case abi.OpCreate:
		g.handles = append(g.handles, r.Handle)
	case abi.OpDestroy:
		for i, h := range g.handles {
			if h == r.Instance {
				g.handles = append(g.handles[:i], g.handles[i+1:]...)
				break
			}
		}
	}
	add := func(id core.NodeID) {
		if id == 0 {
			return
		}
		if len(g.ids) < 256 {
			g.ids = append(g.ids, id)
		} else {
			g.ids[g.r.IntN(len(g.ids))] = id
		}
	}
	add(r.Root)
	add(r.Node)
	add(r.Match.LastDevice)
	add(r.Match.LastHost)
	add(r.Match.Best)
	add(r.Insert.LastDevice)
	for _, id := range r.Nodes {
		add(id)
	}
	if r.Receipt.Node != 0 {
		if len(g.receipts) < 64 {
			g.receipts = append(g.receipts, r.Receipt)
		} else {
			g.receipts[g.r.IntN(len(g.receipts))] = r.Receipt
		}
	}
}
