package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The on-disk layout of a bbolt file (go.etcd.io/bbolt/internal/common),
// read here with bounds checks of our own: bbolt trusts its file and
// panics, or faults on its memory map, on some damaged ones (a file cut
// short past its meta pages, garbage in a page header). Nothing here uses
// bbolt or a memory map, so a damaged file is reported, never a crash.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2

	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	branchElemSize   = 16 // pos u32, ksize u32, pgid u64
	leafElemSize     = 16 // flags u32, pos u32, ksize u32, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	metaSize         = 64 // magic, version, pageSize, flags, root{u64,u64}, freelist, pgid, txid, checksum
	metaSumLen       = 56 // bytes covered by the meta checksum

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	leafBucket   = 0x01

	minPageSize = 512
	maxPageSize = 1 << 16
	maxDepth    = 64
)

// DamagedError means the state file is not a readable bbolt file: cut
// short, overwritten, or not a state file at all. The file was left as it
// is.
type DamagedError struct {
	Path    string
	Problem string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("agent state file %s is damaged: %s; it was left as it is: inspect it with `mintlify_exporter state check %s`, "+
		"copy every readable job with `mintlify_exporter state salvage %s NEWFILE` and start with --agent.state-file=NEWFILE "+
		"(or move it away to start empty); see alerts/RUNBOOK.md, \"Damaged agent state file\"",
		e.Path, e.Problem, e.Path, e.Path)
}

// meta is a decoded, checksummed meta page.
type meta struct {
	pageSize uint32
	root     uint64 // root bucket's page
	freelist uint64
	pgid     uint64 // high water mark: pages in use are below it
	txid     uint64
}

const noFreelist = ^uint64(0)

// file is a bbolt file read with ReadAt and bounds checks.
type file struct {
	r     io.ReaderAt
	size  int64
	metas []meta // valid meta pages, newest first
}

// readFile reads and checks the meta pages of the file at path. A missing
// or empty file is not an error (bbolt creates it); it returns nil then.
func readFile(f *os.File) (*file, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, nil
	}
	return parseFile(f, st.Size())
}

func parseFile(r io.ReaderAt, size int64) (*file, error) {
	fl := &file{r: r, size: size}
	n := int64(pageHeaderSize + metaSize)
	if size < n {
		return nil, fmt.Errorf("only %d bytes long, shorter than the file header (cut short, or not a state file)", size)
	}
	readMeta := func(off int64) (meta, error) {
		buf := make([]byte, n)
		if off+n > size {
			return meta{}, errors.New("past the end of the file")
		}
		if _, err := r.ReadAt(buf, off); err != nil {
			return meta{}, err
		}
		return decodeMeta(buf[pageHeaderSize:])
	}
	var im *implausibleMeta
	m0, err0 := readMeta(0)
	if errors.As(err0, &im) {
		return nil, fmt.Errorf("first meta page: %s", im.msg)
	}
	if err0 == nil {
		fl.metas = append(fl.metas, m0)
		m1, err := readMeta(int64(m0.pageSize))
		switch {
		case errors.As(err, &im):
			return nil, fmt.Errorf("second meta page: %s", im.msg)
		case err == nil && m1.pageSize != m0.pageSize:
			return nil, fmt.Errorf("the meta pages disagree on the page size (%d, %d)", m0.pageSize, m1.pageSize)
		case err == nil:
			fl.metas = append(fl.metas, m1)
		}
	} else {
		// The second meta page sits one page in: try the page sizes bbolt
		// may have used.
		for ps := int64(minPageSize); ps <= maxPageSize; ps *= 2 {
			if m1, err := readMeta(ps); err == nil && int64(m1.pageSize) == ps {
				fl.metas = append(fl.metas, m1)
				break
			}
		}
	}
	if len(fl.metas) == 0 {
		return nil, fmt.Errorf("no valid meta page (first: %v): not a state file, or overwritten", err0)
	}
	if len(fl.metas) == 2 && fl.metas[1].txid > fl.metas[0].txid {
		fl.metas[0], fl.metas[1] = fl.metas[1], fl.metas[0]
	}
	return fl, nil
}

