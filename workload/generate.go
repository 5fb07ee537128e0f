package workload

import (
	"container/heap"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Mix weighs the kinds of session the generator starts: each new session is
// of a kind chosen with probability proportional to its weight.
type Mix struct {
	Chat    int // multi-turn chats behind shared system prompts
	Agent   int // tool-using agents behind long shared tool prompts
	FewShot int // batches of questions behind a shared prefix of examples
	DocQA   int // many questions over one long document
}

// GenConfig configures [Generate]. Start from [DefaultGenConfig] and change
// what you need; Generate rejects out-of-range fields rather than guessing.
type GenConfig struct {
	// Seed selects the workload; equal configurations give equal workloads.
	Seed uint64
	// Requests is the number of requests to generate, in 1..1<<24.
	Requests int
	// Tenants is the number of tenants. Above 1, each session belongs to a
	// tenant "tenant-N" (N in 0..Tenants-1) named by its requests'
	// Namespace; 0 or 1 leaves Namespace empty. At most 1<<16.
	Tenants int
	// VocabSize bounds token ids: every token is in [0, VocabSize). In
	// 256..1<<20.
	VocabSize int
	// Mix weighs the kinds of session; weights are non-negative and at least
	// one is positive.
	Mix Mix
	// SystemPrompts, ToolPrompts, FewShotTemplates and Documents are the
	// sizes of the shared pools that chats, agents, few-shot batches and
	// document QA sessions draw their prefixes from. Each is in 1..1<<12
	// when its kind has a positive weight.
	SystemPrompts    int
	ToolPrompts      int
	FewShotTemplates int
	Documents        int
	// SessionGapMs is the mean time between the arrivals of two sessions, in
	// milliseconds (gaps are roughly exponentially distributed), in
	// 0..86400000.
	SessionGapMs int64
}

// DefaultGenConfig returns the configuration of the default workload: 2000
// requests from a mix of chats, agents, few-shot batches and document QA,
// with no tenants and a vocabulary of 128256 tokens.
func DefaultGenConfig() GenConfig {
	return GenConfig{
		Seed:             1,
		Requests:         2000,
		VocabSize:        128256,
		Mix:              Mix{Chat: 50, Agent: 15, FewShot: 10, DocQA: 25},
		SystemPrompts:    4,
		ToolPrompts:      3,
		FewShotTemplates: 4,
		Documents:        24,
		SessionGapMs:     1000,
	}
}

func (c *GenConfig) validate() error {
	inRange := func(name string, v, lo, hi int64) error {
		if v < lo || v > hi {
			return fmt.Errorf("workload: GenConfig.%s %d out of range [%d, %d]", name, v, lo, hi)
		}
		return nil
	}
	m := c.Mix
	errs := []error{
		inRange("Requests", int64(c.Requests), 1, 1<<24),
		inRange("Tenants", int64(c.Tenants), 0, 1<<16),
		inRange("VocabSize", int64(c.VocabSize), 256, 1<<20),
		inRange("Mix.Chat", int64(m.Chat), 0, 1<<20),
		inRange("Mix.Agent", int64(m.Agent), 0, 1<<20),
		inRange("Mix.FewShot", int64(m.FewShot), 0, 1<<20),
		inRange("Mix.DocQA", int64(m.DocQA), 0, 1<<20),
		inRange("SessionGapMs", c.SessionGapMs, 0, 86_400_000),
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if m.Chat+m.Agent+m.FewShot+m.DocQA == 0 {
		return errors.New("workload: GenConfig.Mix has no positive weight")
	}
	for _, p := range []struct {
		name   string
		weight int
		n      int
	}{
		{"SystemPrompts", m.Chat, c.SystemPrompts},
		{"ToolPrompts", m.Agent, c.ToolPrompts},
		{"FewShotTemplates", m.FewShot, c.FewShotTemplates},
		{"Documents", m.DocQA, c.Documents},
	} {
		if p.weight > 0 {
			errs = append(errs, inRange(p.name, int64(p.n), 1, 1<<12))
		}
	}
	return errors.Join(errs...)
}

// Generate returns cfg.Requests requests of a mixed serving workload, in
// order of arrival (non-decreasing Timestamp). The package documentation
// describes the mix. It is deterministic: the same cfg gives the same
// requests on every machine (for a given Go release).
func Generate(cfg GenConfig) ([]Request, error) {
	st, err := newGenState(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]Request, 0, cfg.Requests)
	for {
		r, ok := st.next()
		if !ok {
			return out, nil
		}
		out = append(out, r)
	}
}

// genState is Generate one request at a time (GenerateStream runs it on a
// goroutine of its own): the same requests in the same order.
type genState struct {
	cfg         GenConfig
	g           *generator
	q           eventQueue
	seq         uint64
	nextArrival int64
	made        int
	ids         map[blockKey]int64 // hash ids by block, in order of first appearance
}

func newGenState(cfg GenConfig) (*genState, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	st := &genState{cfg: cfg, ids: make(map[blockKey]int64)}
	st.g = newGenerator(&st.cfg)
	return st, nil
}

// next returns the next request, or false after the last.
func (st *genState) next() (Request, bool) {
	if st.made == st.cfg.Requests {
		return Request{}, false
	}
	for {
		if len(st.q) == 0 || st.nextArrival <= st.q[0].at {
			st.seq++
			heap.Push(&st.q, event{at: st.nextArrival, seq: st.seq, s: st.g.newSession()})
			st.nextArrival += st.g.expGap(st.cfg.SessionGapMs)
			continue
		}
		ev := heap.Pop(&st.q).(event)
		r := st.g.next(ev.s, ev.at)
		if ev.s.left > 0 {
			st.seq++
			heap.Push(&st.q, event{at: ev.at + st.g.between64(ev.s.gapLo, ev.s.gapHi), seq: st.seq, s: ev.s})
		}
		st.made++
		assignHashIDs(&r, st.ids)
		return r, true
	}
}

type sessionKind uint8

const (
	kindChat sessionKind = iota
	kindAgent
	kindFewShot
	kindDocQA
)

// Template tokens. Ordinary role and newline tokens sit at the bottom of the
// vocabulary, special tokens at its top, like a chat template's.
const (
	tokRoleSystem    = 1
	tokRoleUser      = 2
	tokRoleAssistant = 3
	tokRoleTool      = 4
	tokNewline       = 5
	firstBodyToken   = 8 // body tokens are in [firstBodyToken, VocabSize-specialTokens)
	specialTokens    = 8 // reserved at the top of the vocabulary
	specBOS          = 1 // VocabSize - specBOS is begin-of-text
	specStartHeader  = 2 // VocabSize - specStartHeader opens a role header
	specEndHeader    = 3 // VocabSize - specEndHeader closes it
	specEOT          = 4 // VocabSize - specEOT ends a message
	blockHashOffset  = 14695981039346656037
	blockHashPrime   = 1099511628211
	gapUnit          = 693 // ln 2 in thousandths
)

type session struct {
	kind         sessionKind
	ns           string
	ctx          []uint32 // chat, agent: the conversation so far; few-shot, doc QA: the shared prefix
	left         int      // requests still to send
	gapLo, gapHi int64    // time between two requests, in ms
}

type generator struct {
	cfg        *GenConfig
	r          *rand.Rand
	vocab      uint32
	tenants    []string
	system     [][]uint32
	tools      [][]uint32
	fewshot    [][]uint32
	docs       [][]uint32
	mixTotal   int
	bodyTokens int
}

func newGenerator(cfg *GenConfig) *generator {
	g := &generator{
		cfg:        cfg,
		r:          rand.New(rand.NewPCG(cfg.Seed, 0x7261646978_6b76)),
		vocab:      uint32(cfg.VocabSize),
		mixTotal:   cfg.Mix.Chat + cfg.Mix.Agent + cfg.Mix.FewShot + cfg.Mix.DocQA,
		bodyTokens: cfg.VocabSize - specialTokens - firstBodyToken,
	}
	if cfg.Tenants > 1 {
		g.tenants = make([]string, cfg.Tenants)
		for i := range g.tenants {
			g.tenants[i] = fmt.Sprintf("tenant-%d", i)
		}
	}
	if cfg.Mix.Chat > 0 {
		for range cfg.SystemPrompts {
			p := g.bos(nil)
			p = g.message(p, tokRoleSystem, g.between(600, 2000))
			g.system = append(g.system, clip(p))
		}
	}
	if cfg.Mix.Agent > 0 {
		for range cfg.ToolPrompts {
			p := g.bos(nil)
			p = g.message(p, tokRoleSystem, g.between(3000, 8000))
			g.tools = append(g.tools, clip(p))
		}
	}
	if cfg.Mix.FewShot > 0 {
		for range cfg.FewShotTemplates {
			target := g.between(1000, 3000)
			p := g.bos(nil)
			p = g.message(p, tokRoleSystem, g.between(50, 150))
			for len(p) < target {
				p = g.message(p, tokRoleUser, g.skewed(30, 150))
				p = g.message(p, tokRoleAssistant, g.skewed(10, 80))
			}
			g.fewshot = append(g.fewshot, clip(p))
		}
	}
	if cfg.Mix.DocQA > 0 {
		instruction := g.message(g.bos(nil), tokRoleSystem, 64)
		for range cfg.Documents {
			p := append([]uint32(nil), instruction...)
			p = g.message(p, tokRoleUser, g.between(2000, 12000))
			g.docs = append(g.docs, clip(p))
		}
	}
	return g
}

func clip(s []uint32) []uint32 { return s[:len(s):len(s)] }

// between returns an int uniformly in [lo, hi].
func (g *generator) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func (g *generator) between64(lo, hi int64) int64 { return lo + g.r.Int64N(hi-lo+1) }

// skewed returns an int in [lo, hi], small values more likely than large.
func (g *generator) skewed(lo, hi int) int { return lo + g.r.IntN(g.r.IntN(hi-lo+1)+1) }

// expGap returns a gap of mean about mean, roughly exponentially distributed:
// a geometric number of ln 2 steps plus a uniform fraction of one. Integer
// arithmetic only, so every machine draws the same gaps.
func (g *generator) expGap(mean int64) int64 {
	k := int64(min(bits.LeadingZeros64(g.r.Uint64()), 40))
	return mean * (k*gapUnit + g.r.Int64N(gapUnit)) / 1000
}

func (g *generator) special(s uint32) uint32 { return g.vocab - s }

func (g *generator) bos(dst []uint32) []uint32 { return append(dst, g.special(specBOS)) }

// message appends a message of role with n body tokens: a header, the body
// and an end-of-turn token.
func (g *generator) message(dst []uint32, role uint32, n int) []uint32 {
	dst = append(dst, g.special(specStartHeader), role, g.special(specEndHeader), tokNewline)
	for range n {
		// Skewed towards small ids, as frequent tokens have small ids.
		dst = append(dst, firstBodyToken+uint32(g.r.IntN(g.r.IntN(g.bodyTokens)+1)))
	}
	return append(dst, g.special(specEOT))
}

func (g *generator) newSession() *session {
	s := &session{}
	if g.tenants != nil {
		s.ns = g.tenants[g.r.IntN(len(g.tenants))]
	}
	w := g.r.IntN(g.mixTotal)
	m := g.cfg.Mix
	switch {
	case w < m.Chat:
		s.kind = kindChat
		s.ctx = g.system[g.r.IntN(len(g.system))]
		s.left = g.skewed(1, 10)
		s.gapLo, s.gapHi = 5_000, 60_000
	case w < m.Chat+m.Agent:
		s.kind = kindAgent
		s.ctx = g.message(g.tools[g.r.IntN(len(g.tools))], tokRoleUser, g.between(50, 300))
		s.left = g.between(2, 12)
		s.gapLo, s.gapHi = 500, 5_000
	case w < m.Chat+m.Agent+m.FewShot:
		s.kind = kindFewShot
		s.ctx = g.fewshot[g.r.IntN(len(g.fewshot))]
		s.left = g.between(8, 32)
		s.gapLo, s.gapHi = 0, 50
	default:
		s.kind = kindDocQA
		s.ctx = g.docs[g.r.IntN(len(g.docs))]
		s.left = g.between(3, 16)
		s.gapLo, s.gapHi = 3_000, 30_000
	}
	return s
}

// next returns the session's next request, sent at time at.
func (g *generator) next(s *session, at int64) Request {
	s.left--
	var tokens []uint32
	var output int
	switch s.kind {
	case kindChat:
		// The prompt is everything so far plus a new user message; the
		// answer joins the conversation for the next turn. Later turns
		// append in place, beyond the end of this request's clipped Tokens.
		s.ctx = g.message(s.ctx, tokRoleUser, g.skewed(16, 400))
		tokens = clip(s.ctx)
		output = g.skewed(32, 800)
		if s.left > 0 {
			s.ctx = g.message(s.ctx, tokRoleAssistant, output-1)
		}
	case kindAgent:
		tokens = clip(s.ctx)
		output = g.skewed(20, 300)
		if s.left > 0 {
			s.ctx = g.message(s.ctx, tokRoleAssistant, output-1)
			s.ctx = g.message(s.ctx, tokRoleTool, g.skewed(100, 2000))
		}
	case kindFewShot:
		tokens = g.message(append(make([]uint32, 0, len(s.ctx)+206), s.ctx...), tokRoleUser, g.skewed(20, 200))
		output = g.between(1, 64)
	case kindDocQA:
		tokens = g.message(append(make([]uint32, 0, len(s.ctx)+126), s.ctx...), tokRoleUser, g.skewed(10, 120))
		output = g.between(32, 512)
	}
	return Request{
		Timestamp:    at,
		InputLength:  len(tokens),
		OutputLength: output,
		Tokens:       tokens,
		Namespace:    s.ns,
	}
}

// blockKey names a block of a request's tokens by its parent block's id,
// its length and its tokens' hash.
type blockKey struct {
	parent int64
	n      int
	hash   uint64
}

// assignHashIDs names the request's blocks of BlockTokens tokens the way
// Mooncake traces do: equal ids for equal prefixes, numbered in order of
// first appearance (ids holds those given so far).
func assignHashIDs(r *Request, ids map[blockKey]int64) {
	r.HashIDs = make([]int64, 0, (len(r.Tokens)+BlockTokens-1)/BlockTokens)
	parent := int64(-1)
	for off := 0; off < len(r.Tokens); off += BlockTokens {
		block := r.Tokens[off:min(off+BlockTokens, len(r.Tokens))]
		h := uint64(blockHashOffset)
		for _, t := range block {
			h = (h ^ uint64(t)) * blockHashPrime
		}
		k := blockKey{parent, len(block), h}
		id, ok := ids[k]
		if !ok {
			id = int64(len(ids))
			ids[k] = id
		}
		r.HashIDs = append(r.HashIDs, id)
		parent = id
	}
}

type event struct {
	at  int64
	seq uint64 // breaks ties in order of scheduling
	s   *session
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
