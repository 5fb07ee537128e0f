package native

import (
	"testing"

	"github.com/radixkv/radixkv/core"
)

// BenchmarkControllerRequest serves a request whose 1024-token prompt
// shares a 768-token cached prefix: arrive (match + lock), prefill 256
// tokens, decode 16, finish (insert + unlock); every 64th request the
// pool is short and the controller evicts.
func BenchmarkControllerRequest(b *testing.B) {
	for _, canary := range []bool{false, true} {
		name := "canary=off"
		if canary {
			name = "canary=on"
		}
		b.Run(name, func(b *testing.B) {
			c, _ := newCtl(b, 1<<15, core.Config{PageSize: 16}, ControllerConfig{Canary: canary})
			prompt := seq(0, 1024)
			out := seq(1<<20, 16)
			n := uint32(0)
			b.ReportAllocs()
			for b.Loop() {
				n++
				for i := 768; i < len(prompt); i++ {
					prompt[i] = n<<12 + uint32(i)
				}
				r, err := c.Arrive(core.Namespace{}, prompt)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Prefill(r, r.Pending()); err != nil {
					b.Fatal(err)
				}
				if err := c.Extend(r, out...); err != nil {
					b.Fatal(err)
				}
				if err := c.Finish(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
