# The organization, managed by Terraform.

variable "org" {
  type = string
}

resource "tfe_organization" "org" {
  name  = var.org
  email = var.changed ? "platform@example.com" : "admin@example.com"
}

locals {
  org = tfe_organization.org.name
}
