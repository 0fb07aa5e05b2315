//go:build !linux

package pathwatch

import "context"

// Watch is not available on this system: New always fails.
type Watch struct{}

// New returns ErrUnsupported.
func New(string) (*Watch, error) { return nil, ErrUnsupported }

// Wait returns ErrUnsupported.
func (*Watch) Wait(context.Context) (bool, error) { return false, ErrUnsupported }

// Close does nothing.
func (*Watch) Close() error { return nil }
