package scheduler

import (
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// nominationKind marks the placeholders of nominated instances in the snapshot: they are
// no owner's task groups, never victims, and count for no constraint.
const nominationKind v4.Kind = "nomination"

// Nominate holds what one instance of req needs (resources with overhead, fixed ports)
// on node while the victims of its preemption stop: nothing else is placed into the room
// they leave. PlaceNominated takes the hold back when the instance is placed.
func (s *Snapshot) Nominate(req *Request, index int, node string, opts Options) {
	s.NominateCards(req, index, node, nil, opts)
}

// NominateCards is Nominate that also holds the GPU cards Preempt chose (Preemption.GPUs),
// so that no lower GPU request takes the cards the victims free.
func (s *Snapshot) NominateCards(req *Request, index int, node string, gpus []v4.TaskGPU, opts Options) {
	st := s.compile(req, opts)
	if len(st.app.tgs) == 0 {
		delete(s.apps, req.App)
	}
	ports := make([]int, 0, len(req.FixedPorts))
	for _, p := range req.FixedPorts {
		ports = append(ports, p.HostPort)
	}
	app := nominationApp(req.App)
	s.setPlaced(&placedTG{key: nominationKey(req.App, index), app: app, index: index, node: node,
		res: st.need, ports: ports, gpus: gpus, status: v4.StatusStaging, priority: req.Priority, hold: true})
}

// ClearNomination drops the hold of instance index of app, if any.
func (s *Snapshot) ClearNomination(app AppKey, index int) {
	s.removePlaced(nominationKey(app, index))
}

// Nominated reports the node instance index of app holds room on ("" without a hold).
func (s *Snapshot) Nominated(app AppKey, index int) string {
	if p := s.tgs[nominationKey(app, index)]; p != nil {
		return p.node
	}
	return ""
}

// PlaceNominated places req's instances on the node nominated for them: each hold is
// dropped for the placement and put back when the instance still does not fit (its
// victims are still stopping).
func (s *Snapshot) PlaceNominated(req *Request, node string, opts Options) Result {
	held := make([]int, 0, len(req.Indexes))
	cards := map[int][]v4.TaskGPU{}
	for _, idx := range req.Indexes {
		if p := s.tgs[nominationKey(req.App, idx)]; p != nil && p.node == node {
			cards[idx] = p.gpus
			s.ClearNomination(req.App, idx)
			held = append(held, idx)
		}
	}
	pinned := *req
	pinned.Node = node
	res := s.Place(&pinned, opts)
	res.Request = req
	for _, idx := range res.Unplaced {
		for _, h := range held {
			if h == idx {
				s.NominateCards(req, idx, node, cards[idx], opts)
			}
		}
	}
	return res
}

func nominationApp(app AppKey) AppKey {
	return AppKey{Kind: nominationKind, Namespace: app.Namespace, Name: string(app.Kind) + "/" + app.Name}
}

func nominationKey(app AppKey, index int) string {
	return app.Namespace + "/" + string(nominationKind) + "/" + string(app.Kind) + "/" + app.Name + "/" + strconv.Itoa(index)
}

// Holds lists the instance indexes of app that hold room (in no order).
func (s *Snapshot) Holds(app AppKey) []int {
	a := s.apps[nominationApp(app)]
	if a == nil {
		return nil
	}
	out := make([]int, 0, len(a.tgs))
	for _, p := range a.tgs {
		out = append(out, p.index)
	}
	return out
}

// ClearNominations drops every hold of app's instances (the workload is gone).
func (s *Snapshot) ClearNominations(app AppKey) {
	if a := s.apps[nominationApp(app)]; a != nil {
		for key := range a.tgs {
			s.removePlaced(key)
		}
	}
}
