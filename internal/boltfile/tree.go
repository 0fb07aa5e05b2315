package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
)

// The tree check walks the bucket trees before bbolt maps the file, for the
// damage bbolt loops or reads wild on instead of failing (a branch pointing
// at an ancestor, past the file, or at a meta or freelist page). It reads
// each tree page once (of a non-root bucket's leaves only the header and the
// two keys that bound it) and keeps one bit per page.

// maxTreeDepth bounds a walk whatever the pages say (real trees are ~5 deep).
const maxTreeDepth = 32

// treeCheck is one walk over a file's trees.
type treeCheck struct {
	pageReader
	m    Meta
	seen []uint64 // one bit per page: in a tree, or free
	elem []byte   // leafBounds' element and key, reused
	key  []byte
}

// CheckTrees walks the root bucket's tree and every non-inline bucket's in
// r, whose meta page in force and free pages Layout returned: every page in
// the file, a branch or a leaf, reached once (free pages not at all), its
// leaves at one depth and its keys in the ranges their branches give; every
// page but the meta pages in a tree or free; the root bucket holding only
// buckets, among them each of required.
func CheckTrees(r io.ReaderAt, m Meta, free []uint64, required ...[]byte) error {
	c := &treeCheck{pageReader: pageReader{r: r, ps: int64(m.PageSize)}, m: m, seen: make([]uint64, (m.PageCount+63)/64)}
	// Free pages are marked first: a tree reaching one is damage.
	for _, id := range free {
		if id >= m.PageCount {
			return fmt.Errorf("free page id %d outside the file's %d pages", id, m.PageCount)
		}
		if !c.mark(id) {
			return fmt.Errorf("page %d is twice in the freelist", id)
		}
	}
	var buckets []uint64
	names := map[string]bool{}
	err := c.walk(m.Root, func(p []byte) error {
		return bucketRoots(p, func(name []byte, root uint64, inline []byte) error {
			names[string(name)] = true
			if root == 0 {
				// bbolt reads an inline page without bounds checks.
				if err := checkInline(inline); err != nil {
					return fmt.Errorf("inline bucket %q: %w", name, err)
				}
				return nil
			}
			buckets = append(buckets, root)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("root bucket: %w", err)
	}
	for _, name := range required {
		if !names[string(name)] {
			return fmt.Errorf("root bucket: no bucket %q", name)
		}
	}
	for _, root := range buckets {
		if err := c.walk(root, nil); err != nil {
			return fmt.Errorf("bucket at page %d: %w", root, err)
		}
	}
	return c.allAccounted()
}

// allAccounted checks that every page but the two meta pages is in a tree
// or free: a damaged branch can orphan a subtree whose entries bbolt would
// never show.
func (c *treeCheck) allAccounted() error {
	for id := uint64(2); id < c.m.PageCount; id++ {
		if c.seen[id/64]&(1<<(id%64)) == 0 {
			return fmt.Errorf("page %d is in no tree and not free: a subtree lost", id)
		}
	}
	return nil
}

// mark records id as seen and reports whether it was not already.
func (c *treeCheck) mark(id uint64) bool {
	w, bit := id/64, uint64(1)<<(id%64)
	if c.seen[w]&bit != 0 {
		return false
	}
	c.seen[w] |= bit
	return true
}

// walk checks the tree rooted at page root: every page is in the file, a
// branch or a leaf, seen once, leaves all at one depth, and keys within the
// ranges their branches give (bbolt's Seek relies on them). leaf, if not
// nil, gets each leaf page whole.
func (c *treeCheck) walk(root uint64, leaf func(p []byte) error) error {
	type frame struct {
		id, depth uint64
		lo, hi    []byte // the keys under it lie in [lo, hi); nil: unbounded
	}
	stack := []frame{{id: root}}
	leafDepth := uint64(maxTreeDepth)
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		h, err := c.visit(f.id)
		if err != nil {
			return err
		}
		switch flags := h.flags; {
		case flags == leafPageFlag && leafDepth == maxTreeDepth:
			leafDepth = f.depth
		case flags == leafPageFlag && f.depth != leafDepth:
			return fmt.Errorf("leaf page %d at depth %d, the others at %d", f.id, f.depth, leafDepth)
		case flags == branchPageFlag && f.depth >= leafDepth:
			return fmt.Errorf("branch page %d at depth %d, leaves at %d", f.id, f.depth, leafDepth)
		case flags != leafPageFlag && flags != branchPageFlag:
			return fmt.Errorf("page %d (depth %d) has type %#x: not a branch or a leaf", f.id, f.depth, flags)
		}
		span := h.span(uint64(c.ps))
		if h.flags == leafPageFlag {
			if elemAt(h.count) > span {
				return fmt.Errorf("leaf page %d: %d elements do not fit", f.id, h.count)
			}
			if err := c.leafBounds(f.id, h.count, span, f.lo, f.hi); err != nil {
				return err
			}
			if leaf != nil {
				p, err := c.read(f.id, span)
				if err != nil {
					return err
				}
				if err := leaf(p); err != nil {
					return err
				}
			}
			continue
		}
		if h.count == 0 || elemAt(h.count) > span {
			return fmt.Errorf("branch page %d: %d elements", f.id, h.count)
		}
		p, err := c.read(f.id, span)
		if err != nil {
			return err
		}
		n := len(stack)
		for i := range h.count {
			kid, k, ok := branchAt(p, i)
			if !ok {
				return fmt.Errorf("branch page %d: key %d out of the page", f.id, i)
			}
			if !inBounds(k, f.lo, f.hi) || (i > 0 && bytes.Compare(stack[len(stack)-1].lo, k) >= 0) {
				return fmt.Errorf("branch page %d: key %d out of order or outside its parent's range", f.id, i)
			}
			if i > 0 {
				stack[len(stack)-1].hi = k
			}
			stack = append(stack, frame{id: kid, depth: f.depth + 1, lo: k, hi: f.hi})
		}
		slices.Reverse(stack[n:]) // so the first child is walked first
	}
	return nil
}

// leafBounds checks that leaf page id's first and last keys lie in [lo, hi).
func (c *treeCheck) leafBounds(id uint64, count int, span uint64, lo, hi []byte) error {
	if count == 0 || (lo == nil && hi == nil) {
		return nil
	}
	if c.elem == nil {
		c.elem, c.key = make([]byte, LeafElemSize), make([]byte, maxBoundKey)
	}
	for _, i := range []int{0, count - 1} {
		if _, err := c.r.ReadAt(c.elem, int64(id)*c.ps+int64(elemAt(i))); err != nil {
			return err
		}
		_, k0, k1, _ := leafElem(c.elem, i)
		if k1 > span || k1-k0 > maxBoundKey {
			return fmt.Errorf("leaf page %d: element %d out of its page", id, i)
		}
		k := c.key[:k1-k0]
		if _, err := c.r.ReadAt(k, int64(id)*c.ps+int64(k0)); err != nil {
			return err
		}
		if !inBounds(k, lo, hi) {
			return fmt.Errorf("leaf page %d: key %d outside the range its parent gives it", id, i)
		}
	}
	return nil
}

// maxBoundKey bounds the keys leafBounds reads (8 bytes, or bucket names).
const maxBoundKey = 4096

// inBounds reports whether lo <= k < hi (a nil bound is no bound).
func inBounds(k, lo, hi []byte) bool {
	return (lo == nil || bytes.Compare(k, lo) >= 0) && (hi == nil || bytes.Compare(k, hi) < 0)
}

// visit reads page id's header and marks it and its overflow pages seen.
func (c *treeCheck) visit(id uint64) (pageHeader, error) {
	if id < 2 || id >= c.m.PageCount {
		return pageHeader{}, fmt.Errorf("page %d is not a data page of the file's %d", id, c.m.PageCount)
	}
	h, err := c.header(id)
	if err != nil {
		return pageHeader{}, err
	}
	if h.id != id {
		return pageHeader{}, fmt.Errorf("page %d says it is page %d", id, h.id)
	}
	if h.overflow >= c.m.PageCount-id {
		return pageHeader{}, fmt.Errorf("page %d and its %d overflow pages run past the file's %d", id, h.overflow, c.m.PageCount)
	}
	for o := id; o <= id+h.overflow; o++ {
		if !c.mark(o) {
			return pageHeader{}, fmt.Errorf("page %d is reached twice (a cycle, two parents, or a free page)", o)
		}
	}
	return h, nil
}

// bucketRoots calls fn for every bucket of the root bucket's leaf page p:
// its name, root page id (0 for an inline bucket) and inline page. The root
// bucket holds buckets only: anything else is damage.
func bucketRoots(p []byte, fn func(name []byte, root uint64, inline []byte) error) error {
	return LeafElems(p, func(i int, flags uint32, k, v []byte) error {
		if flags != bucketLeafFlag {
			return fmt.Errorf("element %d (%q) has flags %#x: not a bucket", i, k, flags)
		}
		root, inline, ok := bucketValue(v)
		if !ok {
			return fmt.Errorf("bucket element %d (%q) of %d bytes", i, k, len(v))
		}
		return fn(k, root, inline)
	})
}

// checkInline checks an inline bucket's page: a leaf of values, keys in order.
func checkInline(p []byte) error {
	if len(p) < PageHeaderSize || decodeHeader(p).flags != leafPageFlag {
		return errors.New("its page is not a leaf")
	}
	var prev []byte
	return LeafElems(p, func(i int, flags uint32, k, _ []byte) error {
		switch {
		case flags != 0:
			return fmt.Errorf("element %d (%q) has flags %#x: not a value", i, k, flags)
		case len(k) == 0 || (i > 0 && string(k) <= string(prev)):
			return fmt.Errorf("element %d: key %q out of order", i, k)
		}
		prev = k
		return nil
	})
}
