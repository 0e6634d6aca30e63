package store

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Report is what Check or Salvage found in a state file.
type Report struct {
	Path string
	Size int64
	// PageSize and TxID are of the newest valid meta page; 0 when none.
	PageSize int
	TxID     uint64
	// Schema is the file's schema stamp; empty when unreadable.
	Schema string
	// Entries counts the readable key/values per bucket, reached through
	// the file's tree.
	Entries map[string]int
	// Loose counts key/values found only on pages the tree no longer
	// reaches (cut off by damage, or old versions), per bucket the caller's
	// classify gave them; Salvage keeps those the tree lacks.
	Loose map[string]int
	// Unreadable counts values of the file's tree that classify refused;
	// UnreadableKeys names them ("bucket key", at most 100).
	Unreadable     int
	UnreadableKeys []string
	// Rebuilt counts, per bucket, the unreadable values Salvage replaced
	// with what Rebuild made of their keys.
	Rebuilt map[string]int
	// Problem sums up what is damaged or unreadable (each listed in
	// Damaged and UnreadableKeys); empty when the file is healthy.
	Problem string
	// Damaged lists the parts that could not be read (at most 100).
	Damaged []string
}

// Healthy reports whether the file is whole: Open accepts it and every
// value in it is readable.
func (r *Report) Healthy() bool { return r.Problem == "" }

// Classify says where a value found in a state file belongs. bucket is the
// bucket the file's tree puts it in, or "" for a value found on a page the
// tree no longer reaches. It returns the bucket to keep it in, or ok false
// for a value that is not readable.
type Classify func(bucket string, key, value []byte) (keep string, ok bool)

// Rebuild makes a value from the key of an unreadable value of bucket,
// for Salvage to keep in its place; ok false drops it.
type Rebuild func(bucket string, key []byte) (value []byte, ok bool)

// Pick chooses between two values of one key of bucket found on loose
// pages (one may be an older version): it returns the one to keep.
type Pick func(bucket string, a, b []byte) []byte

type found struct {
	tree, loose, rebuilt map[string]map[string][]byte
}

// read reads the file at path without bbolt; rebuild may be nil.
func read(path string, classify Classify, pick Pick, rebuild Rebuild) (*Report, *found, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("state file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("state file %s: %w", path, err)
	}
	rep := &Report{Path: path, Size: st.Size(), Entries: map[string]int{}, Loose: map[string]int{}, Rebuilt: map[string]int{}}
	fd := &found{tree: map[string]map[string][]byte{}, loose: map[string]map[string][]byte{}, rebuilt: map[string]map[string][]byte{}}
	if st.Size() == 0 {
		return rep, fd, nil // bbolt makes an empty file a new state file
	}
	fl, err := parseFile(f, st.Size())
	if err != nil {
		rep.Damaged = []string{err.Error()}
		fl = &file{r: f, size: st.Size()}
	} else {
		rep.PageSize, rep.TxID = int(fl.metas[0].pageSize), fl.metas[0].txid
		if err := fl.verifyHeader(); err != nil {
			rep.Damaged = []string{err.Error()}
		}
	}
	put := func(m map[string]map[string][]byte, b string, k, v []byte) {
		if m[b] == nil {
			m[b] = map[string][]byte{}
		}
		m[b][string(k)] = slices.Clone(v)
	}
	seen := map[uint64]bool{}
	if len(fl.metas) > 0 {
		var damaged []string
		damaged, seen = fl.walk(func(bucket string, k, v []byte) {
			if bucket == string(bucketMeta) {
				if string(k) == string(keySchema) {
					rep.Schema = string(v)
				}
				return
			}
			keep, ok := classify(bucket, k, v)
			if ok {
				put(fd.tree, keep, k, v)
				return
			}
			rep.Unreadable++
			if len(rep.UnreadableKeys) < 100 {
				rep.UnreadableKeys = append(rep.UnreadableKeys, fmt.Sprintf("%s %q", bucket, k))
			}
			if rebuild == nil {
				return
			}
			if nv, ok := rebuild(bucket, k); ok {
				put(fd.rebuilt, bucket, k, nv)
			}
		})
		rep.Damaged = append(rep.Damaged, damaged...)
	}
	rep.Problem = problem(len(rep.Damaged), rep.Unreadable)
	if len(rep.Damaged) == 0 {
		// Pages outside a healthy tree hold only older versions and
		// deleted values: nothing to salvage from them.
		return finish(rep, fd), fd, nil
	}
	fl.scan(seen, func(k, v []byte) {
		keep, ok := classify("", k, v)
		if !ok || fd.tree[keep][string(k)] != nil || fd.rebuilt[keep][string(k)] != nil {
			return
		}
		if old := fd.loose[keep][string(k)]; old != nil {
			v = pick(keep, old, v)
		}
		put(fd.loose, keep, k, v)
	})
	return finish(rep, fd), fd, nil
}

