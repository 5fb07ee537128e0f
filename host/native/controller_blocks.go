package native

import "fmt"

// Snapshots runs fn with the engine's SSM snapshot index under the
// controller's mutex, so that it is serialised with every lifecycle call
// (the index lives in the engine beside the tree). fn must not call the
// controller. Errors: ErrClosed, and fn's.
func (c *Controller) Snapshots(fn func(SnapshotEngine) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	se, ok := c.eng.(SnapshotEngine)
	if !ok {
		return fmt.Errorf("%w: engine %T has no snapshot index", ErrInvalidArgument, c.eng)
	}
	return fn(se)
}

// Blocks runs fn with the engine's block-cache facade under the
// controller's mutex, like Snapshots. The block cache keeps the caller's
// block ids, not the controller's pool slots. Errors: ErrClosed, and fn's.
func (c *Controller) Blocks(fn func(BlocksEngine) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: controller", ErrClosed)
	}
	be, ok := c.eng.(BlocksEngine)
	if !ok {
		return fmt.Errorf("%w: engine %T has no block cache", ErrInvalidArgument, c.eng)
	}
	return fn(be)
}
