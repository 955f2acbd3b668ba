package v4

import "strings"

// closest returns the candidate nearest to s by edit distance (case-insensitive), or ""
// when none is near enough to be a likely typo.
func closest(s string, candidates []string) string {
	best, bestDist := "", -1
	limit := max(1, min(3, len(s)/3+1))
	ls := strings.ToLower(s)
	for _, c := range candidates {
		if abs(len(s)-len(c)) > limit {
			continue // the distance is at least the difference of lengths: a long hostile key costs nothing
		}
		d := editDistance(ls, strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
