package coresim

import (
	"fmt"

	"github.com/radixkv/radixkv/core"
	"github.com/radixkv/radixkv/workload"
)

// HostConfig configures a replay with a host-memory tier (HiCache).
type HostConfig struct {
	Config
	// HostCapacity is the number of host KV slots.
	HostCapacity int
	// WritePolicy chooses write-through (back up after the threshold's
	// hits) or write-back (back up when evicted from the device).
	WritePolicy core.WritePolicy
	// WriteThroughThreshold is the hit count that triggers a
	// write-through; 0 means the tree's default.
	WriteThroughThreshold int
}

// HostStats summarises a replay with a host tier.
type HostStats struct {
	Stats
	// HostMatchedTokens is the sum of the host hits that were loaded back
	// to the device; Stats.MatchedTokens counts device hits only.
	HostMatchedTokens int64
	// HostHitRate and CombinedHitRate are HostMatchedTokens and device
	// plus host hits over the input tokens.
	HostHitRate     float64
	CombinedHitRate float64
	// LoadBacks, BackedUpTokens, DemotedNodes, DroppedNodes and
	// HostEvictedTokens count the host-tier traffic.
	LoadBacks         int
	BackedUpTokens    int64
	DemotedNodes      int
	DroppedNodes      int
	HostEvictedTokens int64
}

type hostSim struct {
	sim
	hcfg  HostConfig
	hfree []int32
	hst   HostStats
	ack   int64
}

// RunHost replays reqs through a tree with a device pool of
// cfg.Capacity slots and a host pool of cfg.HostCapacity slots, executing
// every backup, demotion, load-back and host eviction the tree asks for.
// Errors: as Run.
func RunHost(cfg HostConfig, reqs []workload.Request) (HostStats, error) {
	if cfg.Capacity < 0 || int64(cfg.Capacity) > 1<<31 || cfg.HostCapacity < 0 || int64(cfg.HostCapacity) > 1<<31 {
		return HostStats{}, fmt.Errorf("coresim: capacities %d / %d out of range [0, 2^31]", cfg.Capacity, cfg.HostCapacity)
	}
	tree, err := core.New(core.Config{PageSize: cfg.PageSize, Policy: cfg.Policy, HostTier: true,
		WritePolicy: cfg.WritePolicy, WriteThroughThreshold: cfg.WriteThroughThreshold})
	if err != nil {
		return HostStats{}, fmt.Errorf("coresim: %w", err)
	}
	s := &hostSim{sim: sim{cfg: cfg.Config, tree: tree, free: identity(cfg.Capacity)}, hcfg: cfg, hfree: identity(cfg.HostCapacity)}
	err = s.replay(reqs, s.request)
	return s.finishHost(), err
}

func (s *hostSim) finishHost() HostStats {
	st := s.hst
	st.Stats = s.finish()
	if st.InputTokens > 0 {
		st.HostHitRate = float64(st.HostMatchedTokens) / float64(st.InputTokens)
		st.CombinedHitRate = float64(st.MatchedTokens+st.HostMatchedTokens) / float64(st.InputTokens)
	}
	return st
}

// request serves one request, first loading its host hit back.
func (s *hostSim) request(k int, req *workload.Request) error {
	t := s.tree
	ns, tokens := namespaceOf(req), req.Tokens
	res, err := t.Match(s.matched[:0], ns, tokens)
	if err != nil {
		return fmt.Errorf("coresim: request %d: match: %w", k, err)
	}
	s.matched = res.Indices
	if err := s.exec(k, res.Actions); err != nil {
		return err
	}
	devHit := res.DeviceLen
	if res.Best != res.LastDevice {
		loaded, err := s.loadBack(k, res.Best)
		if err != nil {
			return err
		}
		if loaded > 0 {
			s.hst.HostMatchedTokens += int64(loaded)
			if res, err = t.Match(s.matched[:0], ns, tokens); err != nil {
				return fmt.Errorf("coresim: request %d: match: %w", k, err)
			}
			s.matched = res.Indices
		}
	}
	if err := s.serve(k, ns, tokens, res, s.ensureDevice, s.exec); err != nil {
		return err
	}
	s.st.MatchedTokens += int64(devHit)
	return nil
}

// ensureDevice evicts until need device slots are free.
func (s *hostSim) ensureDevice(k, need int) error {
	short := need - len(s.free)
	if short <= 0 {
		return nil
	}
	t := s.tree
	if err := t.EvictStart(core.Full, short); err != nil {
		return fmt.Errorf("coresim: request %d: evict: %w", k, err)
	}
	defer t.EvictEnd()
	s.st.Evictions++
	for len(s.free) < need {
		st, err := t.EvictNext()
		if err != nil {
			return fmt.Errorf("coresim: request %d: evict: %w", k, err)
		}
		if st.Done {
			break
		}
		s.st.EvictedTokens += int64(st.Freed)
		if err := s.exec(k, st.Actions); err != nil {
			return err
		}
	}
	return s.capacityErr(k, need)
}

