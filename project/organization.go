package project

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Organization settings: the values HCP Terraform accepts.
const (
	authPolicyPassword  = "password"             // collaborator-auth-policy: the default
	authPolicyTwoFactor = "two_factor_mandatory" // collaborator-auth-policy
	executionRemote     = "remote"               // execution mode: the default
	executionLocal      = "local"                // execution mode
)

// OrganizationSettings are the settings of an organization that keel
// keeps, as HCP Terraform names them. In an input a nil field was not sent
// (create: HCP Terraform's default; update: unchanged); in an Organization
// as read every field is set, to the value stored or to the default.
//
// keel stores them and runs nothing by them: no run, plan or session of
// keel reads them.
type OrganizationSettings struct {
	// CollaboratorAuthPolicy is "password" (the default) or
	// "two_factor_mandatory".
	CollaboratorAuthPolicy *string
	// SessionTimeout and SessionRemember are minutes, at least 1; 0 in
	// an Organization read means never set.
	SessionTimeout  *int
	SessionRemember *int
	// OwnersTeamSAMLRoleID is "" by default.
	OwnersTeamSAMLRoleID *string
	// DefaultExecutionMode is "remote" (the default) or "local" (keel
	// keeps no agent pools, so "agent" is refused).
	DefaultExecutionMode *string
	// CostEstimationEnabled defaults to true.
	CostEstimationEnabled *bool
	// SendPassingStatusesForUntriggeredSpeculativePlans defaults to false.
	SendPassingStatusesForUntriggeredSpeculativePlans *bool
	// AggregatedCommitStatusEnabled defaults to false.
	AggregatedCommitStatusEnabled *bool
	// AssessmentsEnforced defaults to false.
	AssessmentsEnforced *bool
	// AllowForceDeleteWorkspaces defaults to false.
	AllowForceDeleteWorkspaces *bool
	// SpeculativePlanManagementEnabled defaults to true.
	SpeculativePlanManagementEnabled *bool
	// UserTokensEnabled defaults to true.
	UserTokensEnabled *bool
	// EnforceHYOK, StacksEnabled and MaxTTLEnabled default to false.
	EnforceHYOK   *bool
	StacksEnabled *bool
	MaxTTLEnabled *bool
}

// OrganizationRequest is the input of CreateOrganization and
// UpdateOrganization: a nil field is not given (create: the default;
// update: left as it is).
type OrganizationRequest struct {
	// Name is required by CreateOrganization (the organization's id:
	// letters, digits, "-" and "_"); given to UpdateOrganization, it must
	// be the organization's own name (ignoring case): keel does not
	// rename organizations.
	Name *string
	// Email is the organization's contact address ("" by default).
	Email *string
	OrganizationSettings
}

// OrganizationPermissions are the caller's rights on an organization, as
// the organization document's "permissions" attribute shows them.
type OrganizationPermissions struct {
	CanUpdate          bool // update on organizations/<org>
	CanDestroy         bool // delete on organizations/<org>
	CanCreateTeam      bool // create on organizations/<org>/teams
	CanCreateProject   bool // manage-projects on organizations/<org>/projects
	CanCreateWorkspace bool // create on the workspaces of the default project
	CanManagePolicies  bool // manage-policies on organizations/<org>/policies
}

// resolved returns s with every nil field set to HCP Terraform's default.
func (s OrganizationSettings) resolved() OrganizationSettings {
	str := func(p **string, d string) {
		if *p == nil {
			*p = &d
		}
	}
	num := func(p **int) {
		if *p == nil {
			zero := 0
			*p = &zero
		}
	}
	flag := func(p **bool, d bool) {
		if *p == nil {
			*p = &d
		}
	}
	str(&s.CollaboratorAuthPolicy, authPolicyPassword)
	num(&s.SessionTimeout)
	num(&s.SessionRemember)
	str(&s.OwnersTeamSAMLRoleID, "")
	str(&s.DefaultExecutionMode, executionRemote)
	flag(&s.CostEstimationEnabled, true)
	flag(&s.SendPassingStatusesForUntriggeredSpeculativePlans, false)
	flag(&s.AggregatedCommitStatusEnabled, false)
	flag(&s.AssessmentsEnforced, false)
	flag(&s.AllowForceDeleteWorkspaces, false)
	flag(&s.SpeculativePlanManagementEnabled, true)
	flag(&s.UserTokensEnabled, true)
	flag(&s.EnforceHYOK, false)
	flag(&s.StacksEnabled, false)
	flag(&s.MaxTTLEnabled, false)
	return s
}

// merge sets in s the fields sent in in.
func (s *OrganizationSettings) merge(in OrganizationSettings) {
	set := func(dst **string, src *string) {
		if src != nil {
			*dst = src
		}
	}
	setN := func(dst **int, src *int) {
		if src != nil {
			*dst = src
		}
	}
	setB := func(dst **bool, src *bool) {
		if src != nil {
			*dst = src
		}
	}
	set(&s.CollaboratorAuthPolicy, in.CollaboratorAuthPolicy)
	setN(&s.SessionTimeout, in.SessionTimeout)
	setN(&s.SessionRemember, in.SessionRemember)
	set(&s.OwnersTeamSAMLRoleID, in.OwnersTeamSAMLRoleID)
	set(&s.DefaultExecutionMode, in.DefaultExecutionMode)
	setB(&s.CostEstimationEnabled, in.CostEstimationEnabled)
	setB(&s.SendPassingStatusesForUntriggeredSpeculativePlans, in.SendPassingStatusesForUntriggeredSpeculativePlans)
	setB(&s.AggregatedCommitStatusEnabled, in.AggregatedCommitStatusEnabled)
	setB(&s.AssessmentsEnforced, in.AssessmentsEnforced)
	setB(&s.AllowForceDeleteWorkspaces, in.AllowForceDeleteWorkspaces)
	setB(&s.SpeculativePlanManagementEnabled, in.SpeculativePlanManagementEnabled)
	setB(&s.UserTokensEnabled, in.UserTokensEnabled)
	setB(&s.EnforceHYOK, in.EnforceHYOK)
	setB(&s.StacksEnabled, in.StacksEnabled)
	setB(&s.MaxTTLEnabled, in.MaxTTLEnabled)
}

