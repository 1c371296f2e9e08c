package main

import (
	"fmt"
	"time"
)

// report prints each row of results, then their ratios against the
// targets (issues 21, 36 and 38); unique is the data set's unique blob
// bytes.
func report(results []result, unique int64) {
	by := map[string]result{}
	for _, r := range results {
		by[r.name] = r
		fmt.Printf("%-28s %8.2f s   %10s pushed\n", r.name, r.elapsed.Seconds(), human(r.bytes))
	}
	cold, warm, floor := by["fleetgen cold (best of 3)"], by["fleetgen mirror, warm"], by["floor (best of 3)"]
	check := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	if d, ok := by[airGapDirect]; ok {
		to, from := by[airGapTo].elapsed.Seconds()/d.elapsed.Seconds(), by[airGapFrom].elapsed.Seconds()/d.elapsed.Seconds()
		fmt.Printf("--to / direct           %6.2f   (target <= 1.3)  %s\n", to, check(to <= 1.3))
		fmt.Printf("--from / direct         %6.2f   (target <= 1.3)  %s\n", from, check(from <= 1.3))
	}
	if airGapOnly {
		return
	}
	coldFloor := cold.elapsed.Seconds() / floor.elapsed.Seconds()
	byteRatio := float64(cold.bytes) / float64(unique)
	fmt.Printf("cold / floor            %6.2f   (target <= 1.15) %s\n", coldFloor, check(coldFloor <= 1.15))
	for _, peer := range []string{"skopeo sync", "regsync once", "crane copy loop"} {
		c, ok := by[peer]
		if !ok {
			continue
		}
		ratio := c.elapsed.Seconds() / cold.elapsed.Seconds()
		fmt.Printf("%-16s / cold  %6.2f   (target > 1)     %s   bytes / unique %5.2f\n", peer, ratio, check(ratio > 1), float64(c.bytes)/float64(unique))
	}
	fmt.Printf("cold bytes / unique     %6.3f   (target <= 1.05) %s\n", byteRatio, check(byteRatio <= 1.05))
	fmt.Printf("warm re-run             %6.3f s (target < 0.2 s) %s\n", warm.elapsed.Seconds(), check(warm.elapsed < 200*time.Millisecond))
	if bare, ok := by[warmReplay]; ok {
		fmt.Printf("warm / its replay       %6.2f   (the warm run's %d requests sent again bare, %d at a time: %.3f s; under 0.2 s needs fewer requests)\n",
			warm.elapsed.Seconds()/bare.elapsed.Seconds(), warmRequests, replayConcurrency, bare.elapsed.Seconds())
	}
	fmt.Println("(skopeo and crane copy the images only; fleetgen and regsync also each index's signature tag and referrers)")
	if on, ok := by["cold, verify on (best of 3)"]; ok {
		ratio := on.elapsed.Seconds() / by["cold, verify off (best of 3)"].elapsed.Seconds()
		fmt.Printf("verify on / off (cold)  %6.3f   (target <= 1.1)  %s\n", ratio, check(ratio <= 1.1))
	}
}
