"""Credentials Pi finds beyond one environment variable: the AWS credential chain for Amazon Bedrock,
application-default credentials for Google Vertex AI and Cloudflare's key with its account (and AI
Gateway) id (pi-ai ``providers/amazon-bedrock.ts`` ``bedrockAuth.resolve``, ``providers/google-vertex.ts``
``vertexAuth.resolve``, ``providers/cloudflare-auth.ts``).

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
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """Headers carrying the credential instead of the API's own (Cloudflare AI Gateway's)."""
    removed_headers: tuple[str, ...] = ()
    """The API's own credential headers the request must not carry (Pi's ``null`` header values)."""


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


CLOUDFLARE_WORKERS_AI: Final = "cloudflare-workers-ai"
CLOUDFLARE_AI_GATEWAY: Final = "cloudflare-ai-gateway"
CLOUDFLARE_PROVIDERS: Final = frozenset({CLOUDFLARE_WORKERS_AI, CLOUDFLARE_AI_GATEWAY})
"""Pi's Cloudflare providers: their base URLs hold the account (and gateway) id as placeholders."""
CLOUDFLARE_IDS: Final = ("CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID")
"""The placeholders of Cloudflare's base URLs (``{CLOUDFLARE_ACCOUNT_ID}``), filled from the resolved env."""


def _cloudflare(gateway: bool, key: str | None, stored_env: Mapping[str, str] | None, env: Lookup) -> Ambient | None:
    """pi-ai ``resolveCloudflareEnv``: each of the key, the account id and (AI Gateway) the gateway id from
    the stored credential (its key, its ``env``), else from the environment; all of them, or nothing."""
    stored = stored_env is not None

    def value(name: str, from_credential: str | None) -> str | None:
        return from_credential if from_credential is not None else env(name)

    api_key = value("CLOUDFLARE_API_KEY", key if stored else None)
    account = value("CLOUDFLARE_ACCOUNT_ID", (stored_env or {}).get("CLOUDFLARE_ACCOUNT_ID"))
    gateway_id = value("CLOUDFLARE_GATEWAY_ID", (stored_env or {}).get("CLOUDFLARE_GATEWAY_ID")) if gateway else None
    if not api_key or not account or (gateway and not gateway_id):
        return None
    ids = {"CLOUDFLARE_ACCOUNT_ID": account, **({"CLOUDFLARE_GATEWAY_ID": gateway_id} if gateway_id else {})}
    source = "stored credential" if stored else "CLOUDFLARE_API_KEY"
    if not gateway:
        return Ambient(source, api_key, ids)
    # the gateway authenticates with its own header; the upstream API's key headers are dropped
    return Ambient(source, None, ids, headers={"cf-aig-authorization": f"Bearer {api_key}"},
                   removed_headers=("Authorization", "x-api-key"))


def cloudflare_workers_ai(key: str | None, stored_env: Mapping[str, str] | None, env: Lookup) -> Ambient | None:
    return _cloudflare(False, key, stored_env, env)


def cloudflare_ai_gateway(key: str | None, stored_env: Mapping[str, str] | None, env: Lookup) -> Ambient | None:
    return _cloudflare(True, key, stored_env, env)


KEY_LOGIN_VALUES: Final = {
    CLOUDFLARE_WORKERS_AI: (("CLOUDFLARE_ACCOUNT_ID", "Enter Cloudflare account ID"),),
    CLOUDFLARE_AI_GATEWAY: (("CLOUDFLARE_ACCOUNT_ID", "Enter Cloudflare account ID"),
                            ("CLOUDFLARE_GATEWAY_ID", "Enter Cloudflare AI Gateway ID")),
}
"""What a key login asks for besides the key, stored in the entry's ``env`` (pi-ai ``cloudflare*Auth.login``)."""
KEY_LOGIN_MESSAGES: Final = {CLOUDFLARE_WORKERS_AI: "Enter Cloudflare API key",
                             CLOUDFLARE_AI_GATEWAY: "Enter Cloudflare API key"}


def cloudflare_base_url(base_url: str, env: Mapping[str, str]) -> str:
    """pi-ai ``resolveCloudflareModel``: the account and gateway ids put into a Cloudflare base URL (a
    placeholder without a value stays as it is)."""
    for name in CLOUDFLARE_IDS:
        if name in env:
            base_url = base_url.replace("{" + name + "}", env[name])
    return base_url


RESOLVERS: Final = {"amazon-bedrock": bedrock, "google-vertex": vertex, CLOUDFLARE_WORKERS_AI: cloudflare_workers_ai,
                    CLOUDFLARE_AI_GATEWAY: cloudflare_ai_gateway}
"""Providers whose credentials come from more than one variable, by provider id."""

HINTS: Final = {
    "amazon-bedrock": "no AWS credentials (set AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                      "AWS_BEARER_TOKEN_BEDROCK; or add a key or an AWS_PROFILE to auth.json)",
    "google-vertex": "no Google Cloud credentials (set GOOGLE_CLOUD_API_KEY, or application-default credentials "
                     "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION)",
    CLOUDFLARE_WORKERS_AI: "no Cloudflare credentials (set CLOUDFLARE_API_KEY and CLOUDFLARE_ACCOUNT_ID, or log in "
                           "with an API key: rpcctl login cloudflare-workers-ai)",
    CLOUDFLARE_AI_GATEWAY: "no Cloudflare credentials (set CLOUDFLARE_API_KEY, CLOUDFLARE_ACCOUNT_ID and "
                           "CLOUDFLARE_GATEWAY_ID, or log in with an API key: rpcctl login cloudflare-ai-gateway)",
}
