package server

import (
	"net/http"

	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/deployd"
	"github.com/berthhq/berth/internal/httpapi"
)

// compatRoutes mounts the other front doors of the API (docs/compat.md): BCS's scheduler
// API under the mesos driver's prefix and the BCS gateway's, and Lain deployd's under
// /api/. They translate each request
// into /v1 calls served by the same mux, maintenance guard included, so every call is
// admitted and authorized as if the client had made it on /v1.
func (s *Server) compatRoutes(mux *httpapi.Mux) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.maintenanceGuard(s.mux).ServeHTTP(w, r)
	})
	// withVia: the audit lines of the /v1 calls name the front door's request too.
	door := withVia(bcs.New(inner, s.bcsClusterID, s.maxBody))
	mux.HandleHTTP(bcs.DriverPrefix+"/", httpapi.FrontDoor, door)
	mux.HandleHTTP(bcs.GatewayPrefix+"/", httpapi.FrontDoor, door)
	// bcs-storage's reads that bcs-client makes (list, inspect, apply's and clean's lookups).
	mux.HandleHTTP(bcs.StoragePrefix+"/", httpapi.FrontDoor, withVia(bcs.NewStorage(inner, s.bcsClusterID)))
	mux.HandleHTTP(deployd.Prefix, httpapi.FrontDoor, withVia(deployd.New(inner, s.maxBody)))
}
