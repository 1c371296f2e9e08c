package tree

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	stateFile  = "state"
	stateMagic = "fleetgen state v3"
	maxState   = 512 << 20
	// racyWindow: a file whose change time is this close to when the state
	// was taken may have been changed again within the same clock tick, with
	// the same times; its entry is not trusted (as Git does with its index).
	racyWindow = 50 * time.Millisecond
)

// stamp is what the state file remembers of one file fleetgen wrote: its
// stat and the SHA-256 of the bytes written. The state file sits in the
// untrusted output folder, so a stamp only lets Write skip reading a file
// whose stat matches exactly, change time and inode included (neither can be
// set by hand); it never decides content on its own.
type stamp struct {
	ino, size, mtime, ctime int64
	sum                     [32]byte
	// racy: changed too close to when the state was taken to be trusted.
	racy bool
}

func stampOf(st *unix.Stat_t, sum [32]byte) stamp {
	return stamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), sum: sum}
}

// matches reports whether st is the file the stamp was taken of; a racy
// stamp never matches.
func (s stamp) matches(st *unix.Stat_t) bool {
	return !s.racy && s.sameStat(st)
}

func (s stamp) sameStat(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFREG && int64(st.Ino) == s.ino && st.Size == s.size &&
		st.Mtim.Nano() == s.mtime && st.Ctim.Nano() == s.ctime
}

// dirStamp is what the state file remembers of a folder of the tree: its
// stat when its entries were last known. Adding, removing or renaming an
// entry changes a folder's modification and change times, so a folder whose
// stat still matches holds the entries the state lists below it, and Write
// need not list it again. known: the stat is valid (a folder the last update
// changed is recorded as existing, not stamped).
type dirStamp struct {
	ino, mtime, ctime int64
	known, racy       bool
}

func dirStampOf(st *unix.Stat_t) dirStamp {
	return dirStamp{ino: int64(st.Ino), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), known: true}
}

func (d dirStamp) matches(st *unix.Stat_t) bool {
	return d.known && !d.racy && st.Mode&unix.S_IFMT == unix.S_IFDIR && int64(st.Ino) == d.ino &&
		st.Mtim.Nano() == d.mtime && st.Ctim.Nano() == d.ctime
}

// state is the stat cache of an output folder: the files fleetgen wrote, the
// folders of the tree, and the other entries of those folders (files
// fleetgen does not own, symlinks and the like), so that a folder whose
// stamp matches can be read from it instead of listed.
type state struct {
	files  map[string]stamp
	dirs   map[string]dirStamp // "." is dir itself
	others map[string]fileKind
	// input is Options.Input of the update that left the tree ("": none),
	// and count the number of files it wrote: the tree is that update's
	// output while every one of its files still matches its stamp.
	input string
	count int
}

func emptyState() *state {
	return &state{files: map[string]stamp{}, dirs: map[string]dirStamp{}, others: map[string]fileKind{}}
}

// loadState reads the stat cache of dir; anything wrong with it gives an
// empty one (it only saves reads and listings). It is read on every render,
// 60,000 lines for a 10,000-cluster tree, so it parses by hand: one string
// for the whole file, each path a substring of it, maps sized up front.
func loadState(meta string) *state {
	return loadStateThen(meta, nil)
}

// loadStateThen is loadState; header, when not nil, is called with the
// input the file's first line names before the rest is parsed (not at all
// when there is no file to parse). The line is not checked: it can only tell
// a caller that the cache is not of its input.
func loadStateThen(meta string, header func(input string)) *state {
	p := filepath.Join(meta, stateFile)
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxState {
		return emptyState()
	}
	data, err := readFile(p, st.Size)
	if err != nil {
		return emptyState()
	}
	if len(data) == 0 {
		return emptyState()
	}
	if header != nil {
		first, _, _ := strings.Cut(unsafe.String(&data[0], len(data)), "\n")
		_, in, _ := strings.Cut(first, " input=")
		in, _, _ = strings.Cut(in, " ")
		header(in)
	}
	// The paths of the cache are substrings of the file's text: one string
	// without a copy of its 7 MB (10,000 clusters); data is never written.
	out, ok := parseState(unsafe.String(&data[0], len(data)))
	if !ok {
		return emptyState()
	}
	return out
}

