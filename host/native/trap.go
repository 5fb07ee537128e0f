package native

import (
	"errors"
	"fmt"
)

// errInjectedTrap is the failure InjectTrap makes an engine's guest have.
var errInjectedTrap = errors.New("injected guest trap")

// InjectTrap makes eng fail as if its guest trapped, on its after-th call
// from now (0: the next one), for fault injection in tests and
// simulators. From that call on every call fails with ErrEngineFailed
// (and ErrGuest), as after a real trap; a Controller over eng then
// recovers with ReplaceEngine. On the WebAssembly engine the trap is
// real as far as the host can tell: the module instance is closed under
// the call, which then fails in wazero. The in-process engine fails its
// transport, the direct engine refuses the call the same way.
// Errors: ErrInvalidArgument (after < 0, or an engine of another
// package), ErrClosed.
func InjectTrap(eng Engine, after int) error {
	if after < 0 {
		return fmt.Errorf("%w: a trap after %d calls", ErrInvalidArgument, after)
	}
	switch e := eng.(type) {
	case *directEngine:
		if e.closed {
			return errEngineClosed
		}
		e.trapArmed, e.trapIn = true, after
		return nil
	case *wireEngine:
		if e.closed {
			return errEngineClosed
		}
		if t, ok := e.tr.(*trapTransport); ok {
			t.left = after
			return nil
		}
		e.tr = &trapTransport{transport: e.tr, left: after}
		return nil
	}
	return fmt.Errorf("%w: cannot inject a trap into a %T (only this package's engines)", ErrInvalidArgument, eng)
}

// trapTransport fails the call its countdown reaches.
type trapTransport struct {
	transport
	left int // calls before the trap; -1 once it happened
}

func (t *trapTransport) call(req []byte) ([]byte, error) {
	switch {
	case t.left > 0:
		t.left--
	case t.left == 0:
		t.left = -1
		if g, ok := t.transport.(*wasmGuest); ok && g.mod != nil {
			// Close the instance under the call: wazero then refuses it.
			_ = g.mod.Close(g.ctx)
			return g.call(req)
		}
		return nil, errInjectedTrap
	}
	return t.transport.call(req)
}
