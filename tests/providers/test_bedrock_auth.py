"""Amazon Bedrock's authentication as Pi's AWS SDK does it, checked against a loopback endpoint:
SigV4 signatures (verified here with botocore from what the server received), session tokens,
profiles from the shared files (region from the profile), a stored ``AWS_PROFILE`` winning over
ambient keys, bearer tokens, ``AWS_BEDROCK_SKIP_AUTH``, and the endpoint/region rules for the
catalog's standard endpoints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rpcd.providers import bedrock
from rpcd.providers.call import CallContext
from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.credentials import Credentials, ResolvedAuth, StoredCredential
from rpcd.providers.http import ProviderRetry, Timeouts
from rpcd.providers.models_config import ModelSpec, ProviderSpec
from rpcd.providers.remote import RemoteProvider, RequestSettings
from tests.providers.conftest import collect, final, request_for
from tests.providers.sse_server import RecordedRequest, Reply, SseServer, aws_frames

pytestmark = pytest.mark.anyio

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
AWS_VARS = ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_EC2_METADATA_DISABLED")


@pytest.fixture(autouse=True)
def clean_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS configuration of the machine leaks in (botocore reads the process environment and ~/.aws)."""
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    bedrock.CHAIN.forget()


def provider(base_url: str, env: dict[str, str], stored: dict[str, StoredCredential] | None = None,
             model_id: str = MODEL) -> RemoteProvider:
    import os

    builtin = builtin_catalog().providers["amazon-bedrock"]
    raw = next(m for m in builtin.models if m["id"] == model_id)
    spec = ModelSpec.from_pi({**raw, "baseUrl": base_url}, "amazon-bedrock")
    provider_spec = ProviderSpec(name="amazon-bedrock", display_name=builtin.name, base_url=base_url, models=(spec,),
                                 builtin=builtin, configured=True)
    full_env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")} | env
    return RemoteProvider(provider_spec, credentials=Credentials(env=full_env, stored=stored or {}),
                          settings=RequestSettings(timeouts=Timeouts(connect=5, read=30),
                                                   retry=ProviderRetry(max_retries=0)))


async def answer(server: SseServer, p: RemoteProvider) -> dict[str, Any]:
    server.enqueue(Reply(frames=aws_frames("bedrock_text"), stream_type="application/vnd.amazon.eventstream"))
    message = final(await collect(p, request_for(p, model_id=MODEL)))
    assert message["stopReason"] == "stop", message.get("errorMessage")
    return message


def authorization(request: RecordedRequest) -> dict[str, str]:
    value = next(v for k, v in request.headers.items() if k.lower() == "authorization")
    algorithm, _, rest = value.partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256"
    return dict(part.strip().split("=", 1) for part in rest.split(","))


