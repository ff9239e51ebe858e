package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/randid"
	"github.com/keelhq/keel/storage"
)

// Keys, relative to the Catalog's store (programs give it the view
// "project/" of their store):
//
//	org/<name>                        the record of an organization (JSON)
//	del/<name>                        the pending deletion of an organization (JSON, see deletion.go)
//	cleanup/<team|prj>/<id>           the organization of a deleted team or project whose access keys are being deleted (see cleanup.go)
//	prj/<id>                          the record of a project (JSON)
//	ws/<id>                           the record of a workspace (JSON)
//	team/<id>                         the record of a team (JSON)
//	ix/<org>/prjname/<folded name>    the id of the project of that name
//	ix/<org>/wsname/<folded name>     the id of the workspace of that name
//	ix/<org>/teamname/<folded name>   the id of the team of that name
//	ix/<org>/prjws/<prj>/<ws>         empty: ws is in prj
//	ix/<org>/access/<prj>/<team>      the team's access to the project
//
// Project names are kept in a name index in byte order of their folded
// form, so that a sorted page is read from the index without loading the
// organization's other projects.
const (
	orgPrefix  = "org/"
	prjPrefix  = "prj/"
	wsPrefix   = "ws/"
	teamPrefix = "team/"
	ixPrefix   = "ix/"
)

func orgKey(name string) string  { return orgPrefix + name }
func prjKey(id string) string    { return prjPrefix + id }
func wsKey(id string) string     { return wsPrefix + id }
func teamKey(id string) string   { return teamPrefix + id }
func orgIx(org string) string    { return ixPrefix + org + "/" }
func prjNames(org string) string { return orgIx(org) + "prjname/" }
func wsNames(org string) string  { return orgIx(org) + "wsname/" }
func teamNames(org string) string {
	return orgIx(org) + "teamname/"
}
func prjWorkspaces(org, prj string) string { return orgIx(org) + "prjws/" + prj + "/" }
func prjAccess(org, prj string) string     { return orgIx(org) + "access/" + prj + "/" }

// fold is the form of a name in the name indexes: names are unique and
// matched ignoring case, as HCP Terraform does.
func fold(name string) string { return strings.ToLower(name) }

// orgRecord is an organization as stored.
type orgRecord struct {
	Name           string    `json:"name"`
	Email          string    `json:"email,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	DefaultProject string    `json:"default_project"`
	ProjectCount   int       `json:"project_count"`
	// Settings holds the settings sent; a nil field is HCP Terraform's
	// default, applied when read (OrganizationSettings.resolved).
	Settings OrganizationSettings `json:"settings"`
}

// prjRecord is a project as stored.
type prjRecord struct {
	ID             string    `json:"id"`
	Org            string    `json:"org"`
	Name           string    `json:"name"`
	Description    *string   `json:"description,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	WorkspaceCount int       `json:"workspace_count"`
	TeamCount      int       `json:"team_count"`
}

// wsRecord is a workspace as stored.
type wsRecord struct {
	ID        string    `json:"id"`
	Org       string    `json:"org"`
	Name      string    `json:"name"`
	ProjectID string    `json:"project_id"`
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is nil until the first update.
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	// Settings holds the settings sent; a nil field is HCP Terraform's
	// default, applied when read (WorkspaceSettings.resolved).
	Settings WorkspaceSettings `json:"settings"`
}

// teamRecord is a team as stored.
type teamRecord struct {
	ID   string `json:"id"`
	Org  string `json:"org"`
	Name string `json:"name"`
	// Owners marks the owners team, created with the organization.
	Owners   bool         `json:"owners,omitempty"`
	Settings TeamSettings `json:"settings"`
}

// getJSON reads key into v; a missing key is keel.KindNotFound with what
// in the message.
func getJSON(tx storage.Tx, key, what string, v any) error {
	raw, err := tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("no %s: %w", what, keel.KindNotFound)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("record of %s is corrupt (%v): %w", what, err, keel.KindInternal)
	}
	return nil
}

func putJSON(tx storage.Tx, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %v: %w", key, err, keel.KindInternal)
	}
	return tx.Put(key, raw)
}

// validID reports whether id can name a record: not empty, no "/".
func validID(id string) bool { return id != "" && !strings.Contains(id, "/") }

func getOrg(tx storage.Tx, name string) (*orgRecord, error) {
	if !validID(name) {
		return nil, fmt.Errorf("no organization %q: %w", name, keel.KindNotFound)
	}
	var rec orgRecord
	if err := getJSON(tx, orgKey(name), fmt.Sprintf("organization %q", name), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func getProject(tx storage.Tx, id string) (*prjRecord, error) {
	if !validID(id) {
		return nil, fmt.Errorf("no project %q: %w", id, keel.KindNotFound)
	}
	var rec prjRecord
	if err := getJSON(tx, prjKey(id), fmt.Sprintf("project %q", id), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func getWorkspace(tx storage.Tx, id string) (*wsRecord, error) {
	if !validID(id) {
		return nil, fmt.Errorf("no workspace %q: %w", id, keel.KindNotFound)
	}
	var rec wsRecord
	if err := getJSON(tx, wsKey(id), fmt.Sprintf("workspace %q", id), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func getTeam(tx storage.Tx, id string) (*teamRecord, error) {
	if !validID(id) {
		return nil, fmt.Errorf("no team %q: %w", id, keel.KindNotFound)
	}
	var rec teamRecord
	if err := getJSON(tx, teamKey(id), fmt.Sprintf("team %q", id), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// liveOrg returns keel.KindNotFound, naming the record of kind
// ("project") and id as a missing one, when the organization org of the
// record does not exist: its records are not to be seen while its
// deletion, started, has not deleted them yet.
func liveOrg(tx storage.Tx, org, kind, id string) error {
	_, err := liveOrgRecord(tx, org, kind, id)
	return err
}

// liveOrgRecord is liveOrg that returns the organization's record.
func liveOrgRecord(tx storage.Tx, org, kind, id string) (*orgRecord, error) {
	o, err := getOrg(tx, org)
	if errors.Is(err, keel.KindNotFound) {
		return nil, fmt.Errorf("no %s %q: %w", kind, id, keel.KindNotFound)
	}
	return o, err
}

// lookup returns the value of an index key, or "" when it is absent.
// isMissing reports whether err is the store's missing key.
func isMissing(err error) bool { return errors.Is(err, storage.ErrNotFound) }

func lookup(tx storage.Tx, key string) (string, error) {
	raw, err := tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return string(raw), err
}

// newID returns prefix followed by "-" and 16 random base58 characters,
// the form of HCP Terraform's ids ("prj-", "ws-", "team-", "pol-"). base58
// (digits and letters without 0, O, I and l) is their alphabet: clients
// tell an id from a name by it (the tfe provider's import reads "team-"
// and 16 base58 characters as an id, anything else as a name).
func newID(prefix string) string {
	return prefix + "-" + randid.String(randid.Base58, 16)
}

// Resources the Authorizer is asked about.
func orgsResource() string                  { return "organizations" }
func orgResource(org string) string         { return "organizations/" + org }
func projectsResource(org string) string    { return orgResource(org) + "/projects" }
func projectResource(org, id string) string { return projectsResource(org) + "/" + id }
func wsCreateResource(org, prj string) string {
	return projectResource(org, prj) + "/workspaces"
}
func workspaceResource(org, id string) string { return orgResource(org) + "/workspaces/" + id }
func teamsResource(org string) string         { return orgResource(org) + "/teams" }
