package powercut

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mode says what a cut keeps of the writes not yet made durable.
type Mode int

const (
	// Drop keeps only what was durable.
	Drop Mode = iota
	// Tear keeps a random prefix of each file's pending writes, in order,
	// the last one torn at a 4 KiB page boundary.
	Tear
	// Subset keeps a random subset of the pending writes' 4 KiB pages.
	Subset
)

// String returns the mode's name: drop, tear or subset.
func (m Mode) String() string {
	switch m {
	case Drop:
		return "drop"
	case Tear:
		return "tear"
	case Subset:
		return "subset"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// PageSize is the granularity at which Tear and Subset keep pending writes.
const PageSize = 4096

// ErrUnavailable is returned by Mount where FUSE cannot be mounted (no
// /dev/fuse, not root, no FUSE in the kernel).
var ErrUnavailable = errors.New("powercut: cannot mount a FUSE filesystem here (needs /dev/fuse and root)")

// ErrPoweredOff is returned by PowerOff when the filesystem is already off.
var ErrPoweredOff = errors.New("powercut: the power is already off")

// op is a pending change to a file: a write of data at off, or (data nil) a
// truncate to size.
type op struct {
	off  int64
	data []byte
	size int64
}

// file is a regular file of the model.
type file struct {
	id      uint64
	cur     []byte // what readers see
	durable []byte // what survives a cut
	pending []op   // the changes since the last sync, in order
}

// dir is a directory of the model. Entries map a name to a *file or a *dir.
type dir struct {
	id      uint64
	cur     map[string]any
	durable map[string]any // as of the last fsync of this directory
}

// FS is a mounted power-cut filesystem.
type FS struct {
	mnt string

	mu     sync.Mutex
	root   *dir
	nextID uint64
	off    bool // frozen by PowerOff: every operation fails with EIO
	stats  Stats
	server *fuse.Server
}

// Stats counts what the filesystem saw, for reports.
type Stats struct {
	Writes, Syncs, DirSyncs, Cuts, Writebacks uint64
	// Lost counts pending changes a cut threw away, Kept those it kept
	// (Tear and Subset), in pages.
	LostPages, KeptPages uint64
}

// Mount mounts an empty filesystem at mnt, an existing directory.
func Mount(mnt string) (*FS, error) {
	f := &FS{mnt: mnt, nextID: 2}
	f.root = &dir{id: 1, cur: map[string]any{}, durable: map[string]any{}}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

// Available tells whether a FUSE filesystem can be mounted here, and if not,
// why: for tests to skip with a clear message.
func Available() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not running as root", ErrUnavailable)
	}
	return nil
}

func (f *FS) mount() error {
	if err := Available(); err != nil {
		return err
	}
	zero := time.Duration(0)
	root := &node{fs: f, d: f.root}
	server, err := fs.Mount(f.mnt, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            "powercut",
			Name:              "powercut",
			MaxWrite:          1 << 20,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	f.server = server
	return nil
}

// Dir returns the mount point.
func (f *FS) Dir() string { return f.mnt }

// Stats returns the counters so far.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// PowerOff cuts the power: from now on every operation fails with EIO, and
// the state PowerOn will mount is decided now, by mode (rng picks what Tear
// and Subset keep). Kill the processes using the filesystem, then PowerOn.
func (f *FS) PowerOff(mode Mode, rng *rand.Rand) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off {
		return ErrPoweredOff
	}
	f.off = true
	f.stats.Cuts++
	c := &cutter{mode: mode, rng: rng, files: map[*file]*file{}, dirs: map[*dir]*dir{}, stats: &f.stats}
	f.root = c.dir(f.root)
	return nil
}

// PowerOn unmounts the frozen filesystem (lazily, if a process still holds
// it) and mounts what survived the cut at the same place.
func (f *FS) PowerOn() error {
	f.mu.Lock()
	if !f.off {
		f.mu.Unlock()
		return errors.New("powercut: PowerOn without PowerOff")
	}
	f.mu.Unlock()
	if err := f.unmount(); err != nil {
		return err
	}
	f.mu.Lock()
	f.off = false
	f.mu.Unlock()
	return f.mount()
}

// Unmount unmounts the filesystem for good.
func (f *FS) Unmount() error { return f.unmount() }

func (f *FS) unmount() error {
	if f.server == nil {
		return nil
	}
	if err := f.server.Unmount(); err != nil {
		// A process still has a file open: detach, the kernel finishes
		// when it lets go.
		if derr := syscall.Unmount(f.mnt, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("powercut: unmount %s: %v; detach: %w", f.mnt, err, derr)
		}
	}
	f.server.Wait()
	f.server = nil
	return nil
}

// Writeback makes everything written so far durable, files and directory
// entries alike, as the kernel's background writeback eventually does
// whether or not anyone calls fsync: a program that never syncs still finds
// some of its writes after a cut, and the pages of a commit that was never
// completed can be on disk. Writes made after it are pending as usual.
func (f *FS) Writeback() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off {
		return ErrPoweredOff
	}
	seen := map[*dir]bool{}
	var walk func(d *dir)
	walk = func(d *dir) {
		if seen[d] {
			return
		}
		seen[d] = true
		d.durable = cloneMap(d.cur)
		for _, e := range d.cur {
			switch e := e.(type) {
			case *file:
				e.durable = slices.Clone(e.cur)
				e.pending = nil
			case *dir:
				walk(e)
			}
		}
	}
	walk(f.root)
	f.stats.Writebacks++
	return nil
}

