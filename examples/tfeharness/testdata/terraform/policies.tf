# Policies (Sentinel and OPA) and policy sets over a project and a
# workspace; the change rewrites a policy, changes enforcement levels and
# takes the workspace out of a set.

resource "tfe_policy" "sentinel" {
  organization = local.org
  name         = "no-public-buckets"
  description  = "Buckets are private"
  kind         = "sentinel"
  policy       = var.changed ? "main = rule { true and true }" : "main = rule { true }"
  enforce_mode = var.changed ? "hard-mandatory" : "soft-mandatory"
}

resource "tfe_policy" "opa" {
  organization = local.org
  name         = "tags-required"
  kind         = "opa"
  policy       = "package example rule[\"not allowed\"] { false }"
  query        = "data.example.rule"
  enforce_mode = var.changed ? "mandatory" : "advisory"
}

resource "tfe_project" "governed" {
  organization = local.org
  name         = "governed"
}

resource "tfe_workspace" "governed_app" {
  organization = local.org
  name         = "governed-app"
  project_id   = tfe_project.governed.id
}

resource "tfe_policy_set" "baseline" {
  organization  = local.org
  name          = "baseline"
  description   = var.changed ? "Baseline policies, reviewed" : "Baseline policies"
  kind          = "sentinel"
  policy_ids    = [tfe_policy.sentinel.id]
  workspace_ids = var.changed ? [] : [tfe_workspace.governed_app.id]
}

resource "tfe_policy_set" "opa" {
  organization = local.org
  name         = "opa-baseline"
  kind         = "opa"
  overridable  = var.changed
  policy_ids   = [tfe_policy.opa.id]
}

resource "tfe_project_policy_set" "governed_baseline" {
  policy_set_id = tfe_policy_set.baseline.id
  project_id    = tfe_project.governed.id
}

data "tfe_policy_set" "baseline" {
  organization = local.org
  name         = tfe_policy_set.baseline.name
}

output "baseline_policies" {
  value = length(data.tfe_policy_set.baseline.policy_ids)
}
