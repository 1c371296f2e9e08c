package shard

import (
	"cmp"
	"slices"
)

// item is one thing to place on a shard: a cluster (for one manager) or a
// delivery, in input order.
type item struct {
	name   string
	weight int64  // what it costs the shard's controllers, >= 1
	pin    string // fleet.yaml's choice; "" when none
	had    string // the lock's; "" when none
}

// placed is where assign put each item, and what changed.
type placed struct {
	shard []string // per item; "" for a stale one left in place (not rebalancing)
	load  []int64  // per shard
	count []int    // items per shard
	// added, moved and stale are item indexes: newly placed, placed
	// elsewhere than the lock says, and kept on a shard no longer declared.
	added, moved, stale []int
}

// assign places items on shards (SPEC §8): a pinned item on its pin, an
// item the lock places on a declared shard where it is; every other one on
// the least loaded shard, heaviest first. An item the lock places on a
// shard no longer declared is stale: left out (reported) unless rebalance,
// which places it anew. With rebalance and nothing stale, unpinned items
// move from the most to the least loaded shard, heaviest that narrows the
// gap first, until no move narrows it: every shard ends within one item's
// weight of the others, with the fewest moves this greedy finds. balance
// says that nothing is stale for any manager (stale reports whether one is).
func assign(shards []string, items []item, rebalance, balance bool) placed {
	idx := make(map[string]int, len(shards))
	for i, s := range shards {
		idx[s] = i
	}
	p := placed{shard: make([]string, len(items)), load: make([]int64, len(shards)), count: make([]int, len(shards))}
	put := func(i int, s string) {
		p.shard[i] = s
		p.load[idx[s]] += items[i].weight
		p.count[idx[s]]++
	}
	var todo []int
	for i, it := range items {
		_, declared := idx[it.had]
		switch {
		case it.pin != "":
			put(i, it.pin)
		case it.had != "" && declared:
			put(i, it.had)
		case it.had != "" && !rebalance:
			p.stale = append(p.stale, i)
		default:
			todo = append(todo, i)
		}
	}
	// Heaviest first (the longest-processing-time rule), then input order:
	// each lands where the load is least.
	slices.SortStableFunc(todo, func(a, b int) int { return cmp.Compare(items[b].weight, items[a].weight) })
	for _, i := range todo {
		put(i, shards[p.least()])
	}
	if rebalance && balance {
		p.balance(items, idx)
	}
	for i, it := range items {
		switch {
		case p.shard[i] == "" || p.shard[i] == it.had:
		case it.had == "":
			p.added = append(p.added, i)
		default:
			p.moved = append(p.moved, i)
		}
	}
	return p
}

// stale reports whether the lock puts an unpinned item on a shard that
// shards does not declare.
func stale(shards []string, items []item) bool {
	for _, it := range items {
		if it.pin == "" && it.had != "" && !slices.Contains(shards, it.had) {
			return true
		}
	}
	return false
}

// least is the least loaded shard: fewest items on a tie, then the first
// declared.
func (p *placed) least() int {
	best := 0
	for s := 1; s < len(p.load); s++ {
		if p.load[s] < p.load[best] || p.load[s] == p.load[best] && p.count[s] < p.count[best] {
			best = s
		}
	}
	return best
}

// most is the most loaded shard, the first declared on a tie.
func (p *placed) most() int {
	best := 0
	for s := 1; s < len(p.load); s++ {
		if p.load[s] > p.load[best] {
			best = s
		}
	}
	return best
}

// balance moves unpinned items from the most to the least loaded shard:
// each time the heaviest item lighter than the gap (so both shards end
// strictly inside it: the sum of squared loads falls, and the loop ends),
// the last of that weight in input order. It stops when the most loaded
// shard has no such item.
func (p *placed) balance(items []item, idx map[string]int) {
	// movable[s][w] are the unpinned items of weight w on shard s, in input
	// order; weights[s] their distinct weights, heaviest first.
	movable := make([]map[int64][]int, len(p.load))
	for s := range movable {
		movable[s] = map[int64][]int{}
	}
	for i, it := range items {
		if it.pin == "" && p.shard[i] != "" {
			s := idx[p.shard[i]]
			movable[s][it.weight] = append(movable[s][it.weight], i)
		}
	}
	shards := make([]string, len(p.load))
	for s, i := range idx {
		shards[i] = s
	}
	for {
		hi, lo := p.most(), p.least()
		gap := p.load[hi] - p.load[lo]
		ws := make([]int64, 0, len(movable[hi]))
		for w, is := range movable[hi] {
			if len(is) > 0 && w < gap {
				ws = append(ws, w)
			}
		}
		if hi == lo || len(ws) == 0 {
			return
		}
		w := slices.Max(ws)
		is := movable[hi][w]
		i := is[len(is)-1]
		movable[hi][w] = is[:len(is)-1]
		movable[lo][w] = insertSorted(movable[lo][w], i)
		p.load[hi] -= w
		p.count[hi]--
		p.load[lo] += w
		p.count[lo]++
		p.shard[i] = shards[lo]
	}
}

func insertSorted(is []int, i int) []int {
	at, _ := slices.BinarySearch(is, i)
	return slices.Insert(is, at, i)
}
