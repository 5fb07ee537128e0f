package workload_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/radixkv/radixkv/workload"
)

func ExampleExpandTokens() {
	// Two blocks: all 512 tokens of block 3, then 2 tokens of block 5.
	tokens, err := workload.ExpandTokens(nil, []int64{3, 5}, 514)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(tokens), tokens[0], tokens[511], tokens[512:])

	_, err = workload.ExpandTokens(nil, []int64{3}, 600)
	fmt.Println(err)
	// Output:
	// 514 1536 2047 [2560 2561]
	// workload: malformed trace: input_length 600 does not fit 1 hash_ids of 512 tokens
}

func ExampleReadMooncake() {
	trace := `{"timestamp": 0, "input_length": 1000, "output_length": 20, "hash_ids": [0, 1]}

{"timestamp": 40, "input_length": 700, "output_length": 8, "hash_ids": [0, 2]}
`
	reqs, err := workload.ReadMooncake(strings.NewReader(trace), "trace.jsonl")
	if err != nil {
		panic(err)
	}
	for _, r := range reqs {
		fmt.Println(r.Timestamp, r.InputLength, r.OutputLength, r.HashIDs, r.Tokens[512:515])
	}

	bad := trace + `{"timestamp": 90, "input_length": 600, "output_length": 5, "hash_ids": [3]}` + "\n"
	_, err = workload.ReadMooncake(strings.NewReader(bad), "trace.jsonl")
	fmt.Println(err)
	fmt.Println(errors.Is(err, workload.ErrMalformedTrace))
	// Output:
	// 0 1000 20 [0 1] [512 513 514]
	// 40 700 8 [0 2] [1024 1025 1026]
	// workload: trace.jsonl:4: input_length 600 does not fit 1 hash_ids of 512 tokens
	// true
}

func ExampleMooncakeReader() {
	trace := `{"timestamp": 0, "input_length": 1000, "output_length": 20, "hash_ids": [0, 1]}
{"timestamp": 40, "input_length": 700, "output_length": 8, "hash_ids": [0, 2]}
`
	r := workload.NewMooncakeReader(strings.NewReader(trace), "trace.jsonl")
	var prev []uint32
	for {
		req, err := r.Next()
		if err != nil {
			fmt.Println(err)
			break
		}
		shared := 0
		for shared < min(len(prev), len(req.Tokens)) && prev[shared] == req.Tokens[shared] {
			shared++
		}
		fmt.Printf("t=%d in=%d shares %d tokens with the previous request\n", req.Timestamp, req.InputLength, shared)
		prev = req.Tokens
	}
	// Output:
	// t=0 in=1000 shares 0 tokens with the previous request
	// t=40 in=700 shares 512 tokens with the previous request
	// EOF
}

func ExampleGenerate() {
	cfg := workload.DefaultGenConfig()
	cfg.Requests = 500
	cfg.Tenants = 2
	a, err := workload.Generate(cfg)
	if err != nil {
		panic(err)
	}
	b, _ := workload.Generate(cfg)
	fmt.Println(len(a), "requests; same seed, same workload:", slices.EqualFunc(a, b, func(x, y workload.Request) bool {
		return x.Timestamp == y.Timestamp && x.Namespace == y.Namespace && slices.Equal(x.Tokens, y.Tokens)
	}))

	cfg.Requests = 0
	_, err = workload.Generate(cfg)
	fmt.Println(err)
	// Output:
	// 500 requests; same seed, same workload: true
	// workload: GenConfig.Requests 0 out of range [1, 16777216]
}

func ExampleMooncakeReader_Stream() {
	trace := `{"timestamp": 0, "input_length": 1000, "output_length": 20, "hash_ids": [0, 1]}
{"timestamp": 40, "input_length": 700, "output_length": 8, "hash_ids": [0, 2]}
{"timestamp": 90, "input_length": 600, "output_length": 5, "hash_ids": [3]}
`
	// The lines are parsed and expanded on a goroutine, ahead of the loop.
	s := workload.NewMooncakeReader(strings.NewReader(trace), "trace.jsonl").Stream(0)
	defer s.Close()
	for {
		r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// The bad third line, after the two requests before it.
			fmt.Println(err)
			break
		}
		fmt.Println("line", s.Line(), "serves", len(r.Tokens), "tokens")
	}
	// Output:
	// line 1 serves 1000 tokens
	// line 2 serves 700 tokens
	// workload: trace.jsonl:3: input_length 600 does not fit 1 hash_ids of 512 tokens
}

func ExampleGenerateStream() {
	cfg := workload.DefaultGenConfig()
	cfg.Requests = 3
	// The generator runs ahead on its own goroutine; the requests are
	// Generate's, in order.
	s, err := workload.GenerateStream(cfg, 0)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	all, _ := workload.Generate(cfg)
	for k := 0; ; k++ {
		r, err := s.Next()
		if err == io.EOF {
			fmt.Println(k, "requests")
			break
		}
		fmt.Println(slices.Equal(r.Tokens, all[k].Tokens))
	}
	// Output:
	// true
	// true
	// true
	// 3 requests
}
