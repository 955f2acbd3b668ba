package v4

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// BCS's service labels for load balancing (docs/services.md, "Load-balancer groups").
const (
	// GroupLabel lists, comma-separated, the load-balancer groups a service is exported
	// to: the nodes whose agent runs with --lb-group set to one of them serve it.
	GroupLabel = "BCSGROUP"
	// BalanceLabel chooses how connections are spread over a service's instances:
	// roundrobin (the default), source (by the client's address) or leastconn (load
	// balancers only; the node proxy uses round robin for it).
	BalanceLabel = "BCSBALANCE"
	// WeightLabelPrefix, followed by an application's name, gives the relative share of
	// that application's instances behind the service (0 to 256, 0 is no new traffic);
	// instances of applications without one weigh DefaultWeight.
	WeightLabelPrefix = "BCS-WEIGHT-"
	// MaxConnLabel caps the connections a load balancer keeps open to each instance of
	// the service (default DefaultMaxConn).
	MaxConnLabel = "BCSMAXCONN"
)

// Node attributes the agent of a load-balancer group's node registers (docs/services.md):
// the group it serves (text) and the group's HTTP port there (scalar), so the server can
// refuse a service whose port those nodes already use.
const (
	LBGroupAttribute    = "lb.group"
	LBHTTPPortAttribute = "lb.httpPort"
)

// Balancing modes of BalanceLabel.
const (
	BalanceRoundRobin = "roundrobin"
	BalanceSource     = "source"
	BalanceLeastConn  = "leastconn"
)

// DefaultWeight is an instance's weight when its application has no weight label.
const DefaultWeight = 10

// MaxWeight is the largest weight (HAProxy's).
const MaxWeight = 256

// DefaultMaxConn is the default cap of connections per instance behind a load balancer.
const DefaultMaxConn = 20000

// maxLBGroups bounds the groups of one service.
const maxLBGroups = 16

// lbGroupPattern is a group's name: a DNS label.
var lbGroupPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidLBGroup reports whether name can name a load-balancer group.
func ValidLBGroup(name string) bool { return lbGroupPattern.MatchString(name) }

// LBGroups returns the load-balancer groups the service is exported to (none when it
// has no GroupLabel).
func (s *Service) LBGroups() []string {
	var out []string
	for g := range strings.SplitSeq(s.Metadata.Labels[GroupLabel], ",") {
		if g = strings.TrimSpace(g); g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// InLBGroup reports whether the service is exported to group.
func (s *Service) InLBGroup(group string) bool { return slices.Contains(s.LBGroups(), group) }

// Balance returns the service's balancing mode, lower-cased; roundrobin by default.
func (s *Service) Balance() string {
	switch b := strings.ToLower(strings.TrimSpace(s.Metadata.Labels[BalanceLabel])); b {
	case BalanceSource, BalanceLeastConn:
		return b
	default:
		return BalanceRoundRobin
	}
}

// Weight returns the weight of the instances of application app behind the service.
func (s *Service) Weight(app string) int {
	v, ok := s.Metadata.Labels[WeightLabelPrefix+app]
	if !ok {
		return DefaultWeight
	}
	w, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || w < 0 || w > MaxWeight {
		return DefaultWeight
	}
	return w
}

// MaxConn returns the cap of connections per instance behind a load balancer.
func (s *Service) MaxConn() int {
	if n, err := strconv.Atoi(strings.TrimSpace(s.Metadata.Labels[MaxConnLabel])); err == nil && n > 0 {
		return n
	}
	return DefaultMaxConn
}

// IsHTTP reports whether a service port is routed by host and path on a load
// balancer's HTTP port (protocol http); every other protocol but udp is forwarded as TCP
// on the service port (https too: TLS passes through to the instances).
func (p ServicePort) IsHTTP() bool { return strings.EqualFold(p.Protocol, "http") }

// pathPattern is what a service port's path may hold: the characters of a URL path
// (RFC 3986) without quotes, so that it is safe in a load balancer's configuration.
var pathPattern = regexp.MustCompile(`^/[A-Za-z0-9._~!$&()*+,;=:@%/-]*$`)

// validateLoadBalance checks the service's load-balancing labels and its ports' virtual
// hosts and paths, which load balancers put in their configuration.
func validateLoadBalance(s *Service, errs *FieldErrors) {
	labels := s.Metadata.Labels
	if v, ok := labels[GroupLabel]; ok {
		groups := s.LBGroups()
		if len(groups) == 0 {
			errs.add("metadata.labels."+GroupLabel, "must list at least one group (comma-separated), got %q", truncate(v, 80))
		}
		if len(groups) > maxLBGroups {
			errs.add("metadata.labels."+GroupLabel, "at most %d groups, got %d", maxLBGroups, len(groups))
		}
		for _, g := range groups {
			if !lbGroupPattern.MatchString(g) {
				errs.add("metadata.labels."+GroupLabel, "group %q must be lowercase letters, digits and '-' (a DNS label)", truncate(g, 80))
			}
		}
	}
	if v, ok := labels[BalanceLabel]; ok {
		oneOf("metadata.labels."+BalanceLabel, strings.ToLower(strings.TrimSpace(v)), errs, BalanceRoundRobin, BalanceSource, BalanceLeastConn)
	}
	if v, ok := labels[MaxConnLabel]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 1 || n > 1_000_000 {
			errs.add("metadata.labels."+MaxConnLabel, "must be a number 1-1000000, got %q", truncate(v, 80))
		}
	}
	for _, k := range sortedStringKeys(labels) {
		if !strings.HasPrefix(k, WeightLabelPrefix) {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(labels[k])); err != nil || n < 0 || n > MaxWeight {
			errs.add("metadata.labels."+k, "must be a weight 0-%d, got %q", MaxWeight, truncate(labels[k], 80))
		}
	}
	for i, pt := range s.Spec.Ports {
		pp := fmt.Sprintf("spec.ports[%d]", i)
		if pt.DomainName != "" && (!isDNSName(pt.DomainName) || strings.HasSuffix(pt.DomainName, ".")) {
			errs.add(pp+".domainName", "must be a DNS name (www.example.com), got %q", truncate(pt.DomainName, 80))
		}
		if strings.HasPrefix(pt.Path, "/") && (len(pt.Path) > 1024 || !pathPattern.MatchString(pt.Path)) {
			errs.add(pp+".path", "must be a URL path of at most 1024 characters, without spaces or quotes, got %q", truncate(pt.Path, 80))
		}
	}
}
