package core

import "fmt"

// receiptTable holds the live receipts: a dense slice (swap-removed, in
// no particular order) indexed by serial through an idTable. Every lock
// and unlock adds or removes one, so it avoids a Go map's runtime calls,
// and lookups hand out pointers instead of copying the record.
type receiptTable struct {
	index idTable // serial → position in recs
	recs  []liveReceipt
}

func (rt *receiptTable) len() int { return len(rt.recs) }

// get returns the live receipt with this serial, or nil. The pointer is
// valid until the next add or remove.
func (rt *receiptTable) get(serial uint64) *liveReceipt {
	k, ok := rt.index.get(serial)
	if !ok {
		return nil
	}
	return &rt.recs[k]
}

// add records receipt r, whose serial is not live, taken on node i, and
// returns its record (zero apart from idx and r) to fill in place.
func (rt *receiptTable) add(i int32, r *Receipt) *liveReceipt {
	rt.index.put(r.Serial, int32(len(rt.recs)))
	rt.recs = append(rt.recs, liveReceipt{})
	l := &rt.recs[len(rt.recs)-1]
	l.idx, l.r = i, *r
	return l
}

// remove drops the receipt with this serial, if live.
func (rt *receiptTable) remove(serial uint64) {
	k, ok := rt.index.get(serial)
	if !ok {
		return
	}
	rt.index.del(serial)
	if last := int32(len(rt.recs) - 1); k != last {
		rt.recs[k] = rt.recs[last]
		rt.index.put(rt.recs[k].r.Serial, k)
	}
	rt.recs[len(rt.recs)-1] = liveReceipt{}
	rt.recs = rt.recs[:len(rt.recs)-1]
}

func (rt *receiptTable) reset() {
	clear(rt.recs)
	rt.recs = rt.recs[:0]
	rt.index.reset()
}

// check reports an index that disagrees with the records.
func (rt *receiptTable) check() error {
	if err := rt.index.check(); err != nil {
		return fmt.Errorf("receipt index: %w", err)
	}
	if rt.index.n != len(rt.recs) {
		return fmt.Errorf("receipt index holds %d serials for %d receipts", rt.index.n, len(rt.recs))
	}
	for k := range rt.recs {
		if j, ok := rt.index.get(rt.recs[k].r.Serial); !ok || int(j) != k {
			return fmt.Errorf("receipt %d is not indexed at its position %d", rt.recs[k].r.Serial, k)
		}
	}
	return nil
}
