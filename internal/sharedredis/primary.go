package sharedredis

import (
	"context"
	"errors"
	"time"

	"github.com/go-kit/log/level"
	dto "github.com/prometheus/client_model/go"
)

// primaryLease is the name of the lease whose holder is the primary.
const primaryLease = "primary"

// IsPrimary says whether this process is the primary: the one replica that
// exports what every replica shares (analytics data, the plan's status,
// the budgets), so that scraping every replica counts each series once.
func (c *Client) IsPrimary() bool { return c.primary.Load() }

// PrimaryFamily is mintlify_exporter_cluster_primary for a role read once
// (IsPrimary): a scrape gathers it beside the data that same read decides
// to export or not, so that the gauge and the data never disagree.
func PrimaryFamily(primary bool) *dto.MetricFamily {
	v := 0.0
	if primary {
		v = 1
	}
	name := "mintlify_exporter_cluster_primary"
	help := "Whether this replica is the primary (1), the one that exports the data every replica shares, or not (0)."
	return &dto.MetricFamily{
		Name:   &name,
		Help:   &help,
		Type:   dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &v}}},
	}
}

// RunPrimary contends for the primary lease as owner until ctx ends, then
// gives it up so that another replica takes over at once. The holder
// renews every third of the lease duration; a replica that dies is
// replaced within one lease duration of its last renewal.
//
// While Redis does not answer, a replica keeps the role it had: with Redis
// away for every replica nobody could take over, and dropping the role
// would leave the data unexported (the last data stays served with its
// age). Only a replica cut off from a Redis the others still reach may then
// export beside the new primary, with the same values, until it reaches
// Redis again and finds its lease lost.
func (c *Client) RunPrimary(ctx context.Context, owner string) {
	leases := c.Leases()
	var lease Lease
	held := false
	t := time.NewTicker(c.lease / 3)
	defer t.Stop()
	for {
		var err error
		if held {
			lease, err = leases.Renew(ctx, lease, c.lease)
			if errors.Is(err, ErrLeaseLost) {
				held = false
				level.Warn(c.logger).Log("msg", "no longer the primary replica: another replica exports the shared data", "err", err)
			}
		}
		if !held && ctx.Err() == nil {
			var ok bool
			if lease, ok, err = leases.Acquire(ctx, primaryLease, owner, c.lease); err == nil && ok {
				held = true
				level.Info(c.logger).Log("msg", "this replica is now the primary: it exports the data every replica shares", "owner", owner)
			}
		}
		if err == nil || errors.Is(err, ErrLeaseLost) {
			c.primary.Store(held)
		}
		select {
		case <-ctx.Done():
			if held {
				c.primary.Store(false)
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
				_ = leases.Release(rctx, lease)
				cancel()
			}
			return
		case <-t.C:
		}
	}
}