def verify(request: RecordedRequest, base_url: str, access: str, secret: str, token: str | None = None) -> str:
    """Recompute the SigV4 signature of what the server received; returns the credential scope's region."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as AwsCredentials

    fields = authorization(request)
    key_id, _date, region, service, _ = fields["Credential"].split("/")
    assert key_id == access
    assert service == "bedrock"
    signed = fields["SignedHeaders"].split(";")
    headers = {k: v for k, v in request.headers.items() if k.lower() in signed}
    aws_request = AWSRequest(method="POST", url=base_url + request.path, data=request.raw, headers=headers)
    amz_date = next(v for k, v in request.headers.items() if k.lower() == "x-amz-date")
    aws_request.context["timestamp"] = amz_date
    auth = SigV4Auth(AwsCredentials(access, secret, token), "bedrock", region)
    canonical = auth.canonical_request(aws_request)
    assert auth.signature(auth.string_to_sign(aws_request, canonical), aws_request) == fields["Signature"]
    return region


async def test_access_keys_sign_every_request(server: SseServer) -> None:
    p = provider(server.root_url, {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
                                   "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEBYaDH-session", "AWS_REGION": "eu-west-3"})
    assert p.auth_check() is not None and p.auth_check().source == "AWS access keys"  # type: ignore[union-attr]
    await answer(server, p)
    (request,) = server.requests
    assert verify(request, server.root_url, "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG",
                  "FwoGZXIvYXdzEBYaDH-session") == "eu-west-3"
    assert {k.lower(): v for k, v in request.headers.items()}["x-amz-security-token"] == "FwoGZXIvYXdzEBYaDH-session"
    assert request.path == f"/model/{MODEL.replace(':', '%3A')}/converse-stream"


async def test_a_profile_from_the_shared_files_signs_in_its_region(server: SseServer, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "credentials").write_text("[work]\naws_access_key_id = AKIDPROFILE\n"
                                          "aws_secret_access_key = profile-secret\n")
    (tmp_path / "config").write_text("[profile work]\nregion = ap-southeast-2\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_PROFILE", "work")
    # ambient keys lose to a profile Pi's login stored (auth.json {"type": "api_key", "env": {"AWS_PROFILE"}})
    stored = {"amazon-bedrock": StoredCredential(type="api_key", env={"AWS_PROFILE": "work"})}
    p = provider(server.root_url, {"AWS_ACCESS_KEY_ID": "AKIDAMBIENT", "AWS_SECRET_ACCESS_KEY": "ambient"}, stored)
    assert p.auth_check() is not None and p.auth_check().source == "stored credential"  # type: ignore[union-attr]
    await answer(server, p)
    (request,) = server.requests
    assert verify(request, server.root_url, "AKIDPROFILE", "profile-secret") == "ap-southeast-2"


async def test_a_bearer_token_is_sent_as_is(server: SseServer) -> None:
    p = provider(server.root_url, {"AWS_BEARER_TOKEN_BEDROCK": "ABSKbedrock-api-key-0123"})
    assert p.auth_check() is not None
    await answer(server, p)
    (request,) = server.requests
    assert {k.lower(): v for k, v in request.headers.items()}["authorization"] == "Bearer ABSKbedrock-api-key-0123"


async def test_skip_auth_signs_with_dummy_keys(server: SseServer) -> None:
    p = provider(server.root_url, {"AWS_BEDROCK_SKIP_AUTH": "1", "AWS_BEARER_TOKEN_BEDROCK": "ignored"})
    await answer(server, p)
    (request,) = server.requests
    assert verify(request, server.root_url, "dummy-access-key", "dummy-secret-key") == "us-east-1"


async def test_no_credentials_at_all_is_a_clear_error(server: SseServer) -> None:
    p = provider(server.root_url, {"AWS_PROFILE": "missing"})
    message = final(await collect(p, request_for(p, model_id=MODEL)))
    assert message["stopReason"] == "error"
    assert "AWS credentials" in message["errorMessage"] or "credentials" in message["errorMessage"]
    assert server.requests == []


def test_without_any_aws_source_bedrock_is_not_configured() -> None:
    p = provider("https://bedrock-runtime.us-east-1.amazonaws.com", {})
    assert p.auth_check() is None
    assert "AWS credentials" in (p.unusable_reason(MODEL) or "")


@pytest.mark.parametrize(("base_url", "model_id", "env", "url"), [
    ("https://bedrock-runtime.us-east-1.amazonaws.com", MODEL, {},
     "https://bedrock-runtime.us-east-1.amazonaws.com"),
    ("https://bedrock-runtime.us-east-1.amazonaws.com", MODEL, {"AWS_REGION": "eu-central-1"},
     "https://bedrock-runtime.eu-central-1.amazonaws.com"),
    ("https://vpce-0a1b.bedrock-runtime.us-west-2.vpce.amazonaws.com", MODEL, {"AWS_REGION": "eu-central-1"},
     "https://vpce-0a1b.bedrock-runtime.us-west-2.vpce.amazonaws.com"),
    ("https://bedrock-runtime.us-east-1.amazonaws.com",
     "arn:aws:bedrock:ap-northeast-1:123456789012:application-inference-profile/abc", {"AWS_REGION": "us-west-2"},
     "https://bedrock-runtime.ap-northeast-1.amazonaws.com"),  # the ARN's region wins
])
def test_endpoint_and_region_follow_pis_rules(base_url: str, model_id: str, env: dict[str, str], url: str) -> None:
    spec = ModelSpec(provider="amazon-bedrock", id=model_id, name=model_id, api=bedrock.API, base_url=base_url)
    ctx = CallContext(system_prompt="", messages=[], env=env, auth=ResolvedAuth("ABSK", {}, "key"))
    where = bedrock.target(spec, ctx)
    aws = bedrock.AwsAuth(bearer="ABSK", region=where.region or "us-east-1")
    request = bedrock.build_request(spec, ctx.__class__(system_prompt="", messages=[], env=env,
                                                        auth=ctx.auth, api_state=aws))
    assert request.url.startswith(url + "/model/")
    if model_id.startswith("arn:"):
        assert where.region == "ap-northeast-1"