// implausibleMeta is a meta page with a valid checksum and values that
// cannot be: bbolt would trust it.
type implausibleMeta struct{ msg string }

func (e *implausibleMeta) Error() string { return e.msg }

func decodeMeta(b []byte) (meta, error) {
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != boltMagic {
		return meta{}, errors.New("bad magic number")
	}
	if v := le.Uint32(b[4:]); v != boltVersion {
		return meta{}, fmt.Errorf("bbolt format version %d, want %d", v, boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:metaSumLen])
	if le.Uint64(b[metaSumLen:]) != h.Sum64() {
		return meta{}, errors.New("checksum mismatch")
	}
	// From here on bbolt would use the page: what is wrong with it now is
	// damage, not a reason to fall back to the other meta page.
	m := meta{
		pageSize: le.Uint32(b[8:]),
		root:     le.Uint64(b[16:]),
		freelist: le.Uint64(b[32:]),
		pgid:     le.Uint64(b[40:]),
		txid:     le.Uint64(b[48:]),
	}
	if m.pageSize < minPageSize || m.pageSize > maxPageSize || m.pageSize&(m.pageSize-1) != 0 {
		return meta{}, &implausibleMeta{fmt.Sprintf("implausible page size %d", m.pageSize)}
	}
	if m.pgid < 2 || m.root >= m.pgid || m.root < 2 || (m.freelist != noFreelist && m.freelist >= m.pgid) {
		return meta{}, &implausibleMeta{fmt.Sprintf("page ids out of range (root %d, freelist %d, high water mark %d)", m.root, m.freelist, m.pgid)}
	}
	return m, nil
}

// page is one page (with its overflow) read from the file.
type page struct {
	id    uint64
	flags uint16
	count int
	data  []byte // the whole page, header included
}

// readPage reads page id of a file whose meta is m, checking that it lies
// within the high water mark and the file.
func (fl *file) readPage(m *meta, id uint64) (*page, error) {
	data, err := fl.readRaw(m, id)
	if err != nil {
		return nil, err
	}
	return parsePage(id, data)
}

