package inert

import "strings"

// Code returns s as a Markdown code span: Text(s) between backtick fences one
// longer than the longest run of backticks it holds, padded with a space when
// it starts or ends with a backtick or a space (CommonMark strips one such
// space from each side), so that the span ends where fleetgen ends it and
// nothing inside renders: no link, image, HTML, emphasis, emoji or @mention.
// An empty s is a span of one space.
func Code(s string) string {
	t := Text(s)
	if t == "" {
		return "` `"
	}
	fence := strings.Repeat("`", longestRun(t, '`')+1)
	if t[0] == '`' || t[0] == ' ' || t[len(t)-1] == '`' || t[len(t)-1] == ' ' {
		t = " " + t + " "
	}
	return fence + t + fence
}

func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
