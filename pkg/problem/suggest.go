package problem

import "strings"

// suggest returns the candidate closest to s when it is a likely typo (at most
// two edits, or a difference in case only), or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editDistance(s, c)
		if lowerASCII(s) == lowerASCII(c) {
			d = 0
		}
		if d < bestD && d < len(c) {
			best, bestD = c, d
		}
	}
	return best
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// editDistance is the optimal string alignment distance (Levenshtein plus
// transpositions) between a and b, bytewise; long inputs are not compared.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// DidYouMean is ` (did you mean "x"?)` for a likely typo of a candidate, or
// "": a message's hint at what would be valid.
func DidYouMean(s string, candidates []string) string {
	if c := suggest(s, candidates); c != "" {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}

// OrList joins names as "a, b or c".
func OrList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
