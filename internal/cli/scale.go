package cli

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newScaleCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "scale KIND NAME INSTANCES",
		Short: "Change the instance count of an application, process or deployment",
		Long: "Change spec.instance. Scaling up adds the next indexes; scaling down stops the\n" +
			"highest indexes (BCS semantics).",
		Example: "  berth scale process web 5 -n demo\n  berth scale app web 2",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := v4.ParseKind(args[0])
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(args[2])
			if err != nil || n < 1 {
				return fmt.Errorf("INSTANCES must be a whole number of at least 1, got %q", args[2])
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.requestContext(cmd)
			defer cancel()
			// Read, change, write with the version read; retry when someone else wrote.
			for range 5 {
				obj, err := c.Get(ctx, kind, o.namespace, args[1])
				if err != nil {
					return err
				}
				old, err := setInstances(obj, n)
				if err != nil {
					return err
				}
				if _, err := c.Update(ctx, obj); client.IsConflict(err) {
					continue
				} else if err != nil {
					return err
				}
				fmt.Fprintf(o.out(), "%s/%s scaled from %d to %d\n", kind, args[1], old, n)
				return nil
			}
			return errors.New("the object kept changing; try again")
		},
	}
}

// setInstances sets spec.instance and returns the previous value.
func setInstances(obj v4.Object, n int) (int, error) {
	var p *int
	switch o := obj.(type) {
	case *v4.Application:
		p = &o.Spec.Instance
	case *v4.Process:
		p = &o.Spec.Instance
	case *v4.Deployment:
		p = &o.Spec.Instance
	default:
		return 0, fmt.Errorf("%s objects have no instance count", obj.GetKind())
	}
	old := *p
	*p = n
	return old, nil
}
