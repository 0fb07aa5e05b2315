// Package powercut is a power-cut simulator: a FUSE filesystem that keeps,
// for every file, what has been made durable apart from what has only been
// written, and on a cut throws away what was not durable, then mounts what
// was.
//
// The model is the strict POSIX one, stricter than most real filesystems:
//
//   - A write (or a truncate) changes what readers see at once, and becomes
//     durable when the file is fsync'd or fdatasync'd.
//   - A directory operation (create, mkdir, link, rename, unlink, rmdir)
//     becomes durable when that directory is fsync'd. A file's own fsync
//     does not make its name durable; a file created and synced in a
//     directory never synced is gone after a cut.
//   - A cut (PowerOff) freezes the filesystem at once: every later operation
//     fails with EIO, as a machine without power does nothing more. What
//     survives depends on the Mode: Drop keeps only what was durable; Tear
//     also keeps a prefix of each file's pending writes, in the order they
//     were made, the last one torn at a 4 KiB page; Subset keeps a random
//     subset of the pending writes' 4 KiB pages, as LazyFS does. A pending
//     truncate survives a Tear or Subset cut at random too.
//   - Writeback makes everything written so far durable, as the kernel's
//     background writeback does sooner or later without being asked.
//   - PowerOn mounts the surviving state again, at the same mount point,
//     with nothing cached by the kernel.
//
// Reads go through the kernel's page cache (no direct I/O), so a file
// mapped with mmap (bbolt reads its file that way) sees every write.
//
// A Go process must not mmap files of a FUSE filesystem it serves itself: a
// page fault waiting for the server blocks the garbage collector's
// stop-the-world, which stops the server. Run such clients (bbolt, the
// spool) in another process.
//
// Mounting needs /dev/fuse and the right to mount: root, with go-fuse's
// direct mount (no fusermount binary is used). Mount reports ErrUnavailable
// otherwise, so that tests can skip.
package powercut
