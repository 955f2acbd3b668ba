package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/netsvc"
)

// newSimDNSCommand is `berth sim dns`: the node's cluster DNS server over a made-up
// catalog, for DNS benchmarks (docs/benchmarks.md, "Cluster DNS").
func newSimDNSCommand(o *options) *cobra.Command {
	var (
		listen, domain     string
		services, replicas int
		upstreams          []string
	)
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "Serve the cluster DNS server over made-up services, for benchmarks",
		Long: "Serve the node's cluster DNS server (the agent's, docs/services.md) on --listen over\n" +
			"--services services svc0..svcN-1 in namespace bench, each with --instances ready\n" +
			"instances at 10.x.y.z, until interrupted. Names outside the cluster go to --dns-upstream\n" +
			"(none: refused). It prints the address once it serves.",
		Example: "  berth sim dns --listen 127.0.0.1:5300 --services 1000 --instances 10 &\n" +
			"  dnsperf -s 127.0.0.1 -p 5300 -d queries.txt -l 30",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if services < 1 || replicas < 0 || services*replicas > 1<<20 {
				return fmt.Errorf("--services must be 1 or more and --services x --instances at most %d", 1<<20)
			}
			cat := netsvc.NewCatalog(domain)
			for i := range services {
				name := "svc" + strconv.Itoa(i)
				cat.Put(&v4.Service{Metadata: v4.ObjectMeta{Name: name, Namespace: "bench"},
					Spec: v4.ServiceSpec{Selector: map[string]string{"app": name},
						Ports: []v4.ServicePort{{Name: "http", Protocol: "http", ServicePort: 80}}}})
				ep := &v4.Endpoints{Metadata: v4.ObjectMeta{Name: name, Namespace: "bench"}}
				for j := range replicas {
					n := i*replicas + j
					ip := fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
					ep.Endpoints = append(ep.Endpoints, v4.Endpoint{ContainerIP: ip,
						Target: v4.TargetRef{Kind: v4.KindApplication, Name: name, Namespace: "bench", Index: j},
						Ports:  []v4.EndpointPort{{Name: "http", Protocol: "http", IP: ip, Port: 8080}}})
				}
				cat.Put(ep)
			}
			srv, err := netsvc.NewDNSServer(cat, netsvc.DNSConfig{Addr: listen, Upstreams: upstreams})
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(o.out(), "serving %d services x %d instances on %s\n", services, replicas, srv.Addr())
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "127.0.0.1:5300", "address to serve on (UDP and TCP)")
	fl.StringVar(&domain, "cluster-domain", "cluster.local", "the domain of the services' names")
	fl.IntVar(&services, "services", 1000, "how many services")
	fl.IntVar(&replicas, "instances", 10, "ready instances per service")
	fl.StringSliceVar(&upstreams, "dns-upstream", nil, "resolvers, HOST:PORT, for other names")
	return cmd
}
