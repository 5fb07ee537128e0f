package blockcache

import (
	"fmt"
	"slices"
)

// dumpNode is one cached block, named by its adapter and full token path.
type dumpNode struct {
	Path                string
	Block, Disk, Ref    uint32
	Last                uint64
	Partial             string
	PartBlock, PartDisk uint32
}

func dump(c *Cache) []dumpNode {
	var out []dumpNode
	for q := range c.nodes {
		n := &c.nodes[q]
		if !n.live || n.parent == none {
			continue
		}
		var path []uint32
		r := int32(q)
		for ; c.nodes[r].parent != none; r = c.nodes[r].parent {
			path = append(slices.Clone(c.nodes[r].key), path...)
		}
		d := dumpNode{Path: fmt.Sprint(c.nodes[r].adapter, path), Block: n.block, Disk: n.disk, Ref: n.ref, Last: n.last}
		if n.partial {
			d.Partial, d.PartBlock, d.PartDisk = fmt.Sprint(n.pTokens), n.pBlock, n.pDisk
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b dumpNode) int {
		if a.Path < b.Path {
			return -1
		}
		return 1
	})
	return out
}
