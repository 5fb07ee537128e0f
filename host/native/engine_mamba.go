package native

import (
	"github.com/radixkv/radixkv/abi"
)

// MambaAlphaSetter is implemented by this package's engines: it sets the
// alpha of a tree under the marconi Mamba policy (core.Tree.SetMambaAlpha,
// the ABI's mamba_set_alpha), so a host that tunes alpha online applies
// its choice. Config reports the new alpha afterwards.
// Errors: core.ErrInvalidArgument (not marconi, or alpha outside [0,
// core.MaxMambaAlpha]), ErrClosed; nothing changes on error.
type MambaAlphaSetter interface {
	SetMambaAlpha(alpha float64) error
}

var (
	_ MambaAlphaSetter = (*directEngine)(nil)
	_ MambaAlphaSetter = (*wireEngine)(nil)
)

func (e *directEngine) SetMambaAlpha(alpha float64) error {
	if e.closed {
		return errEngineClosed
	}
	if err := e.t.SetMambaAlpha(alpha); err != nil {
		return err
	}
	e.cfg.MambaAlpha = alpha
	return nil
}

func (e *wireEngine) SetMambaAlpha(alpha float64) error {
	if err := e.usable(); err != nil {
		return err
	}
	e.q.Alpha = alpha
	err := e.roundTrip(abi.OpMambaSetAlpha)
	e.q.Alpha = 0
	if err == nil {
		e.cfg.MambaAlpha = alpha
	}
	return err
}
