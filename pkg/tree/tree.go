// Package tree writes a rendered file set to disk and compares it with what is
// there. It owns only files that start with generate.Header.
package tree

import "fleetgen.dev/fleetgen/pkg/generate"

// Stats counts what Write did.
type Stats struct {
	Written, Unchanged, Removed int
}

// Write makes dir hold files: it writes each new or changed file atomically
// (temporary file and rename), leaves identical files alone, removes files an
// earlier render wrote (they start with generate.Header) that files no longer
// has, removes folders that leaves empty, and never touches any other file.
// Paths are validated to stay inside dir.
//
// SKELETON: CLI owner implements.
func Write(dir string, files []generate.File) (Stats, error) {
	return Stats{}, nil
}

// Diff returns a unified diff (diff -u style, a/ and b/ prefixes) from what dir
// holds to files, covering changed, missing and stale fleetgen-owned files;
// "" when they are equal.
//
// SKELETON: CLI owner implements.
func Diff(dir string, files []generate.File) (string, error) {
	return "", nil
}
