package cuda

// FakeConfig shapes the fake driver (see LoadFake).
type FakeConfig struct {
	Devices    int    // devices it reports (LoadFake's default: 1)
	MemLimit   uint64 // device bytes it hands out before CUDA_ERROR_OUT_OF_MEMORY (0: 16 GiB)
	QueryDelay int    // cuEventQuery answers NOT_READY this many times before the work runs
	// FailIssueAt fails the n-th asynchronous copy issued (1-based) with
	// FailIssueCode (default CUDA_ERROR_INVALID_VALUE); 0: never.
	FailIssueAt   int
	FailIssueCode Result
	// FailRunAt fails the n-th copy or kernel when it runs: it copies
	// nothing and the next event query or synchronize on its stream
	// reports FailRunCode (default CUDA_ERROR_ILLEGAL_ADDRESS); 0: never.
	FailRunAt   int
	FailRunCode Result
	// FailAllocAt fails the n-th allocation (device or pinned) with
	// CUDA_ERROR_OUT_OF_MEMORY; 0: never.
	FailAllocAt int
	// FailIssueEvery and FailRunEvery fail every n-th copy issued or run
	// the same ways; 0: never.
	FailIssueEvery, FailRunEvery int
}

// FakeStats counts what the fake driver did since it was configured.
type FakeStats struct {
	CopiesIssued, CopiesRun, KernelsRun, EventsRecorded int64
	LiveAllocs                                          int64
	DeviceBytes, HostBytes, BytesCopied                 uint64
}