// exec runs the tree's actions on the pools.
func (s *hostSim) exec(k int, acts []core.Action) error {
	for _, a := range acts {
		switch a.Kind {
		case core.ActionFreeDeviceKV, core.ActionFreeDeviceKVFullOnly:
			s.free = append(s.free, a.Slots...)
			s.st.DuplicateTokens += int64(len(a.Slots))
		case core.ActionFreeDeviceSlots:
			s.free = append(s.free, a.Slots...)
			s.st.EvictedNodes++
		case core.ActionFreeHostSlots:
			s.hfree = append(s.hfree, a.Slots...)
			s.hst.HostEvictedTokens += int64(len(a.Slots))
		case core.ActionBackupKV:
			if err := s.backupChain(k, a); err != nil {
				return err
			}
		default:
			return fmt.Errorf("coresim: request %d: unexpected action %v", k, a)
		}
	}
	return nil
}

// backupChain runs a BackupKV: write-through copies the chain (ancestors
// first, stopping at the first node the host has no room for) and
// acknowledges it at once; a write-back eviction copies the leaf and
// demotes it, or drops it when the host is full.
func (s *hostSim) backupChain(k int, a core.Action) error {
	t := s.tree
	// Copy the nodes out: host evictions below reuse the tree's buffers.
	chain := append([]core.NodeID(nil), a.Nodes...)
	for _, id := range chain {
		ok, err := s.backup(k, id)
		if err != nil {
			return err
		}
		if s.hcfg.WritePolicy == core.WriteBack {
			if ok {
				acts, err := t.Demote(id)
				if err != nil {
					return fmt.Errorf("coresim: request %d: demote: %w", k, err)
				}
				s.hst.DemotedNodes++
				return s.exec(k, acts)
			}
			dropped, acts, err := t.DropSubtreeNoHost(id)
			if err != nil {
				return fmt.Errorf("coresim: request %d: drop: %w", k, err)
			}
			if dropped {
				s.hst.DroppedNodes++
			}
			return s.exec(k, acts)
		}
		if !ok {
			return nil
		}
		s.ack++
		ids, err := t.MarkWriteThroughPending([]core.NodeID{id}, s.ack)
		if err != nil {
			return fmt.Errorf("coresim: request %d: write-through: %w", k, err)
		}
		if err := t.FinishWriteThrough(ids, s.ack); err != nil {
			return fmt.Errorf("coresim: request %d: write-through: %w", k, err)
		}
	}
	return nil
}

// backup copies one node to the host; false when the host has no room.
func (s *hostSim) backup(k int, id core.NodeID) (bool, error) {
	t := s.tree
	spec, err := t.BackupSpec(id)
	if err != nil {
		return false, fmt.Errorf("coresim: request %d: backup spec: %w", k, err)
	}
	n := len(spec.Full)
	if n == 0 {
		return true, nil
	}
	if short := n - len(s.hfree); short > 0 {
		acts, _, err := t.EvictHost(core.Full, short, nil)
		if err != nil {
			return false, fmt.Errorf("coresim: request %d: host eviction: %w", k, err)
		}
		if err := s.exec(k, acts); err != nil {
			return false, err
		}
		if n > len(s.hfree) {
			return false, nil
		}
	}
	top := len(s.hfree) - n
	host := append([]int32(nil), s.hfree[top:]...)
	s.hfree = s.hfree[:top]
	if err := t.CommitBackup(id, core.BackupCommit{Full: host, Mamba: -1}); err != nil {
		return false, fmt.Errorf("coresim: request %d: commit backup: %w", k, err)
	}
	s.hst.BackedUpTokens += int64(n)
	return true, nil
}

// loadBack brings best's host-only part back to the device and returns
// how many atoms it loaded (0 when pinned or the device has no room).
func (s *hostSim) loadBack(k int, best core.NodeID) (int, error) {
	t := s.tree
	hr, err := t.HostLock(best)
	if err != nil {
		return 0, fmt.Errorf("coresim: request %d: host lock: %w", k, err)
	}
	defer t.HostUnlock(best, hr)
	r, err := t.Lock(best, 0)
	if err != nil {
		return 0, fmt.Errorf("coresim: request %d: lock: %w", k, err)
	}
	defer t.Unlock(best, r, false)
	plan, err := t.LoadBackPlan(best)
	if err != nil {
		return 0, fmt.Errorf("coresim: request %d: load-back plan: %w", k, err)
	}
	n := plan.Atoms()
	if plan.Pinned || n == 0 {
		return 0, nil
	}
	if err := s.ensureDevice(k, n); err != nil {
		return 0, nil // the device cannot take it now: recompute instead
	}
	// Eviction may have demoted or dropped nodes of the plan's path: plan
	// again with what is there now.
	if plan, err = t.LoadBackPlan(best); err != nil {
		return 0, fmt.Errorf("coresim: request %d: load-back plan: %w", k, err)
	}
	if n = plan.Atoms(); n > len(s.free) {
		return 0, nil
	}
	c := core.LoadBackCommit{Mamba: -1}
	for _, e := range plan.Full {
		top := len(s.free) - len(e.Slots)
		c.Full = append(c.Full, append([]int32(nil), s.free[top:]...))
		s.free = s.free[:top]
	}
	if _, err := t.CommitLoadBack(best, c); err != nil {
		return 0, fmt.Errorf("coresim: request %d: commit load-back: %w", k, err)
	}
	if err := t.FinishLoadBack(best); err != nil {
		return 0, fmt.Errorf("coresim: request %d: finish load-back: %w", k, err)
	}
	s.hst.LoadBacks++
	return n, nil
}
