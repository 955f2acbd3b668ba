package scheduler

// epsilon absorbs float rounding when comparing resource sums.
const epsilon = 1e-9

// fitsResources checks what is free on n against what one task group needs.
func (st *reqState) fitsResources(n *nodeState) (bool, string) {
	need := &st.need
	if st.req.Revocable {
		if ok, why := st.fitsRevocable(n); !ok {
			return false, why
		}
	}
	switch {
	case !st.req.Revocable && n.usedCPU+need.CPU > n.alloc.CPU+epsilon:
		return false, "insufficient cpu"
	case !st.req.Revocable && n.usedMem+need.MemoryMB > n.alloc.MemoryMB+epsilon:
		return false, "insufficient memory"
	case n.usedDisk+need.DiskMB > n.alloc.DiskMB+epsilon:
		return false, "insufficient disk"
	}
	for name, v := range need.Extended {
		if isGPUResource(name) && (n.hasGPUInventory() || st.shares) {
			continue // the cards account for them, and a share needs cards (fitsGPUs)
		}
		if n.usedExt[name]+v > n.alloc.Extended[name]+epsilon {
			return false, "insufficient " + name
		}
	}
	return true, ""
}
