package tfe

import (
	"log/slog"
	"net/http"

	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
)

// Options configure a Handler.
type Options struct {
	// Logger receives internal errors. Nil: discarded.
	Logger *slog.Logger
}

// Handler serves the JSON:API routes. Create one with New.
type Handler struct {
	catalog  *project.Catalog
	policies *policy.Service
	logger   *slog.Logger
}

// New returns a Handler over a project catalog and a policy service.
func New(catalog *project.Catalog, policies *policy.Service, opts *Options) *Handler {
	h := &Handler{catalog: catalog, policies: policies, logger: nopLogger}
	if opts != nil && opts.Logger != nil {
		h.logger = opts.Logger
	}
	return h
}

// Register adds the routes to mux, all under /api/v2. mux is an
// *http.ServeMux, or a router that routes as one does.
func (h *Handler) Register(mux interface {
	http.Handler
	Handle(pattern string, handler http.Handler)
}) {
	const p = "/api/v2"
	routes := map[string]http.HandlerFunc{
		"GET " + p + "/ping": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },

		"POST " + p + "/organizations":         h.createOrganization,
		"GET " + p + "/organizations":          h.listOrganizations,
		"GET " + p + "/organizations/{org}":    h.readOrganization,
		"PATCH " + p + "/organizations/{org}":  h.updateOrganization,
		"DELETE " + p + "/organizations/{org}": h.deleteOrganization,

		"POST " + p + "/organizations/{org}/projects":           h.createProject,
		"GET " + p + "/organizations/{org}/projects":            h.listProjects,
		"GET " + p + "/projects/{id}":                           h.readProject,
		"PATCH " + p + "/projects/{id}":                         h.updateProject,
		"DELETE " + p + "/projects/{id}":                        h.deleteProject,
		"POST " + p + "/projects/{id}/relationships/workspaces": h.moveWorkspaces,

		"POST " + p + "/organizations/{org}/workspaces":                             h.createWorkspace,
		"GET " + p + "/organizations/{org}/workspaces":                              h.listWorkspaces,
		"GET " + p + "/organizations/{org}/workspaces/{name}":                       h.readWorkspace,
		"PATCH " + p + "/organizations/{org}/workspaces/{name}":                     h.updateWorkspace,
		"DELETE " + p + "/organizations/{org}/workspaces/{name}":                    h.deleteWorkspace,
		"POST " + p + "/organizations/{org}/workspaces/{name}/actions/safe-delete":  h.deleteWorkspace,
		"POST " + p + "/organizations/{org}/workspaces/{name}/actions/force-delete": h.deleteWorkspace,
		"GET " + p + "/workspaces/{id}":                                             h.readWorkspace,
		"PATCH " + p + "/workspaces/{id}":                                           h.updateWorkspace,
		"DELETE " + p + "/workspaces/{id}":                                          h.deleteWorkspace,
		"POST " + p + "/workspaces/{id}/actions/safe-delete":                        h.deleteWorkspace,
		"POST " + p + "/workspaces/{id}/actions/force-delete":                       h.deleteWorkspace,
		"GET " + p + "/workspaces/{id}/relationships/remote-state-consumers":        h.listRemoteStateConsumers,
		"POST " + p + "/organizations/{org}/teams":                                  h.createTeam,
		"GET " + p + "/organizations/{org}/teams":                                   h.listTeams,
		"GET " + p + "/teams/{id}":                                                  h.readTeam,
		"PATCH " + p + "/teams/{id}":                                                h.updateTeam,
		"DELETE " + p + "/teams/{id}":                                               h.deleteTeam,
		"POST " + p + "/team-projects":                                              h.addTeamAccess,
		"GET " + p + "/team-projects":                                               h.listTeamAccess,
		"GET " + p + "/team-projects/{id}":                                          h.readTeamAccess,
		"PATCH " + p + "/team-projects/{id}":                                        h.updateTeamAccess,
		"DELETE " + p + "/team-projects/{id}":                                       h.removeTeamAccess,

		"POST " + p + "/organizations/{org}/policies": h.createPolicy,
		"GET " + p + "/organizations/{org}/policies":  h.listPolicies,
		"GET " + p + "/policies/{id}":                 h.readPolicy,
		"PATCH " + p + "/policies/{id}":               h.updatePolicy,
		"DELETE " + p + "/policies/{id}":              h.deletePolicy,
		"PUT " + p + "/policies/{id}/upload":          h.uploadPolicy,
		"GET " + p + "/policies/{id}/download":        h.downloadPolicy,

		"POST " + p + "/organizations/{org}/policy-sets":        h.createSet,
		"GET " + p + "/organizations/{org}/policy-sets":         h.listSets,
		"GET " + p + "/policy-sets/{id}":                        h.readSet,
		"PATCH " + p + "/policy-sets/{id}":                      h.updateSet,
		"DELETE " + p + "/policy-sets/{id}":                     h.deleteSet,
		"POST " + p + "/policy-sets/{id}/relationships/{rel}":   h.setMembers(true),
		"DELETE " + p + "/policy-sets/{id}/relationships/{rel}": h.setMembers(false),
	}
	for pattern, fn := range routes {
		mux.Handle(pattern, http.HandlerFunc(fn))
	}
}