func finish(rep *Report, fd *found) *Report {
	rep.Entries, rep.Loose, rep.Rebuilt = sizes(fd.tree), sizes(fd.loose), sizes(fd.rebuilt)
	return rep
}

// sizes counts the values of each bucket.
func sizes(m map[string]map[string][]byte) map[string]int {
	n := make(map[string]int, len(m))
	for b, values := range m {
		n[b] = len(values)
	}
	return n
}

// Check reads the file at path without bbolt and without changing it, and
// reports what it holds and what is damaged. It fails only when the file
// cannot be read at all.
func Check(path string, classify Classify, pick Pick) (*Report, error) {
	rep, _, err := read(path, classify, pick, nil)
	return rep, err
}

// Salvage copies every readable value of the file at src into a new state
// file at dst (which must not exist), leaving src as it is: the values of
// the file's tree, what rebuild makes of the keys of its unreadable ones,
// and the values found only on pages the tree no longer reaches for keys
// the tree lacks. The schema of dst is opts.Schema; src must be of that
// schema or one of opts.Upgrades, or have lost its stamp. With nothing to
// copy it fails, and writes nothing.
func Salvage(src, dst string, opts Options, classify Classify, pick Pick, rebuild Rebuild) (*Report, error) {
	if err := refuseExisting(dst); err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	rep, fd, err := read(src, classify, pick, rebuild)
	if err != nil {
		return nil, err
	}
	if rep.Schema != "" && rep.Schema != opts.Schema && !slices.Contains(opts.Upgrades, rep.Schema) {
		return rep, fmt.Errorf("salvage: %s has schema version %q, this exporter understands %q", src, rep.Schema, opts.Schema)
	}
	for b := range fd.loose {
		if b != Jobs && !slices.Contains(opts.Buckets, b) {
			return rep, fmt.Errorf("salvage: classify returned unknown bucket %q", b)
		}
	}
	var ops []Op
	for _, m := range []map[string]map[string][]byte{fd.tree, fd.rebuilt, fd.loose} {
		for _, b := range slices.Sorted(maps.Keys(m)) {
			for _, k := range slices.Sorted(maps.Keys(m[b])) {
				ops = append(ops, Op{Bucket: b, Key: k, Value: m[b][k]})
			}
		}
	}
	if len(ops) == 0 {
		return rep, fmt.Errorf("salvage: nothing readable in %s; %s was not written", src, dst)
	}
	out, err := Open(dst, opts)
	if err != nil {
		return rep, fmt.Errorf("salvage: %w", err)
	}
	for chunk := range slices.Chunk(ops, 1000) {
		if err := out.Apply(chunk...); err != nil {
			_ = out.Close()
			return rep, fmt.Errorf("salvage: writing %s: %w", dst, err)
		}
	}
	if err := out.Close(); err != nil {
		return rep, fmt.Errorf("salvage: closing %s: %w", dst, err)
	}
	return rep, nil
}

// problem sums up what is wrong with a file; "" for nothing.
func problem(damaged, unreadable int) string {
	var parts []string
	if damaged > 0 {
		parts = append(parts, plural(damaged, "damaged part", "damaged parts"))
	}
	if unreadable > 0 {
		parts = append(parts, plural(unreadable, "unreadable value", "unreadable values"))
	}
	return strings.Join(parts, " and ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// String is the report as a few lines for a person: each problem once.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "file: %s (%d bytes", r.Path, r.Size)
	if r.PageSize > 0 {
		fmt.Fprintf(&b, ", pages of %d bytes, transaction %d", r.PageSize, r.TxID)
	}
	b.WriteString(")\n")
	if r.Schema != "" {
		fmt.Fprintf(&b, "schema: %s\n", r.Schema)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Entries)) {
		fmt.Fprintf(&b, "readable %s: %d\n", k, r.Entries[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Loose)) {
		fmt.Fprintf(&b, "found only on pages the file no longer reaches, %s: %d (may be older versions)\n", k, r.Loose[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Rebuilt)) {
		fmt.Fprintf(&b, "rebuilt from the keys of unreadable values, %s: %d\n", k, r.Rebuilt[k])
	}
	for _, k := range r.UnreadableKeys {
		fmt.Fprintf(&b, "unreadable value: %s\n", k)
	}
	for _, d := range r.Damaged {
		fmt.Fprintf(&b, "damaged: %s\n", d)
	}
	if r.Healthy() {
		b.WriteString("status: healthy\n")
	} else {
		fmt.Fprintf(&b, "status: DAMAGED (%s, listed above)\n", r.Problem)
	}
	return b.String()
}
