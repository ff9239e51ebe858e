# The provider, configured with nothing but its hostname and a token: it
# finds the API through https://HOSTNAME/.well-known/terraform.json and
# trusts the server's certificate through SSL_CERT_FILE.

terraform {
  required_providers {
    tfe = {
      source  = "hashicorp/tfe"
      version = "0.79.0"
    }
  }
}

variable "hostname" {
  type = string
}

variable "token" {
  type      = string
  sensitive = true
}

# changed switches every resource to its second shape: the harness's
# "change" step applies with changed=true.
variable "changed" {
  type    = bool
  default = false
}

provider "tfe" {
  hostname = var.hostname
  token    = var.token
}
