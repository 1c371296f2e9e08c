package problem

import (
	"fmt"
	"slices"
	"strings"
)

// Clusters names clusters in a message, sorted, at most three by name:
// "cluster a", "clusters a, b, c and 2 more". With a verb it says what they
// do: "cluster a receives", "clusters a, b receive".
func Clusters(names []string, verb string) string {
	names = slices.Sorted(slices.Values(names))
	s := "cluster " + names[0]
	if len(names) > 1 {
		s = "clusters " + strings.Join(names[:min(3, len(names))], ", ")
	}
	if len(names) > 3 {
		s += fmt.Sprintf(" and %d more", len(names)-3)
	}
	switch {
	case verb == "":
		return s
	case len(names) == 1:
		return s + " " + verb + "s"
	}
	return s + " " + verb
}
