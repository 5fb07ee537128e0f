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
		nd := &c.nodes[q]
		if !nd.live || nd.parent == none {
			continue
		}
		var prefix []uint32
		r := nd.parent
		for ; c.nodes[r].parent != none; r = c.nodes[r].parent {
			prefix = append(slices.Clone(c.nodes[r].key), prefix...)
		}
		for j, b := range nd.blocks {
			path := append(slices.Clone(prefix), nd.key[:(j+1)*c.bs]...)
			d := dumpNode{Path: fmt.Sprint(c.nodes[r].adapter, path), Block: b, Disk: nd.disks[j], Ref: nd.refs[j], Last: nd.lasts[j]}
			if pt := c.partials[b]; pt != nil {
				d.Partial, d.PartBlock, d.PartDisk = fmt.Sprint(pt.tokens), pt.block, pt.disk
			}
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b dumpNode) int {
		if a.Path < b.Path {
			return -1
		}
		return 1
	})
	return out
}