// cutter builds the state that survives a cut: the durable directory tree,
// each file with its durable content and what the mode keeps of the rest.
type cutter struct {
	mode  Mode
	rng   *rand.Rand
	files map[*file]*file // hard links share a file
	dirs  map[*dir]*dir
	stats *Stats
}

func (c *cutter) dir(d *dir) *dir {
	if n, ok := c.dirs[d]; ok {
		return n
	}
	n := &dir{id: d.id, cur: map[string]any{}, durable: map[string]any{}}
	c.dirs[d] = n
	for name, e := range d.durable {
		var ne any
		switch e := e.(type) {
		case *file:
			ne = c.file(e)
		case *dir:
			ne = c.dir(e)
		}
		n.cur[name], n.durable[name] = ne, ne
	}
	return n
}

func (c *cutter) file(f *file) *file {
	if n, ok := c.files[f]; ok {
		return n
	}
	data := slices.Clone(f.durable)
	keep := len(f.pending) // Tear: how many changes survive whole
	tornPages := 0
	if c.mode == Tear && len(f.pending) > 0 {
		keep = c.rng.IntN(len(f.pending) + 1)
		if keep < len(f.pending) {
			if p := f.pending[keep]; p.data != nil {
				tornPages = c.rng.IntN(pages(p.off, len(p.data)) + 1)
			}
		}
	}
	for i, p := range f.pending {
		switch {
		case c.mode == Drop, c.mode == Tear && i > keep:
			c.stats.LostPages += uint64(max(1, pages(p.off, len(p.data))))
		case c.mode == Tear && i == keep:
			data = c.applyPages(data, p, func(k int) bool { return k < tornPages })
		case c.mode == Tear:
			data = c.applyPages(data, p, func(int) bool { return true })
		default: // Subset
			data = c.applyPages(data, p, func(int) bool { return c.rng.IntN(2) == 0 })
		}
	}
	n := &file{id: f.id, cur: data, durable: slices.Clone(data)}
	c.files[f] = n
	return n
}

// applyPages applies the pages of p for which keep says so; a truncate is
// one page.
func (c *cutter) applyPages(data []byte, p op, keep func(k int) bool) []byte {
	if p.data == nil {
		if keep(0) {
			c.stats.KeptPages++
			return resize(data, p.size)
		}
		c.stats.LostPages++
		return data
	}
	end := p.off + int64(len(p.data))
	k := 0
	for start := p.off; start < end; k++ {
		next := min(end, (start/PageSize+1)*PageSize)
		if keep(k) {
			c.stats.KeptPages++
			if int64(len(data)) < next {
				data = resize(data, next)
			}
			copy(data[start:next], p.data[start-p.off:next-p.off])
		} else {
			c.stats.LostPages++
		}
		start = next
	}
	return data
}

// pages is how many 4 KiB pages n bytes at off touch.
func pages(off int64, n int) int {
	if n == 0 {
		return 0
	}
	return int((off+int64(n)-1)/PageSize - off/PageSize + 1)
}

func resize(b []byte, size int64) []byte {
	if int64(len(b)) >= size {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

// node is the FUSE face of a file or directory of the model.
type node struct {
	fs.Inode
	fs *FS
	f  *file
	d  *dir
}

var (
	_ fs.NodeLookuper  = (*node)(nil)
	_ fs.NodeReaddirer = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeReader    = (*node)(nil)
	_ fs.NodeWriter    = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
	_ fs.NodeLinker    = (*node)(nil)
	_ fs.NodeFlusher   = (*node)(nil)
)

func (n *node) child(ctx context.Context, e any, out *fuse.EntryOut) *fs.Inode {
	c := &node{fs: n.fs}
	attr := fs.StableAttr{}
	switch e := e.(type) {
	case *file:
		c.f, attr.Mode, attr.Ino = e, fuse.S_IFREG, e.id
	case *dir:
		c.d, attr.Mode, attr.Ino = e, fuse.S_IFDIR, e.id
	}
	c.fill(&out.Attr)
	return n.NewInode(ctx, c, attr)
}

// fill describes the node; the caller holds fs.mu.
func (n *node) fill(a *fuse.Attr) {
	now := time.Now()
	a.SetTimes(&now, &now, &now)
	a.Nlink = 1
	if n.d != nil {
		a.Mode, a.Ino, a.Nlink = fuse.S_IFDIR|0o755, n.d.id, 2
		return
	}
	a.Mode, a.Ino = fuse.S_IFREG|0o600, n.f.id
	a.Size = uint64(len(n.f.cur))
	a.Blocks = (a.Size + 511) / 512
}

// Lookup finds a name in a directory.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return nil, syscall.EIO
	}
	e, ok := n.d.cur[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	return n.child(ctx, e, out), 0
}

// Readdir lists a directory.
func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return nil, syscall.EIO
	}
	var list []fuse.DirEntry
	for name, e := range n.d.cur {
		de := fuse.DirEntry{Name: name}
		switch e := e.(type) {
		case *file:
			de.Mode, de.Ino = fuse.S_IFREG, e.id
		case *dir:
			de.Mode, de.Ino = fuse.S_IFDIR, e.id
		}
		list = append(list, de)
	}
	slices.SortFunc(list, func(a, b fuse.DirEntry) int { return cmpString(a.Name, b.Name) })
	return fs.NewListDirStream(list), 0
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Getattr describes a node.
func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return syscall.EIO
	}
	n.fill(&out.Attr)
	return 0
}

