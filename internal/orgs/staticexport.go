package orgs

import (
	"context"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// The static export calls go out with the key of the project's
// organization (the API's static exports are per organization: the
// gateway scopes each to a configured project): the Set is the tracker's
// ExportUpstream.

// StartStaticExport starts an export with project's organization's key.
func (s *Set) StartStaticExport(ctx context.Context, project string, req apiclient.StaticExportRequest) (apiclient.StaticExportJob, error) {
	c, err := s.Client(project)
	if err != nil {
		return apiclient.StaticExportJob{}, err
	}
	return c.StartStaticExport(ctx, req)
}

// GetStaticExport reads an export with project's organization's key (as
// GetJob, after a reload removed the project too).
func (s *Set) GetStaticExport(ctx context.Context, project, id string) (apiclient.StaticExportJob, error) {
	c, err := s.followClient(project)
	if err != nil {
		return apiclient.StaticExportJob{}, err
	}
	return c.GetStaticExport(ctx, id)
}

// BundleStaticExport asks for an export's bundle with project's
// organization's key.
func (s *Set) BundleStaticExport(ctx context.Context, project, id string) (apiclient.StaticExportBundle, error) {
	c, err := s.Client(project)
	if err != nil {
		return apiclient.StaticExportBundle{}, err
	}
	return c.BundleStaticExport(ctx, id)
}
