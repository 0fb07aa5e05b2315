package pathwatch

import "errors"

// ErrUnsupported is returned by New where there is no inotify.
var ErrUnsupported = errors.New("pathwatch: watching a path is not supported on this system")

// ErrGone is returned by Wait once the watched directory was removed or
// moved: the watch sees nothing more. Close it and watch again.
var ErrGone = errors.New("pathwatch: the watched directory was removed or moved")