// Setattr truncates a file; modes, owners and times are accepted and not kept.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return syscall.EIO
	}
	if size, ok := in.GetSize(); ok {
		if n.f == nil {
			return syscall.EISDIR
		}
		n.f.cur = resize(n.f.cur, int64(size))
		n.f.pending = append(n.f.pending, op{size: int64(size)})
		n.fs.stats.Writes++
	}
	n.fill(&out.Attr)
	return 0
}

// Open opens a file; reads and writes go to the node.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return nil, 0, syscall.EIO
	}
	return nil, 0, 0
}

// Read reads a file's current content.
func (n *node) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return nil, syscall.EIO
	}
	if off >= int64(len(n.f.cur)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(int64(len(n.f.cur)), off+int64(len(dest)))
	return fuse.ReadResultData(slices.Clone(n.f.cur[off:end])), 0
}

// Write writes to a file; the write is pending until the file is synced.
func (n *node) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return 0, syscall.EIO
	}
	end := off + int64(len(data))
	if int64(len(n.f.cur)) < end {
		n.f.cur = resize(n.f.cur, end)
	}
	copy(n.f.cur[off:end], data)
	n.f.pending = append(n.f.pending, op{off: off, data: slices.Clone(data)})
	n.fs.stats.Writes++
	return uint32(len(data)), 0
}

// Flush (close) makes nothing durable.
func (n *node) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return syscall.EIO
	}
	return 0
}

// Fsync makes a file's content, or a directory's entries, durable.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return syscall.EIO
	}
	if n.d != nil {
		n.d.durable = cloneMap(n.d.cur)
		n.fs.stats.DirSyncs++
		return 0
	}
	n.f.durable = slices.Clone(n.f.cur)
	n.f.pending = nil
	n.fs.stats.Syncs++
	return 0
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Create creates a file; its name is pending until the directory is synced.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return nil, nil, 0, syscall.EIO
	}
	if _, ok := n.d.cur[name]; ok {
		return nil, nil, 0, syscall.EEXIST
	}
	f := &file{id: n.fs.nextID}
	n.fs.nextID++
	n.d.cur[name] = f
	return n.child(ctx, f, out), nil, 0, 0
}

// Mkdir creates a directory; its name is pending until the parent is synced.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return nil, syscall.EIO
	}
	if _, ok := n.d.cur[name]; ok {
		return nil, syscall.EEXIST
	}
	d := &dir{id: n.fs.nextID, cur: map[string]any{}, durable: map[string]any{}}
	n.fs.nextID++
	n.d.cur[name] = d
	return n.child(ctx, d, out), 0
}

// Unlink removes a file's name.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return syscall.EIO
	}
	e, ok := n.d.cur[name]
	if !ok {
		return syscall.ENOENT
	}
	if _, isDir := e.(*dir); isDir {
		return syscall.EISDIR
	}
	delete(n.d.cur, name)
	return 0
}

// Rmdir removes an empty directory.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return syscall.EIO
	}
	e, ok := n.d.cur[name]
	if !ok {
		return syscall.ENOENT
	}
	d, isDir := e.(*dir)
	if !isDir {
		return syscall.ENOTDIR
	}
	if len(d.cur) > 0 {
		return syscall.ENOTEMPTY
	}
	delete(n.d.cur, name)
	return 0
}

// Rename moves a name, replacing what the new name held.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return syscall.EIO
	}
	if flags != 0 {
		return syscall.EINVAL
	}
	np, ok := newParent.(*node)
	if !ok || np.d == nil {
		return syscall.EXDEV
	}
	e, ok := n.d.cur[name]
	if !ok {
		return syscall.ENOENT
	}
	if old, ok := np.d.cur[newName]; ok {
		if od, isDir := old.(*dir); isDir && len(od.cur) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	delete(n.d.cur, name)
	np.d.cur[newName] = e
	return 0
}

// Link gives a file another name.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.fs.off {
		return nil, syscall.EIO
	}
	t, ok := target.(*node)
	if !ok || t.f == nil {
		return nil, syscall.EPERM
	}
	if _, ok := n.d.cur[name]; ok {
		return nil, syscall.EEXIST
	}
	n.d.cur[name] = t.f
	return n.child(ctx, t.f, out), 0
}
