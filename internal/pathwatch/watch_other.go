//go:build !linux

package pathwatch

import (
	"context"
	"time"
)

// Watch is not available on this system: New always fails.
type Watch struct{}

// New returns ErrUnsupported.
func New(string) (*Watch, error) { return nil, ErrUnsupported }

// Wait is never reached (New fails); it reports nothing.
func (*Watch) Wait(context.Context) (bool, error) { return false, ErrUnsupported }

// Close does nothing.
func (*Watch) Close() error { return nil }
