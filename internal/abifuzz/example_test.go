package abifuzz_test

import (
	"context"
	"fmt"

	"github.com/radixkv/radixkv/internal/abifuzz"
)

// Drive one module instance with 2,000 random and mutated calls (and a
// closing stream of error replies), checking every answer.
func ExampleRun() {
	ctx := context.Background()
	m, err := abifuzz.Compile(ctx, "")
	if err != nil {
		panic(err)
	}
	defer m.Close(ctx)
	rep, err := abifuzz.Run(ctx, m, abifuzz.Config{Seed: 1, Calls: 2000, ErrorStream: -1}, nil)
	fmt.Println(rep.Calls, err)
	// Output: 2000 <nil>
}
