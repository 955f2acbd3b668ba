package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

// Trigger starts a run of a cronjob or a cronworkflow now, outside its schedule, and
// returns the job or workflow created (docs/cron.md).
func (c *Client) Trigger(ctx context.Context, kind v4.Kind, ns, name string) (v4.Object, error) {
	_, _, child, ok := v4.CronParts(newOrNil(kind))
	if !ok {
		return nil, fmt.Errorf("%s has no schedule to trigger (cronjobs and cronworkflows do)", kind)
	}
	path, err := objectPath(kind, nsOrDefault(ns), name, "actions/trigger")
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.doJSON(ctx, request{method: http.MethodPost, path: path}, &raw); err != nil {
		return nil, err
	}
	obj, err := decodeObject(raw, child)
	if err != nil {
		return nil, fmt.Errorf("trigger %s %s: %w", kind, name, err)
	}
	return obj, nil
}

func newOrNil(kind v4.Kind) v4.Object {
	o, err := v4.New(kind)
	if err != nil {
		return nil
	}
	return o
}
