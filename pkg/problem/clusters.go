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
	s := "clusters " + strings.Join(names[:min(3, len(names))], ", ")
	switch {
	case len(names) == 1 && verb != "":
		s, verb = "cluster "+names[0], verb+"s"
	case len(names) == 1:
		s = "cluster " + names[0]
	case len(names) > 3:
		s += fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.TrimSuffix(s+" "+verb, " ")
}
