package scheduler

// Place places the request's instances, updating the snapshot as it goes.
func (s *Snapshot) Place(req *Request, opts Options) Result {
	return Result{Request: req, Unplaced: req.Indexes, Reason: &Reason{}}
}

// PlaceAll places several requests in order in one pass.
func (s *Snapshot) PlaceAll(reqs []*Request, opts Options) []Result {
	out := make([]Result, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, s.Place(r, opts))
	}
	return out
}
