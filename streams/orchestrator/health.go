package orchestrator

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/convstream/convstream/internal/healthswitch"
)

// Ready returns nil while the orchestrator takes reply requests on a
// connected NATS connection, and otherwise why not: Run has not reached
// the replies stream yet, has returned, or the connection is down (a pod
// that answers stops and takes requests of no one is taken out of
// service, not restarted).
func (o *Orchestrator) Ready() error {
	if !o.taking.Load() {
		return errors.New("not taking reply requests")
	}
	if !o.nc.IsConnected() {
		return fmt.Errorf("NATS connection %s", o.nc.Status())
	}
	return nil
}

// HealthHandler serves GET /healthz (the process answers) and GET /readyz
// (Ready), the probes of the orchestrator's Deployment.
func (o *Orchestrator) HealthHandler() http.Handler {
	return healthswitch.Probes(nil, o.Ready, nil)
}
