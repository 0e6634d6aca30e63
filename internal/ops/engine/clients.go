package engine

import "github.com/mintlify-exporter/mintlify_exporter/apiclient"

// Clients is an upstream of several organizations (orgs.Set): each kind
// calls a project's operations with its organization's client. A kind
// takes the endpoints it needs of the engine's upstream (Engine.API): an
// *apiclient.Client of one organization has them all, and for Clients a
// kind goes through Call.
type Clients interface {
	// Client is the client of project's organization, to start an
	// operation.
	Client(project string) (*apiclient.Client, error)
	// FollowClient is the client that reads project's operations: its
	// organization's, or for a project a reload removed, its last one's
	// (its operations are followed to their end).
	FollowClient(project string) (*apiclient.Client, error)
}

// Call calls fn with the client of project's organization (follow: the
// one that reads its operations).
func Call[T any](c Clients, project string, follow bool, fn func(*apiclient.Client) (T, error)) (T, error) {
	client, err := c.Client(project)
	if follow {
		client, err = c.FollowClient(project)
	}
	if err != nil {
		var none T
		return none, err
	}
	return fn(client)
}
