package cuda

import (
	"errors"
	"fmt"
)

// Errors of this package; match them with errors.Is. Pool errors
// (exhausted, slot range, double free, closed) are host/native's, so the
// controller treats CUDA pools like any other.
var (
	// ErrNoDriver reports that the CUDA driver could not be loaded: no
	// libcuda.so.1 on the library path, a driver too old for an entry point
	// radixkv needs, or a build without cgo. The message says what was
	// looked for.
	ErrNoDriver = errors.New("cuda: no CUDA driver")
	// ErrNoDevice reports a driver without the device asked for (no GPU,
	// or an ordinal past the last one).
	ErrNoDevice = errors.New("cuda: no CUDA device")
	// ErrGeometry reports a KV geometry or pool size that cannot be laid
	// out (zero or negative fields, a capacity that is not whole pages, a
	// size that overflows).
	ErrGeometry = errors.New("cuda: invalid geometry")
	// ErrLayout reports a transfer between pools whose layouts differ (page
	// size, rows, row bytes), or between tiers no copy connects.
	ErrLayout = errors.New("cuda: pools do not share a layout")
	// ErrInFlight reports a wait on, or a release of, a transfer that is
	// still running when the caller asked it not to block.
	ErrInFlight = errors.New("cuda: transfer still in flight")
	// ErrKernel reports a gather/scatter kernel that is not loaded, or a
	// page list it cannot take (pages that are not multiples of 16 bytes).
	ErrKernel = errors.New("cuda: page copy kernel unavailable")
)

// Result is a CUresult, the status code every driver call returns.
type Result int

// Codes this package acts on.
const (
	Success         Result = 0
	InvalidValue    Result = 1
	OutOfMemory     Result = 2
	NotInitialized  Result = 3
	NoDevice        Result = 100
	InvalidDevice   Result = 101
	InvalidPTX      Result = 218
	InvalidHandle   Result = 400
	NotFound        Result = 500
	NotReady        Result = 600
	IllegalAddress  Result = 700
	LaunchFailed    Result = 719
	UnknownCUResult Result = 999
)

// resultNames are the driver's names of the codes radixkv can meet, for
// drivers (and the fake) that cannot name a code themselves.
var resultNames = map[Result]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	5:   "CUDA_ERROR_PROFILER_DISABLED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	205: "CUDA_ERROR_MAP_FAILED",
	206: "CUDA_ERROR_UNMAP_FAILED",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	218: "CUDA_ERROR_INVALID_PTX",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	400: "CUDA_ERROR_INVALID_HANDLE",
	401: "CUDA_ERROR_ILLEGAL_STATE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	800: "CUDA_ERROR_NOT_PERMITTED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	999: "CUDA_ERROR_UNKNOWN",
}

// Name is the driver's name for r (CUDA_ERROR_OUT_OF_MEMORY), or
// CUresult(n) for a code this package does not know.
func (r Result) Name() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("CUresult(%d)", int(r))
}

// Error is a failed driver call: the call, the code and the driver's name
// for it. errors.Is(err, ErrNoDevice) holds for the no-device codes, and
// errors.Is(err, Result(n)) matches a code.
type Error struct {
	Op   string // the driver entry point or the operation, e.g. "cuMemAlloc_v2"
	Code Result
	Name string // the driver's name for Code
	Info string // what was being done, e.g. "device KV pool of 4 GiB"
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Op, e.Name, int(e.Code))
	if e.Info != "" {
		s += ": " + e.Info
	}
	return s
}

// Is matches a Result code, and ErrNoDevice for the codes that mean there
// is no usable device.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Result:
		return t == e.Code
	}
	if target == ErrNoDevice {
		return e.Code == NoDevice || e.Code == InvalidDevice
	}
	return false
}

// Error makes a Result usable as an errors.Is target.
func (r Result) Error() string { return fmt.Sprintf("cuda: %s (%d)", r.Name(), int(r)) }

// IsOutOfMemory reports whether err is a driver out-of-memory failure.
func IsOutOfMemory(err error) bool { return errors.Is(err, OutOfMemory) }

// newError builds the Error for code returned by op; name is the driver's
// name when it gave one.
func newError(op string, code Result, name, info string) error {
	if code == Success {
		return nil
	}
	if name == "" {
		name = code.Name()
	}
	return &Error{Op: op, Code: code, Name: name, Info: info}
}
