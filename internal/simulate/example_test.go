package simulate_test

import (
	"fmt"

	"github.com/radixkv/radixkv/internal/simulate"
)

// Run a short simulation of a hybrid host with every fault; the same
// seed gives the same run.
func ExampleRun() {
	faults, err := simulate.ParseFaults("all")
	if err != nil {
		panic(err)
	}
	res, err := simulate.Run(simulate.Config{Seed: 42, Ops: 2000, Faults: faults, Engine: "direct", Components: "full,swa,mamba"})
	fmt.Println(res.Ops, err)
	// Output: 2000 <nil>
}
