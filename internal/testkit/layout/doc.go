// Package layout checks, in its tests, that imports run one way: the clock
// below the spool, the spool below the emitter, the library clear of the
// CLI, the reference receivers and the test kit, and the shipped binary
// clear of the test kit. internal/README.md gives each package's role.
package layout