// validate records the broken rules of the settings sent in v.
func (s OrganizationSettings) validate(v *keel.Validation) {
	policies := []string{authPolicyPassword, authPolicyTwoFactor}
	if s.CollaboratorAuthPolicy != nil && !slices.Contains(policies, *s.CollaboratorAuthPolicy) {
		v.Add("CollaboratorAuthPolicy", "must be one of %s", strings.Join(policies, ", "))
	}
	if s.SessionTimeout != nil && *s.SessionTimeout < 1 {
		v.Add("SessionTimeout", "must be at least 1 minute")
	}
	if s.SessionRemember != nil && *s.SessionRemember < 1 {
		v.Add("SessionRemember", "must be at least 1 minute")
	}
	modes := []string{executionRemote, executionLocal}
	if s.DefaultExecutionMode != nil && !slices.Contains(modes, *s.DefaultExecutionMode) {
		v.Add("DefaultExecutionMode", "must be one of %s (keel keeps no agent pools)", strings.Join(modes, ", "))
	}
	if on(s.SendPassingStatusesForUntriggeredSpeculativePlans) && on(s.AggregatedCommitStatusEnabled) {
		v.Add("AggregatedCommitStatusEnabled", "cannot be true while passing statuses are sent for untriggered speculative plans")
	}
}

func on(b *bool) bool { return b != nil && *b }

// UpdateOrganization changes the email and the settings sent. It needs
// update on "organizations/<name>" (keel.KindForbidden without it); an
// organization the caller cannot read is not found. A Name other than the
// organization's own (ignoring case) is refused ("Name"): keel does not
// rename organizations, whose name is their id in every key.
func (c *Catalog) UpdateOrganization(ctx context.Context, name string, in OrganizationRequest) (_ Organization, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.UpdateOrganization", name, in, func(ctx context.Context) (Organization, error) {
		return c.updateOrganization(ctx, name, in)
	})
}

func (c *Catalog) updateOrganization(ctx context.Context, name string, in OrganizationRequest) (_ Organization, err error) {
	defer prefixErr(&err)
	var v keel.Validation
	if in.Name != nil && !strings.EqualFold(*in.Name, name) {
		v.Add("Name", "cannot be changed: keel does not rename organizations")
	}
	in.validate(&v)
	invalid := v.Err()
	var out Organization
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := c.visibleOrg(ctx, tx, name, keel.CapRead)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapUpdate, orgResource(name)); err != nil {
			return err
		}
		if invalid != nil {
			return invalid
		}
		if in.Email != nil {
			rec.Email = *in.Email
		}
		rec.Settings.merge(in.OrganizationSettings)
		if err := putJSON(tx, orgKey(name), rec); err != nil {
			return err
		}
		out, err = c.publicOrg(ctx, rec)
		return err
	})
	return out, err
}

// orgPermissions computes the caller's permissions on the organization
// rec. A refusal is false; any other error of the Authorizer is returned.
func (c *Catalog) orgPermissions(ctx context.Context, rec *orgRecord) (OrganizationPermissions, error) {
	var p OrganizationPermissions
	checks := []struct {
		capability keel.Capability
		resource   string
		out        *bool
	}{
		{keel.CapUpdate, orgResource(rec.Name), &p.CanUpdate},
		{keel.CapDelete, orgResource(rec.Name), &p.CanDestroy},
		{keel.CapCreate, teamsResource(rec.Name), &p.CanCreateTeam},
		{keel.CapManageProjects, projectsResource(rec.Name), &p.CanCreateProject},
		{keel.CapCreate, wsCreateResource(rec.Name, rec.DefaultProject), &p.CanCreateWorkspace},
		{keel.CapManagePolicies, orgResource(rec.Name) + "/policies", &p.CanManagePolicies},
	}
	for _, ch := range checks {
		ok, err := c.may(ctx, ch.capability, ch.resource)
		if err != nil {
			return p, err
		}
		*ch.out = ok
	}
	return p, nil
}

// may reports whether the caller holds capability on resource: a refusal
// is false, any other error of the Authorizer is returned.
func (c *Catalog) may(ctx context.Context, capability keel.Capability, resource string) (bool, error) {
	err := keel.Authorize(ctx, c.authz, capability, resource)
	if errors.Is(err, keel.KindForbidden) {
		return false, nil
	}
	return err == nil, err
}

// publicOrg is the organization rec as the caller reads it.
func (c *Catalog) publicOrg(ctx context.Context, rec *orgRecord) (Organization, error) {
	perms, err := c.orgPermissions(ctx, rec)
	if err != nil {
		return Organization{}, err
	}
	o := rec.public()
	o.Permissions = perms
	return o, nil
}
