package engine

import (
	"errors"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// Clients is an upstream of several organizations (orgs.Set): each kind
// calls a project's operations with its organization's client.
type Clients interface {
	// Client is the client of project's organization, to start an
	// operation.
	Client(project string) (*apiclient.Client, error)
	// FollowClient is the client that reads project's operations: its
	// organization's, or for a project a reload removed, its last one's
	// (its operations are followed to their end).
	FollowClient(project string) (*apiclient.Client, error)
}

// ErrNoClient: the engine's upstream has no client for the kind's calls
// (a test's stub of another kind's API).
var ErrNoClient = errors.New("the upstream has no client for these calls")

// ClientOf is the client of api (an *apiclient.Client, or Clients) that
// calls project's operations (follow: reads them).
func ClientOf(api any, project string, follow bool) (*apiclient.Client, error) {
	switch a := api.(type) {
	case *apiclient.Client:
		return a, nil
	case Clients:
		if follow {
			return a.FollowClient(project)
		}
		return a.Client(project)
	}
	return nil, ErrNoClient
}

// Client is the client of the engine's upstream that calls project's
// operations (follow: reads them).
func (e *Engine) Client(project string, follow bool) (*apiclient.Client, error) {
	return ClientOf(e.api, project, follow)
}
