"""Google Vertex AI with application-default credentials (no API key): rpcd loads the ADC file with
``google-auth``, gets an access token from the file's token endpoint (a loopback server standing in
for oauth2.googleapis.com: a signed JWT-bearer assertion, verified here), sends it as a bearer
token, reuses it while it is valid, and builds the URL Google's SDK builds from the project and the
location. (Pi's google-auth-library always posts to oauth2.googleapis.com, so this part is not a
differential test: the request body is, in ``test_pi_new_apis_differential.py``.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rpcd.providers import vertex
from rpcd.providers.call import CallContext
from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.credentials import Credentials, ResolvedAuth
from rpcd.providers.http import ProviderRetry, StreamError, Timeouts
from rpcd.providers.models_config import ModelSpec, ProviderSpec
from rpcd.providers.remote import RemoteProvider, RequestSettings
from tests.providers.conftest import collect, final, request_for
from tests.providers.json_server import JsonServer, Seen, running_json_server
from tests.providers.sse_server import Reply, SseServer, load_recording

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def rsa_key() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@pytest.fixture
def token_server() -> Iterator[JsonServer]:
    with running_json_server() as srv:
        yield srv


def service_account(tmp_path: Path, token_uri: str, private_key: str) -> Path:
    path = tmp_path / "sa.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "rpcd-test", "private_key_id": "k1", "private_key": private_key,
        "client_email": "pi@rpcd-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": token_uri,
    }))
    return path


def vertex_provider(base_url: str, env: dict[str, str]) -> RemoteProvider:
    builtin = builtin_catalog().providers["google-vertex"]
    raw = next(m for m in builtin.models if m["id"] == "gemini-2.5-flash")
    spec = ModelSpec.from_pi({**raw, "baseUrl": base_url}, "google-vertex")
    provider_spec = ProviderSpec(name="google-vertex", display_name=builtin.name, base_url=base_url, models=(spec,),
                                 builtin=builtin, configured=True)
    return RemoteProvider(provider_spec, credentials=Credentials(env=env),
                          settings=RequestSettings(timeouts=Timeouts(connect=5, read=30),
                                                   retry=ProviderRetry(max_retries=0)))


async def test_adc_tokens_are_fetched_sent_and_reused(server: SseServer, token_server: JsonServer,
                                                      tmp_path: Path, rsa_key: tuple[str, str]) -> None:
    import google.auth.jwt

    private, public = rsa_key
    tokens = iter(["ya29.first-access-token", "ya29.second-access-token"])

    def token(seen: Seen) -> tuple[int, Any]:
        return 200, {"access_token": next(tokens), "expires_in": 3600, "token_type": "Bearer"}

    token_server.route("POST", "/token", token)
    vertex.ADC.forget()
    sa = service_account(tmp_path, token_server.url + "/token", private)
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(sa), "GOOGLE_CLOUD_PROJECT": "rpcd-test",
           "GOOGLE_CLOUD_LOCATION": "us-central1"}
    provider = vertex_provider(server.root_url, env)
    assert provider.auth_check() is not None
    for _ in range(2):
        server.enqueue(Reply(events=load_recording("gemini_text")))
        message = final(await collect(provider, request_for(provider, model_id="gemini-2.5-flash")))
        assert message["stopReason"] == "stop", message.get("errorMessage")
    sent = [{k.lower(): v for k, v in r.headers.items()}.get("authorization") for r in server.requests]
    assert sent == ["Bearer ya29.first-access-token"] * 2
    assert server.requests[0].path == "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    (grant,) = token_server.seen("/token")
    assert grant.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    claims = google.auth.jwt.decode(grant.form["assertion"], certs=public, verify=True,
                                    audience="https://oauth2.googleapis.com/token")
    assert claims["iss"] == "pi@rpcd-test.iam.gserviceaccount.com"
    assert claims["scope"] == vertex.SCOPE


async def test_a_refused_token_request_is_an_error_naming_no_secret(server: SseServer, token_server: JsonServer,
                                                                    tmp_path: Path, rsa_key: tuple[str, str]) -> None:
    token_server.route("POST", "/token", lambda seen: (400, {"error": "invalid_grant",
                                                             "error_description": "Invalid JWT Signature."}))
    vertex.ADC.forget()
    sa = service_account(tmp_path, token_server.url + "/token", rsa_key[0])
    provider = vertex_provider(server.root_url, {"GOOGLE_APPLICATION_CREDENTIALS": str(sa),
                                                 "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "global"})
    message = final(await collect(provider, request_for(provider, model_id="gemini-2.5-flash")))
    assert message["stopReason"] == "error"
    assert "could not be refreshed" in message["errorMessage"]
    assert "PRIVATE KEY" not in message["errorMessage"]
    assert server.requests == []


def test_without_project_location_or_file_vertex_is_not_configured(tmp_path: Path) -> None:
    sa = tmp_path / "adc.json"
    sa.write_text("{}")
    full = {"GOOGLE_APPLICATION_CREDENTIALS": str(sa), "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"}
    assert vertex_provider("", full).auth_check() is not None
    for missing in full:
        env = {k: v for k, v in full.items() if k != missing}
        if missing == "GOOGLE_APPLICATION_CREDENTIALS":
            env["HOME"] = str(tmp_path)  # no gcloud file either
            env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "missing.json")
        provider = vertex_provider("", env)
        assert provider.auth_check() is None, missing
        assert "GOOGLE_CLOUD_PROJECT" in (provider.unusable_reason("gemini-2.5-flash") or "")
    assert vertex_provider("", {"GOOGLE_CLOUD_API_KEY": "AQ.key"}).auth_check() is not None


@pytest.mark.parametrize(("env", "url"), [
    ({"GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "us-central1"},
     "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/publishers/google/models/"
     "gemini-2.5-flash:streamGenerateContent?alt=sse"),
    ({"GCLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "global"},
     "https://aiplatform.googleapis.com/v1/projects/proj/locations/global/publishers/google/models/"
     "gemini-2.5-flash:streamGenerateContent?alt=sse"),
    ({"GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "eu"},
     "https://aiplatform.eu.rep.googleapis.com/v1/projects/proj/locations/eu/publishers/google/models/"
     "gemini-2.5-flash:streamGenerateContent?alt=sse"),
])
def test_the_url_is_the_one_googles_sdk_builds(env: dict[str, str], url: str) -> None:
    model = vertex_provider("https://{location}-aiplatform.googleapis.com", env).model_spec("gemini-2.5-flash")
    assert model is not None
    ctx = CallContext(system_prompt="", messages=[], env=env, auth=ResolvedAuth(None, {}, "adc"))
    assert vertex.request_url(model, ctx) == url
    keyed = CallContext(system_prompt="", messages=[], env=env, auth=ResolvedAuth("AQ.key", {}, "key"))
    assert vertex.request_url(model, keyed) == ("https://aiplatform.googleapis.com/v1/publishers/google/models/"
                                                "gemini-2.5-flash:streamGenerateContent?alt=sse")
    with pytest.raises(StreamError, match="requires a location"):
        vertex.request_url(model, CallContext(system_prompt="", messages=[], env={"GOOGLE_CLOUD_PROJECT": "p"}))