// parseState parses a state file; ok is false when any line is wrong.
func parseState(text string) (*state, bool) {
	line, rest, _ := strings.Cut(text, "\n")
	magic, at, _ := strings.Cut(line, " @")
	at, in, _ := strings.Cut(at, " ")
	taken, err := strconv.ParseInt(at, 10, 64)
	if magic != stateMagic || err != nil {
		return nil, false
	}
	var input string
	var count int
	if in != "" {
		// input=<Options.Input> <count>: Input is hex.
		v, n, _ := strings.Cut(strings.TrimPrefix(in, "input="), " ")
		c, err := strconv.Atoi(n)
		if !strings.HasPrefix(in, "input=") || err != nil || c < 0 || !isHex(v) {
			return nil, false
		}
		input, count = v, c
	}
	racy := func(ctime int64) bool { return ctime > taken-int64(racyWindow) }
	var nf, nd int
	for i := 0; i+1 < len(rest); i++ {
		if i == 0 || rest[i-1] == '\n' {
			switch rest[i] {
			case 'f':
				nf++
			case 'd':
				nd++
			}
		}
	}
	out := &state{files: make(map[string]stamp, nf), dirs: make(map[string]dirStamp, nd), others: map[string]fileKind{}, input: input, count: count}
	var nums [4]int64
	for len(rest) > 0 {
		line, rest, _ = strings.Cut(rest, "\n")
		if len(line) < 3 || line[1] != ' ' {
			return nil, false
		}
		kind, fields := line[0], line[2:]
		n := 0
		switch kind {
		case 'f':
			n = 4
		case 'd':
			n = 3
		case 'o', 'r':
		default:
			return nil, false
		}
		for k := 0; k < n; k++ {
			var x string
			var ok bool
			if x, fields, ok = strings.Cut(fields, " "); !ok {
				return nil, false
			}
			v, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return nil, false
			}
			nums[k] = v
		}
		var sum [32]byte
		if kind == 'f' {
			x, f, ok := strings.Cut(fields, " ")
			if !ok || len(x) != 64 {
				return nil, false
			}
			var hx [64]byte
			copy(hx[:], x)
			if n, err := hex.Decode(sum[:], hx[:]); err != nil || n != 32 {
				return nil, false
			}
			fields = f
		}
		p := fields
		if (p != "." || kind != 'd') && pathProblem(p) != "" {
			return nil, false
		}
		switch kind {
		case 'f':
			s := stamp{ino: nums[0], size: nums[1], mtime: nums[2], ctime: nums[3], sum: sum}
			s.racy = racy(s.ctime)
			out.files[p] = s
		case 'd':
			d := dirStamp{ino: nums[0], mtime: nums[1], ctime: nums[2], known: nums[0] != 0}
			d.racy = racy(d.ctime)
			out.dirs[p] = d
		case 'o':
			out.others[p] = other
		case 'r':
			out.others[p] = regular
		}
	}
	return out, true
}

func isHex(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// children returns the entries the state lists below each folder.
func (s *state) children() map[string][]entry {
	out := make(map[string][]entry, len(s.dirs))
	add := func(p string, e entry) {
		d, name := ".", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			d, name = p[:i], p[i+1:]
		}
		e.name, e.path = name, p
		out[d] = append(out[d], e)
	}
	for p := range s.files {
		add(p, entry{kind: regular})
	}
	for p, k := range s.others {
		add(p, entry{kind: k})
	}
	for p := range s.dirs {
		if p != "." {
			add(p, entry{dir: true})
		}
	}
	return out
}

// saveState writes the stat cache through a new temporary file and a rename.
func saveState(meta string, s *state) error {
	return saveStateAt(meta, s, time.Now())
}

// saveStateAt is saveState with the time the stamps count as taken.
func saveStateAt(meta string, s *state, taken time.Time) error {
	// One line per entry, sorted by path; formatted by hand (60,000 lines
	// for 10,000 clusters).
	// Each line holds its stamp's index (in files or dirs): no second map
	// lookup per line.
	type line struct {
		p    string
		kind byte
		i    int32
	}
	lines := make([]line, 0, len(s.files)+len(s.dirs)+len(s.others))
	files := make([]stamp, 0, len(s.files))
	for p, st := range s.files {
		lines = append(lines, line{p, 'f', int32(len(files))})
		files = append(files, st)
	}
	dirs := make([]dirStamp, 0, len(s.dirs))
	for p, d := range s.dirs {
		lines = append(lines, line{p, 'd', int32(len(dirs))})
		dirs = append(dirs, d)
	}
	for p, k := range s.others {
		c := byte('o')
		if k == regular {
			c = 'r'
		}
		lines = append(lines, line{p, c, 0})
	}
	slices.SortFunc(lines, func(a, b line) int { return strings.Compare(a.p, b.p) })
	buf := make([]byte, 0, 128*len(lines)+128)
	buf = fmt.Appendf(buf, "%s @%d", stateMagic, taken.UnixNano())
	if s.input != "" {
		buf = fmt.Appendf(buf, " input=%s %d", s.input, s.count)
	}
	buf = append(buf, '\n')
	num := func(n int64) {
		buf = strconv.AppendInt(buf, n, 10)
		buf = append(buf, ' ')
	}
	for _, l := range lines {
		buf = append(buf, l.kind, ' ')
		switch l.kind {
		case 'f':
			st := &files[l.i]
			num(st.ino)
			num(st.size)
			num(st.mtime)
			num(st.ctime)
			buf = hex.AppendEncode(buf, st.sum[:])
			buf = append(buf, ' ')
		case 'd':
			d := dirs[l.i]
			if !d.known {
				d = dirStamp{}
			}
			num(d.ino)
			num(d.mtime)
			num(d.ctime)
		}
		buf = append(buf, l.p...)
		buf = append(buf, '\n')
	}
	tmp, err := os.CreateTemp(meta, stateFile+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", meta, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(buf)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(meta, stateFile))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", meta, err)
	}
	return nil
}