// readRaw reads page id with its overflow, checked as readPage says, and
// that its header names it.
func (fl *file) readRaw(m *meta, id uint64) ([]byte, error) {
	ps := int64(m.pageSize)
	if id < 2 || id >= m.pgid {
		return nil, fmt.Errorf("page %d outside the file's pages (2 to %d)", id, m.pgid-1)
	}
	off := int64(id) * ps
	if off+ps > fl.size {
		return nil, fmt.Errorf("page %d lies past the end of the file (%d bytes): the file was cut short", id, fl.size)
	}
	hdr := make([]byte, pageHeaderSize)
	if _, err := fl.r.ReadAt(hdr, off); err != nil {
		return nil, fmt.Errorf("reading page %d: %w", id, err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(hdr); got != id {
		return nil, fmt.Errorf("page %d says it is page %d: overwritten", id, got)
	}
	overflow := uint64(le.Uint32(hdr[12:]))
	if id+overflow >= m.pgid || off+int64(overflow+1)*ps > fl.size {
		return nil, fmt.Errorf("page %d overflows past the end of the file or the file's pages", id)
	}
	data := make([]byte, int64(overflow+1)*ps)
	if _, err := fl.r.ReadAt(data, off); err != nil {
		return nil, fmt.Errorf("reading page %d: %w", id, err)
	}
	return data, nil
}

func parsePage(id uint64, data []byte) (*page, error) {
	le := binary.LittleEndian
	p := &page{id: id, flags: le.Uint16(data[8:]), count: int(le.Uint16(data[10:])), data: data}
	elem := 0
	switch p.flags {
	case flagBranch:
		elem = branchElemSize
	case flagLeaf:
		elem = leafElemSize
	default:
		return nil, fmt.Errorf("page %d has type %#x where a branch or leaf page belongs: overwritten", id, p.flags)
	}
	if p.flags == flagBranch && p.count == 0 {
		// bbolt never writes one, and its cursor would read past it.
		return nil, fmt.Errorf("page %d is an empty branch page", id)
	}
	if pageHeaderSize+p.count*elem > len(data) {
		return nil, fmt.Errorf("page %d claims %d elements, more than fit", id, p.count)
	}
	return p, nil
}

// slice returns data[off:off+n] or an error when it is out of bounds.
func slice(data []byte, off, n uint64) ([]byte, bool) {
	if off > uint64(len(data)) || n > uint64(len(data))-off {
		return nil, false
	}
	return data[off : off+n], true
}

// walker visits every key/value of every bucket reachable from a meta
// page, skipping (and reporting) what it cannot read.
type walker struct {
	fl      *file
	m       *meta
	seen    map[uint64]bool
	visit   func(bucket string, key, value []byte)
	damaged []string // what could not be read
	// budget bounds the elements visited: in a sound file each element
	// has 16 bytes of its own, but damaged elements may overlap, and
	// inline buckets within inline buckets would multiply them.
	budget int64
}

// spend takes one element from the budget; false when it is spent.
func (w *walker) spend() bool {
	if w.budget == 0 {
		w.budget = w.fl.size/leafElemSize + 16
	}
	w.budget--
	if w.budget == 0 {
		w.problem("more elements than the file can hold: elements overlap")
		w.budget = -1
	}
	return w.budget > 0
}

func (w *walker) problem(format string, args ...any) {
	if len(w.damaged) < 100 {
		w.damaged = append(w.damaged, fmt.Sprintf(format, args...))
	}
}

// walkBucket visits the bucket whose root page is root, or whose inline
// page is inline when root is 0.
func (w *walker) walkBucket(name string, root uint64, inline []byte, depth int) {
	if root == 0 {
		if len(inline) < pageHeaderSize {
			w.problem("bucket %q: inline page too short", name)
			return
		}
		p, err := parsePage(0, inline)
		if err != nil || p.flags != flagLeaf {
			w.problem("bucket %q: unreadable inline page", name)
			return
		}
		w.walkLeaf(name, p, depth)
		return
	}
	w.walkPage(name, root, depth)
}

func (w *walker) walkPage(name string, id uint64, depth int) {
	if depth > maxDepth {
		w.problem("bucket %q: tree deeper than %d pages", name, maxDepth)
		return
	}
	if w.seen[id] {
		w.problem("bucket %q: page %d reached twice", name, id)
		return
	}
	w.seen[id] = true
	p, err := w.fl.readPage(w.m, id)
	if err != nil {
		w.problem("bucket %q: %v", name, err)
		return
	}
	if p.flags == flagLeaf {
		w.walkLeaf(name, p, depth)
		return
	}
	le := binary.LittleEndian
	var prev []byte
	for i := range p.count {
		if !w.spend() {
			return
		}
		e := uint64(pageHeaderSize + i*branchElemSize)
		pos, ksize := uint64(le.Uint32(p.data[e:])), uint64(le.Uint32(p.data[e+4:]))
		k, ok := slice(p.data, e+pos, ksize)
		if !ok || (i > 0 && bytes.Compare(prev, k) >= 0) {
			w.problem("bucket %q: page %d element %d: key out of bounds or out of order", name, p.id, i)
			return
		}
		prev = k
		w.walkPage(name, le.Uint64(p.data[e+8:]), depth+1)
	}
}

func (w *walker) walkLeaf(name string, p *page, depth int) {
	le := binary.LittleEndian
	var prev []byte
	for i := range p.count {
		if !w.spend() {
			return
		}
		e := uint64(pageHeaderSize + i*leafElemSize)
		flags := le.Uint32(p.data[e:])
		pos, ksize, vsize := uint64(le.Uint32(p.data[e+4:])), uint64(le.Uint32(p.data[e+8:])), uint64(le.Uint32(p.data[e+12:]))
		k, ok1 := slice(p.data, e+pos, ksize)
		v, ok2 := slice(p.data, e+pos+ksize, vsize)
		if !ok1 || !ok2 {
			w.problem("bucket %q: page %d element %d points outside its page", name, p.id, i)
			continue
		}
		// bbolt finds keys by binary search: out of order, they are lost.
		if i > 0 && prev != nil && bytes.Compare(prev, k) >= 0 {
			w.problem("bucket %q: page %d element %d: key out of order", name, p.id, i)
		}
		prev = k
		if flags&leafBucket == 0 {
			if name == "" {
				// A state file's root holds buckets only.
				w.problem("page %d: a value %q where the file's root holds only buckets", p.id, k)
				continue
			}
			w.visit(name, k, v)
			continue
		}
		if len(v) < bucketHeaderSize {
			w.problem("bucket %q: page %d element %d: nested bucket header too short", name, p.id, i)
			continue
		}
		child := string(k)
		if name != "" {
			child = name + "/" + child
		}
		w.walkBucket(child, le.Uint64(v), v[bucketHeaderSize:], depth+1)
	}
}

// walk visits everything reachable from the newest meta page that leads to
// a readable tree. It returns what could not be read and the pages it
// read.
func (fl *file) walk(visit func(bucket string, key, value []byte)) (damaged []string, seen map[uint64]bool) {
	seen = map[uint64]bool{}
	for i := range fl.metas {
		w := &walker{fl: fl, m: &fl.metas[i], seen: seen, visit: visit}
		if _, err := fl.readPage(w.m, w.m.root); err != nil {
			damaged = append(damaged, fmt.Sprintf("root page of transaction %d: %v", w.m.txid, err))
			continue
		}
		w.walkPage("", w.m.root, 0)
		return append(damaged, w.damaged...), seen
	}
	return append(damaged, "no readable root page"), seen
}

// scan visits the key/values of every leaf page of the file that is not in
// skip, whatever bucket it belonged to (the page does not say): what a
// salvage can still find when the tree leading to it is gone. Such pages
// may also be old versions, freed by later transactions.
func (fl *file) scan(skip map[uint64]bool, visit func(key, value []byte)) {
	ps := int64(4096)
	if len(fl.metas) > 0 {
		ps = int64(fl.metas[0].pageSize)
	}
	n := uint64(fl.size / ps)
	m := &meta{pageSize: uint32(ps), pgid: n}
	w := &walker{fl: fl, m: m, seen: map[uint64]bool{}, visit: func(_ string, k, v []byte) { visit(k, v) }}
	for id := uint64(2); id < n; id++ {
		if skip[id] {
			continue
		}
		p, err := fl.readPage(m, id)
		if err != nil || p.flags != flagLeaf {
			continue
		}
		w.walkLeaf("?", p, 0)
	}
}

// checkFreelist checks that the freelist page the newest meta names is
// one, within the file.
func (fl *file) checkFreelist() error {
	m := &fl.metas[0]
	if m.freelist == noFreelist {
		return nil
	}
	data, err := fl.readRaw(m, m.freelist)
	if err != nil {
		return fmt.Errorf("the freelist: %w", err)
	}
	if binary.LittleEndian.Uint16(data[8:]) != flagFreelist {
		return fmt.Errorf("page %d is not the freelist the header names: overwritten", m.freelist)
	}
	return nil
}

// verify checks a whole file before bbolt may open it: the meta pages,
// the freelist, every page of every bucket, and that the file is as long
// as its newest meta page says. It returns nil for a healthy file.
func (fl *file) verify() error {
	if err := fl.verifyHeader(); err != nil {
		return err
	}
	m := &fl.metas[0]
	w := &walker{fl: fl, m: m, seen: map[uint64]bool{}, visit: func(string, []byte, []byte) {}}
	w.walkPage("", m.root, 0)
	if len(w.damaged) > 0 {
		return fmt.Errorf("%d unreadable part(s), first: %s", len(w.damaged), w.damaged[0])
	}
	return nil
}

// verifyHeader checks what verify checks beside the tree: the file's
// length and its freelist.
func (fl *file) verifyHeader() error {
	m := &fl.metas[0]
	if want := int64(m.pgid) * int64(m.pageSize); fl.size < want {
		return fmt.Errorf("%d bytes long but its header says %d pages of %d bytes (%d bytes): the file was cut short",
			fl.size, m.pgid, m.pageSize, want)
	}
	return fl.checkFreelist()
}
