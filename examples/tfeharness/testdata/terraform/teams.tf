# A team and its access to a project; the change turns a fixed access level
# into a custom one.

resource "tfe_team" "ops" {
  organization = local.org
  name         = "ops"
  visibility   = var.changed ? "organization" : "secret"
}

resource "tfe_project" "shared" {
  organization = local.org
  name         = "shared"
}

resource "tfe_team_project_access" "ops_shared" {
  team_id    = tfe_team.ops.id
  project_id = tfe_project.shared.id
  access     = var.changed ? "custom" : "write"

  dynamic "project_access" {
    for_each = var.changed ? [1] : []
    content {
      settings = "update"
      teams    = "read"
    }
  }

  dynamic "workspace_access" {
    for_each = var.changed ? [1] : []
    content {
      runs      = "plan"
      variables = "read"
      create    = true
    }
  }
}
