package tree

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const (
	stateFile  = "state"
	stateMagic = "fleetgen state v1"
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

// loadState reads the stat cache of dir; anything wrong with it gives an
// empty one (it only saves reads).
func loadState(meta string) map[string]stamp {
	out := map[string]stamp{}
	p := filepath.Join(meta, stateFile)
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxState {
		return out
	}
	data, err := readFile(p, st.Size)
	if err != nil {
		return out
	}
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	magic, at, _ := strings.Cut(string(line), " @")
	taken, err := strconv.ParseInt(at, 10, 64)
	if magic != stateMagic || err != nil {
		return out
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		f := strings.SplitN(string(line), " ", 6)
		if len(f) != 6 || pathProblem(f[5]) != "" {
			return map[string]stamp{}
		}
		var s stamp
		var nums [4]int64
		for i := range nums {
			if nums[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
				return map[string]stamp{}
			}
		}
		s.ino, s.size, s.mtime, s.ctime = nums[0], nums[1], nums[2], nums[3]
		if n, err := hex.Decode(s.sum[:], []byte(f[4])); err != nil || n != 32 {
			return map[string]stamp{}
		}
		s.racy = s.ctime > taken-int64(racyWindow)
		out[f[5]] = s
	}
	return out
}

// saveState writes the stat cache through a new temporary file and a rename.
func saveState(meta string, stamps map[string]stamp) error {
	paths := make([]string, 0, len(stamps))
	for p := range stamps {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	tmp, err := os.CreateTemp(meta, stateFile+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", meta, err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	fmt.Fprintf(w, "%s @%d\n", stateMagic, time.Now().UnixNano())
	for _, p := range paths {
		s := stamps[p]
		fmt.Fprintf(w, "%d %d %d %d %x %s\n", s.ino, s.size, s.mtime, s.ctime, s.sum[:], p)
	}
	err = w.Flush()
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
