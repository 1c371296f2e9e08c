package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Bounds of what inputs hashes: a fleet folder beyond them (a monorepo with
// fleet.yaml at its root, say) gets no unchanged-input shortcut, only the
// full render.
const (
	maxInputEntries = 20_000
	maxInputBytes   = 64 << 20
)

// inputs is what a render is made from, but the lock: every entry of the
// fleet's folder (fleet.yaml, layers, referenced files), the options that
// change what a render writes, the age identities and this binary. Render
// hashes it before loading (so a file changed while the render runs makes
// the next render a full one) and keeps it, with the lock the render leaves,
// in the output folder's stat cache: a later render with the same inputs and
// an untouched output folder has nothing to write (tree.Prepared.Unchanged).
//
// The fleet's folder is read as kustomize would see it, without following
// symlinks (their targets are hashed instead); the output folder and .git
// folders in it are left out, and a render whose layers or references read
// anything there records no inputs (inputsSafe).
type inputs struct {
	sum    [32]byte
	root   string // the fleet's folder, absolute, symlinks resolved
	outDir string // the output folder, likewise
}

// readInputs hashes the inputs of a render of cfg; ok is false when they
// cannot be told (a folder beyond the bounds, unreadable entries, variables
// {env: …} could read, or anything else a hash of the files would miss).
func readInputs(cfg Config, file string) (in inputs, ok bool) {
	// Variables fleet.yaml may read hold kubeconfigs: they are not hashed
	// into a file, and a render that could read them is never skipped.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, schema.KubeconfigEnvPrefix) || cfg.KubeconfigEnvPrefix != "" && strings.HasPrefix(name, cfg.KubeconfigEnvPrefix) {
			return in, false
		}
	}
	if cfg.LookupEnv != nil {
		return in, false // an environment other than the process's
	}
	root, err := realAbs(filepath.Dir(file))
	if err != nil {
		return in, false
	}
	out, err := realAbs(cfg.OutDir)
	if err != nil {
		return in, false
	}
	in.root, in.outDir = root, out
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	field("fleetgen inputs v1")
	if !binaryIdentity(field) {
		return in, false
	}
	field(filepath.Base(file))
	field(out)
	field(strconv.FormatBool(cfg.AllowPlaintextSecrets))
	field(cfg.KubeconfigEnvPrefix)
	keyFile := cfg.AgeKeyFile
	if keyFile == "" {
		keyFile = os.Getenv("SOPS_AGE_KEY_FILE")
	}
	field(keyFile)
	if keyFile != "" {
		b, err := os.ReadFile(keyFile) // trusted configuration, as ageIdentities reads it
		if err != nil {
			return in, false
		}
		field(string(b))
	}
	if !hashTree(field, root, out, lock.FileName) {
		return in, false
	}
	copy(in.sum[:], h.Sum(nil))
	return in, true
}

// digest is the inputs with the lock's bytes: the value kept in the stat
// cache (tree.Options.Input).
func (in inputs) digest(lockBytes []byte) string {
	h := sha256.New()
	h.Write(in.sum[:])
	h.Write([]byte{0})
	if lockBytes != nil {
		h.Write([]byte{1})
		h.Write(lockBytes)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inside reports whether the absolute path p is in the output folder or in
// a .git folder of the fleet's: places hashTree does not read.
func (in inputs) inside(p string) bool {
	if within(in.outDir, p) {
		return true
	}
	rel, err := filepath.Rel(in.root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return false
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == ".git" {
			return true
		}
	}
	return false
}

// hashTree hashes every entry below root but out and .git folders, in
// lexical order: name and kind, a regular file's bytes, a symlink's target.
func hashTree(field func(string), root, out, lockRel string) bool {
	r, err := safefs.OpenRoot(root)
	if err != nil {
		return false
	}
	defer r.Close()
	entries, total := 0, int64(0)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		entries++
		if entries > maxInputEntries {
			return errTooMuch
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case d.IsDir():
			if p != root && (d.Name() == ".git" || p == out) {
				return filepath.SkipDir
			}
			field("d " + filepath.ToSlash(rel))
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if total += info.Size(); total > maxInputBytes {
				return errTooMuch
			}
			if rel == lockRel {
				return nil // hashed apart: digest
			}
			b, err := r.ReadFile(rel, maxInputBytes)
			if err != nil {
				return err
			}
			field("f " + filepath.ToSlash(rel))
			field(string(b))
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			field("l " + filepath.ToSlash(rel))
			field(target)
		default:
			field("o " + filepath.ToSlash(rel))
		}
		return nil
	})
	return err == nil
}

var errTooMuch = &fs.PathError{Op: "hash", Err: fs.ErrInvalid}

// binaryIdentity hashes which fleetgen runs: its version and the stat of
// its executable (a rebuilt binary is a new file or new times).
func binaryIdentity(field func(string)) bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		field(bi.Main.Version)
		for _, s := range bi.Settings {
			field(s.Key + "=" + s.Value)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	st, err := os.Stat(exe)
	if err != nil {
		return false
	}
	field(exe)
	field(fmt.Sprint(st.Size(), st.ModTime().UnixNano()))
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		field(fmt.Sprint(s.Ino, s.Ctim.Nano()))
	}
	return true
}

// realAbs is p absolute with its symlinks resolved; a path that does not
// exist yet is only made absolute.
func realAbs(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	return abs, nil
}

// within reports whether p is dir or below it (both absolute and clean).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// inputsSafe reports whether everything the load of ld read is what
// readInputs hashed: no layer build and no {file: …} reference reached into
// the output folder or a .git folder (symlinks resolved).
func inputsSafe(ld *Loaded, in inputs) bool {
	paths := append([]string(nil), ld.Images.Touched...)
	for _, r := range ld.Fleet.FileRefs() {
		paths = append(paths, filepath.Join(in.root, filepath.FromSlash(r)))
	}
	for _, p := range paths {
		real, err := realAbs(p)
		if err != nil || in.inside(real) || in.inside(filepath.Clean(p)) {
			return false
		}
	}
	return true
}
