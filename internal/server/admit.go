package server

import (
	"context"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// One validation path (docs/operations.md, Validation limits): a body a user sends is
// parsed by v4.Parse or v4.DecodeNode, which default and validate it; an object the server
// changes on a user's behalf (scale, rollout, drain, a node patch) goes through validate
// before it is written; a status an agent reports is checked by v4.ValidateTaskGroupStatus.
// Either way the spec library, with the same limits as `berth apply`, is the last word
// before etcd, so a route cannot store what apply would refuse. TestEveryWriteRouteValidates
// (admit_test.go) walks every registered write route with an invalid request.

// update admits obj and writes it with its resourceVersion as the precondition, keeping
// the definition the user sent.
func (s *Server) update(ctx context.Context, obj v4.Object) error {
	return httpapi.Update(ctx, s.store, obj)
}
