# Projects and workspaces; the change renames a project and a workspace,
# and moves a workspace to the other project.

resource "tfe_project" "platform" {
  organization = local.org
  name         = "platform"
  description  = var.changed ? "Shared infrastructure, reviewed" : "Shared infrastructure"
}

resource "tfe_project" "apps" {
  organization = local.org
  name         = var.changed ? "applications" : "apps"
}

resource "tfe_workspace" "network" {
  organization = local.org
  name         = var.changed ? "network-prod" : "network"
  project_id   = tfe_project.platform.id
  description  = "The VPCs"
}

resource "tfe_workspace" "web" {
  organization = local.org
  name         = "web"
  project_id   = var.changed ? tfe_project.apps.id : tfe_project.platform.id
  auto_apply   = var.changed
}

# In the organization's default project.
resource "tfe_workspace" "scratch" {
  organization = local.org
  name         = "scratch"
}
