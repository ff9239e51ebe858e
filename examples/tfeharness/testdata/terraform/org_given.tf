# The organization, made by the harness through the API: a group that does
# not test tfe_organization itself does not depend on it.

variable "org" {
  type = string
}

locals {
  org = var.org
}
