package tfe

import (
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
)

func orgDoc(o project.Organization) map[string]any {
	st := o.Settings
	nullable := func(n *int) any {
		if n == nil || *n == 0 {
			return nil
		}
		return *n
	}
	p := o.Permissions
	return map[string]any{
		"id": o.Name, "type": "organizations",
		"attributes": map[string]any{
			"name": o.Name, "email": o.Email, "created-at": timestamp(o.CreatedAt),
			"collaborator-auth-policy": st.CollaboratorAuthPolicy,
			"session-timeout":          nullable(st.SessionTimeout), "session-remember": nullable(st.SessionRemember),
			"owners-team-saml-role-id":                                st.OwnersTeamSAMLRoleID,
			"default-execution-mode":                                  st.DefaultExecutionMode,
			"cost-estimation-enabled":                                 st.CostEstimationEnabled,
			"send-passing-statuses-for-untriggered-speculative-plans": st.SendPassingStatusesForUntriggeredSpeculativePlans,
			"aggregated-commit-status-enabled":                        st.AggregatedCommitStatusEnabled,
			"assessments-enforced":                                    st.AssessmentsEnforced,
			"allow-force-delete-workspaces":                           st.AllowForceDeleteWorkspaces,
			"speculative-plan-management-enabled":                     st.SpeculativePlanManagementEnabled,
			"user-tokens-enabled":                                     st.UserTokensEnabled,
			"enforce-hyok":                                            st.EnforceHYOK,
			"stacks-enabled":                                          st.StacksEnabled,
			"max-ttl-enabled":                                         st.MaxTTLEnabled,
			"saml-enabled":                                            false,
			"two-factor-conformant":                                   true,
			"permissions": map[string]bool{
				"can-update": p.CanUpdate, "can-destroy": p.CanDestroy, "can-create-team": p.CanCreateTeam,
				"can-create-project": p.CanCreateProject, "can-create-workspace": p.CanCreateWorkspace,
				"can-update-sentinel": p.CanManagePolicies, "can-traverse": true,
			},
		},
		"relationships": map[string]any{
			"default-project": map[string]any{"data": ref{ID: o.DefaultProjectID, Type: "projects"}},
		},
		"links": map[string]string{"self": "/api/v2/organizations/" + o.Name},
	}
}

// orgSettings reads the settings attributes of an organizations document.
func orgSettings(v *keel.Validation, res *reqResource) project.OrganizationSettings {
	return project.OrganizationSettings{
		CollaboratorAuthPolicy: res.attrString(v, "CollaboratorAuthPolicy"),
		SessionTimeout:         res.attrInt(v, "SessionTimeout"),
		SessionRemember:        res.attrInt(v, "SessionRemember"),
		OwnersTeamSAMLRoleID:   res.attrString(v, "OwnersTeamSAMLRoleID"),
		DefaultExecutionMode:   res.attrString(v, "DefaultExecutionMode"),
		CostEstimationEnabled:  res.attrBool(v, "CostEstimationEnabled"),
		SendPassingStatusesForUntriggeredSpeculativePlans: res.attrBool(v, "SendPassingStatusesForUntriggeredSpeculativePlans"),
		AggregatedCommitStatusEnabled:                     res.attrBool(v, "AggregatedCommitStatusEnabled"),
		AssessmentsEnforced:                               res.attrBool(v, "AssessmentsEnforced"),
		AllowForceDeleteWorkspaces:                        res.attrBool(v, "AllowForceDeleteWorkspaces"),
		SpeculativePlanManagementEnabled:                  res.attrBool(v, "SpeculativePlanManagementEnabled"),
		UserTokensEnabled:                                 res.attrBool(v, "UserTokensEnabled"),
		EnforceHYOK:                                       res.attrBool(v, "EnforceHYOK"),
		StacksEnabled:                                     res.attrBool(v, "StacksEnabled"),
		MaxTTLEnabled:                                     res.attrBool(v, "MaxTTLEnabled"),
	}
}

func (h *Handler) createOrganization(w http.ResponseWriter, r *http.Request) {
	type input struct {
		name, email *string
		settings    project.OrganizationSettings
	}
	serve(h, w, r, "organizations", func(v *keel.Validation, res *reqResource) input {
		return input{res.attrString(v, "Name"), res.attrString(v, "Email"), orgSettings(v, res)}
	}, func(in input) (project.Organization, error) {
		return h.catalog.CreateOrganization(r.Context(), project.OrganizationRequest{Name: in.name, Email: in.email, OrganizationSettings: in.settings})
	}, http.StatusCreated, orgDoc)
}

func (h *Handler) updateOrganization(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "organizations", func(v *keel.Validation, res *reqResource) project.OrganizationRequest {
		return project.OrganizationRequest{
			Name: res.attrString(v, "Name"), Email: res.attrString(v, "Email"), OrganizationSettings: orgSettings(v, res),
		}
	}, func(in project.OrganizationRequest) (project.Organization, error) {
		return h.catalog.UpdateOrganization(r.Context(), r.PathValue("org"), in)
	}, http.StatusOK, orgDoc)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (h *Handler) readOrganization(w http.ResponseWriter, r *http.Request) {
	o, err := h.catalog.GetOrganization(r.Context(), r.PathValue("org"))
	h.writeData(w, r, http.StatusOK, err, func() any { return orgDoc(o) })
}

func (h *Handler) listOrganizations(w http.ResponseWriter, r *http.Request) {
	var orgs []project.Organization
	var err error
	for o, e := range keel.All(r.Context(), project.MaxPageSize, h.catalog.ListOrganizations) {
		if err = e; err != nil {
			break
		}
		orgs = append(orgs, o)
	}
	h.writeList(w, r, docs(orgs, orgDoc), err)
}

func (h *Handler) deleteOrganization(w http.ResponseWriter, r *http.Request) {
	h.writeNoContent(w, r, h.catalog.DeleteOrganization(r.Context(), r.PathValue("org")))
}
