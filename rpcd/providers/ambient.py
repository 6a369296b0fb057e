"""Credentials Pi finds beyond one environment variable: the AWS credential chain for Amazon Bedrock
and application-default credentials for Google Vertex AI (pi-ai ``providers/amazon-bedrock.ts``
``bedrockAuth.resolve``, ``providers/google-vertex.ts`` ``vertexAuth.resolve``).

Each resolver answers, without running anything or reading a secret's value into a message,
whether the provider is configured and how: an ``Ambient`` with the API key to send (a Bedrock
bearer token, a Vertex API key) or none (the API module finds the AWS keys / the ADC file itself,
from the same environment), the label of the source, and the stored credential's ``env`` that
the API reads first. The values themselves are read at request time by the API module.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Final

import attrs

VERTEX_ADC_PATH: Final = "~/.config/gcloud/application_default_credentials.json"


@attrs.frozen
class Ambient:
    source: str
    api_key: str | None = attrs.field(default=None, repr=False)
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)


Lookup = Callable[[str], str | None]


def _file_exists(path: str) -> bool:
    return os.path.isfile(os.path.expanduser(path))


def bedrock(key: str | None, stored_env: Mapping[str, str] | None, env: Lookup) -> Ambient | None:
    """pi-ai ``bedrockAuth.resolve``: a stored bearer token, ``AWS_BEARER_TOKEN_BEDROCK``, a profile
    (stored or ``AWS_PROFILE``), access keys, an ECS task role, a web-identity token file."""
    scoped = dict(stored_env or {})
    if key:
        return Ambient("stored credential", key, scoped)
    if env("AWS_BEARER_TOKEN_BEDROCK"):
        return Ambient("AWS_BEARER_TOKEN_BEDROCK")
    if scoped.get("AWS_PROFILE") or env("AWS_PROFILE"):
        return Ambient("stored credential" if scoped.get("AWS_PROFILE") else "AWS_PROFILE", None, scoped)
    if env("AWS_ACCESS_KEY_ID") and env("AWS_SECRET_ACCESS_KEY"):
        return Ambient("AWS access keys")
    if env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") or env("AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        return Ambient("ECS task role")
    if env("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return Ambient("web identity token")
    return None


def vertex(key: str | None, stored_env: Mapping[str, str] | None, env: Lookup,
           file_exists: Callable[[str], bool] = _file_exists) -> Ambient | None:
    """pi-ai ``vertexAuth.resolve``: a stored key or ``GOOGLE_CLOUD_API_KEY``; else an ADC file
    (``GOOGLE_APPLICATION_CREDENTIALS`` or gcloud's) together with a project and a location."""
    scoped = dict(stored_env or {})
    api_key = key or env("GOOGLE_CLOUD_API_KEY")
    if api_key:
        return Ambient("stored credential" if key else "GOOGLE_CLOUD_API_KEY", api_key)
    adc = scoped.get("GOOGLE_APPLICATION_CREDENTIALS") or env("GOOGLE_APPLICATION_CREDENTIALS")
    has_credentials = file_exists(adc or VERTEX_ADC_PATH)
    project = scoped.get("GOOGLE_CLOUD_PROJECT") or env("GOOGLE_CLOUD_PROJECT") or env("GCLOUD_PROJECT")
    location = scoped.get("GOOGLE_CLOUD_LOCATION") or env("GOOGLE_CLOUD_LOCATION")
    if has_credentials and project and location:
        return Ambient("stored credential" if stored_env is not None else "gcloud application default credentials",
                       None, scoped)
    return None


RESOLVERS: Final = {"amazon-bedrock": bedrock, "google-vertex": vertex}
"""Providers whose credentials come from more than one variable, by provider id."""

HINTS: Final = {
    "amazon-bedrock": "no AWS credentials (set AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                      "AWS_BEARER_TOKEN_BEDROCK; or add a key or an AWS_PROFILE to auth.json)",
    "google-vertex": "no Google Cloud credentials (set GOOGLE_CLOUD_API_KEY, or application-default credentials "
                     "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION)",
}
