"""A gateway a team shares: ``mcp serve --http --auth oauth --views FILE`` against a real
OpenID provider (oidc-provider from npm), with the MCP SDK's client in both protocol eras.

The provider issues client-credentials JWT access tokens for the gateway's resource URL
(RFC 8707) to three clients: ``reports-bot`` and ``ops-bot`` (each with the gateway's
scope ``mcp`` and a scope their views key on) and ``no-mcp`` (without ``mcp``).
"""

import base64
import contextlib
import hashlib
import json
import pathlib
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import aiomqtt  # noqa: E402
import httpx2  # noqa: E402
import mcp_types as types  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from jwt.algorithms import RSAAlgorithm  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from argentic_tools.mcp.access.auth import JwtVerifier, key_entry, new_api_key  # noqa: E402
from tests.product.test_mcp_tasks import RawClient, RpcError  # noqa: E402
from tests.support.brokers import Mosquitto, child_env, free_port  # noqa: E402
from tests.support.gateways import bridged, http_gateway  # noqa: E402
from tests.support.oidc import OidcClient, client_token, oidc_provider  # noqa: E402
from tests.support.processes import ROOT, ToolProcess, serving  # noqa: E402
from tests.support.task_tools import TOOL_NAMES as TASK_TOOLS  # noqa: E402

pytestmark = pytest.mark.anyio

REPORTS = OidcClient("reports-bot", "reports-secret", "mcp reports")
OPS = OidcClient("ops-bot", "ops-secret", "mcp ops")
NO_MCP = OidcClient("no-mcp", "no-mcp-secret", "reports")
BRIEF = OidcClient("brief-bot", "brief-secret", "mcp reports", ttl=3)

VIEWS = """
[[view]]
name = "reports"
scopes = ["reports"]
allow = ["whoami", "report_*", "count_*"]

[[view]]
name = "ops"
scopes = ["ops"]
allow = ["whoami", "echo", "ops_*", "count_*", "peek", "sleep"]
deny = ["report_*"]

[[limit]]
tools = ["count_*"]
rate = 3
burst = 3

[[limit]]
tools = ["sleep"]
concurrency = 1
"""


@pytest.fixture(scope="module")
def team_prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def team_tools(mosquitto: Mosquitto, team_prefix: str) -> Iterator[ToolProcess]:
    names = ("report_sales", "ops_restart", "count_a")
    module = ("tests.support.team_tools", "--names", ",".join(names))
    with ToolProcess(module[0], mosquitto.url, team_prefix, *module[1:]) as process:
        process.wait_registered(mosquitto.url, team_prefix, names)
        yield process


@pytest.fixture(scope="module")
def test_tools(mosquitto: Mosquitto, team_prefix: str) -> Iterator[ToolProcess]:
    with serving("tests.support.tool_proc", mosquitto.url, team_prefix, ("echo",)) as process:
        yield process


class Team:
    """The provider, the gateway and what a test needs to reach them."""

    def __init__(self, issuer: str, url: str, resource: str) -> None:
        self.issuer = issuer
        self.url = url
        self.resource = resource

    async def token(self, client: OidcClient, **options: Any) -> str:
        return await client_token(self.issuer, client, **options)


@pytest.fixture
async def team(
    mosquitto: Mosquitto,
    team_prefix: str,
    team_tools: ToolProcess,
    test_tools: ToolProcess,
    tmp_path: pathlib.Path,
) -> AsyncIterator[Team]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    views = tmp_path / "views.toml"
    views.write_text(VIEWS, encoding="utf-8")
    clients = [REPORTS, OPS, NO_MCP, BRIEF]
    async with oidc_provider(resource, "mcp reports ops", clients) as issuer:
        options = ["--http", f"127.0.0.1:{port}", "--auth", "oauth", "--issuer", issuer]
        options += ["--scope", "mcp", "--views", str(views)]
        async with http_gateway(mosquitto.url, team_prefix, *options) as (url, _):
            assert url == resource
            yield Team(issuer, url, resource)


@contextlib.asynccontextmanager
async def connected(
    url: str,
    token: str | None,
    mode: str,
    responses: list[httpx2.Response] | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """The MCP SDK's client on ``url``, sending ``token`` as its bearer token.

    ``responses`` collects the gateway's HTTP answers (the SDK reports any HTTP error as
    the same ``MCPError``; the status and challenge say which refusal it was).
    """
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}

    async def keep(response: httpx2.Response) -> None:
        if responses is not None:
            responses.append(response)

    async with httpx2.AsyncClient(headers=headers, event_hooks={"response": [keep]}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, **options) as client:
            yield client


async def initialize(url: str, token: str | None) -> httpx.Response:
    """A handshake-era ``initialize`` POST, as any client's first request."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(url, json=body, headers=headers)


async def refused_connect(url: str, mode: str) -> Exception:
    """What the SDK's client raises when it connects without a token."""
    try:
        with anyio.fail_after(20):
            async with connected(url, None, mode) as client:
                await client.list_tools()
    except Exception as exc:
        return exc
    raise AssertionError("connected without a token")


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def challenge(response: httpx.Response | httpx2.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer ...`` header."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer")
    params = {}
    for part in value.removeprefix("Bearer").split(","):
        key, _, quoted = part.strip().partition("=")
        if key:
            params[key] = quoted.strip('"')
    return params


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


async def test_the_gateway_is_an_oauth_resource_server(team: Team) -> None:
    """RFC 9728 metadata; 401 without a token, with a foreign or an expired one; 403
    without the gateway's scope; a valid token gets in."""
    metadata_url = f"{team.url.removesuffix('/mcp')}/.well-known/oauth-protected-resource/mcp"
    async with httpx.AsyncClient(timeout=10) as http:
        for url in (metadata_url, metadata_url.removesuffix("/mcp")):
            metadata = (await http.get(url)).json()
            assert metadata["resource"] == team.resource
            assert metadata["authorization_servers"] == [team.issuer]
            assert metadata["scopes_supported"] == ["mcp"]
            assert metadata["bearer_methods_supported"] == ["header"]

    missing = await initialize(team.url, None)
    assert missing.status_code == 401
    assert challenge(missing) == {"scope": "mcp", "resource_metadata": metadata_url}

    foreign = await team.token(REPORTS, resource="http://127.0.0.1:1/other")
    assert claims_of(foreign)["aud"] == "http://127.0.0.1:1/other"
    for token in (foreign, "not-a-jwt", (await team.token(REPORTS))[:-4] + "AAAA"):
        refused = await initialize(team.url, token)
        assert refused.status_code == 401
        assert challenge(refused)["error"] == "invalid_token"
        assert challenge(refused)["resource_metadata"] == metadata_url

    no_scope = await initialize(team.url, await team.token(NO_MCP))
    assert no_scope.status_code == 403
    assert challenge(no_scope)["error"] == "insufficient_scope"
    assert challenge(no_scope)["scope"] == "mcp"

    brief = await team.token(BRIEF)
    assert (await initialize(team.url, brief)).status_code == 200
    await anyio.sleep(max(0.0, claims_of(brief)["exp"] + 1.05 - time.time()))  # it expires
    expired = await initialize(team.url, brief)
    assert expired.status_code == 401
    assert challenge(expired)["error"] == "invalid_token"

    for mode in ("auto", "legacy"):
        failure = await refused_connect(team.url, mode)
        assert [type(leaf) for leaf in leaves(failure)] == [MCPError], repr(failure)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_client_sees_and_calls_only_its_view(team: Team, mode: str) -> None:
    """Views filter tools/list and tools/call alike; the call carries the token's subject."""
    seen: dict[str, list[str]] = {}
    for client in (REPORTS, OPS):
        token = await team.token(client)
        with anyio.fail_after(30):
            async with connected(team.url, token, mode) as session:
                listed = sorted(tool.name for tool in (await session.list_tools()).tools)
                seen[client.id] = listed
                result = await session.call_tool("whoami", {})
                assert not result.is_error, result
                assert result.structured_content is not None
                assert result.structured_content["user_id"] == client.id
                hidden = "ops_restart" if client is REPORTS else "report_sales"
                with pytest.raises(MCPError, match=f"Unknown tool: {hidden}"):
                    await session.call_tool(hidden, {})
                shown = "report_sales" if client is REPORTS else "ops_restart"
                called = await session.call_tool(shown, {})
                assert called.structured_content == {"tool": shown, "user_id": client.id}
    assert seen["reports-bot"] == ["count_a", "report_sales", "whoami"]
    assert seen["ops-bot"] == ["count_a", "echo", "ops_restart", "sleep", "whoami"]


async def test_a_client_over_its_rate_is_refused_at_once_and_others_are_not(team: Team) -> None:
    """3 calls a second per client: the 4th is answered 429 with Retry-After."""
    ops = await team.token(OPS)
    reports = await team.token(REPORTS)
    with anyio.fail_after(30):
        async with connected(team.url, ops, "legacy") as session:
            outcomes: list[Any] = []

            async def call() -> None:
                try:
                    outcomes.append(await session.call_tool("count_a", {}))
                except Exception as exc:  # the refusal, as the client raises it
                    outcomes.append(exc)

            async with anyio.create_task_group() as group:
                for _ in range(4):
                    group.start_soon(call)
            failed = [o for o in outcomes if not isinstance(o, types.CallToolResult)]
            assert len(failed) == 1, outcomes
            assert "rate limit exceeded" in str(failed[0])
        async with connected(team.url, reports, "legacy") as session:
            result = await session.call_tool("count_a", {})
            assert result.structured_content == {"tool": "count_a", "user_id": "reports-bot"}
    # On the wire: 429 before the call, with Retry-After and the JSON-RPC error's hint.
    answers: list[httpx.Response] = []
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "count_a"}}
    headers = {"Authorization": f"Bearer {ops}", "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:

        async def post() -> None:
            answers.append(await http.post(team.url, json=body, headers=headers))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for _ in range(4):
                    group.start_soon(post)
    too_many = [answer for answer in answers if answer.status_code == 429]
    assert too_many, [answer.status_code for answer in answers]
    assert too_many[0].headers["retry-after"] == "1"
    error = too_many[0].json()["error"]
    assert error["message"].startswith("rate limit exceeded: 3 calls a second for tool count_a")
    assert 0 < error["data"]["retryAfter"] <= 1 / 3 + 0.01


async def test_a_call_over_a_concurrency_limit_is_an_error_with_a_retry_hint(team: Team) -> None:
    """One sleep at a time: of two at once, one is refused at once with isError."""
    ops = await team.token(OPS)
    results: list[types.CallToolResult] = []
    with anyio.fail_after(30):
        async with connected(team.url, ops, "legacy") as session:

            async def call() -> None:
                results.append(await session.call_tool("sleep", {"seconds": 3}))

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                group.start_soon(call)
    refused = [result for result in results if result.is_error]
    assert len(refused) == 1, results
    assert refused[0].content[0].text == (  # type: ignore[union-attr]
        "concurrency limit exceeded: 1 call at once for tool sleep, each client;"
        " retry when one has finished"
    )
    assert refused[0].meta == {"argentic/retryAfter": 1.0}


async def test_mcp_views_explains_a_callers_view_of_the_live_fleet(
    mosquitto: Mosquitto, team_prefix: str, team_tools: ToolProcess, tmp_path: pathlib.Path
) -> None:
    views = tmp_path / "views.toml"
    views.write_text(VIEWS, encoding="utf-8")
    done = await anyio.run_process(
        [
            sys.executable,
            "-m",
            "argentic_tools",
            "mcp",
            "views",
            "--broker",
            mosquitto.url,
            "--topic-prefix",
            team_prefix,
            "--views",
            str(views),
            "--explain",
            "reports-bot",
            "--scope",
            "reports",
        ],
        cwd=ROOT,
        env=child_env(),
    )
    lines = done.stdout.decode().splitlines()
    assert "+ report_sales  (allowed by reports (report_*))" in lines
    assert "- ops_restart  (no rule allows it)" in lines


class ListChanged:
    """Counts the tools/list_changed a client hears (on its connection or its subscription)."""

    def __init__(self) -> None:
        self.count = 0
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.note()

    def note(self) -> None:
        self.count += 1
        self._arrived.set()
        self._arrived = anyio.Event()

    async def reach(self, count: int) -> None:
        with anyio.fail_after(30):
            while self.count < count:
                await self._arrived.wait()

    async def listen(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hear changes on a 2026-07-28 subscription."""
        async with client.listen(tools_list_changed=True) as changes:
            task_status.started()
            async for _ in changes:
                self.note()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_list_changed_reaches_only_the_clients_whose_view_changed(
    team: Team, mosquitto: Mosquitto, team_prefix: str, mode: str
) -> None:
    """A new ops tool tells ops-bot, not reports-bot; a new report tool tells reports-bot."""
    reports_heard, ops_heard = ListChanged(), ListChanged()
    reports = await team.token(REPORTS)
    ops = await team.token(OPS)
    legacy = mode == "legacy"  # on the connection; 2026-07-28: on a subscription
    on_reports, on_ops = (reports_heard, ops_heard) if legacy else (None, None)
    async with (
        connected(team.url, reports, mode, message_handler=on_reports) as reports_client,
        connected(team.url, ops, mode, message_handler=on_ops) as ops_client,
        anyio.create_task_group() as group,
    ):
        if mode == "auto":
            assert reports_client.protocol_version == "2026-07-28"
            await group.start(reports_heard.listen, reports_client)
            await group.start(ops_heard.listen, ops_client)
        await reports_client.list_tools()
        await ops_client.list_tools()
        module = "tests.support.team_tools"
        async with ToolProcess(module, mosquitto.url, team_prefix, "--names", f"ops_new_{mode}"):
            await ops_heard.reach(1)
            assert f"ops_new_{mode}" in [t.name for t in (await ops_client.list_tools()).tools]
            report = f"report_new_{mode}"
            async with ToolProcess(module, mosquitto.url, team_prefix, "--names", report):
                await reports_heard.reach(1)
                listed = [t.name for t in (await reports_client.list_tools()).tools]
                assert report in listed
                assert f"ops_new_{mode}" not in listed
                # Both changes have been announced: reports-bot heard only the one it sees.
                assert reports_heard.count == 1
                await ops_heard.reach(1)
                assert ops_heard.count == 1  # report tools are denied to ops
        group.cancel_scope.cancel()


async def test_the_token_goes_no_further_than_the_gateway(
    team: Team, mosquitto: Mosquitto, team_prefix: str, tmp_path: pathlib.Path
) -> None:
    """No part of the bearer token on the bus (a spy on '#'), in a bridged server's
    environment or requests; the tool sees the token's subject as context.user_id."""
    record = tmp_path / "spy.jsonl"
    token = await team.token(OPS)
    seen: list[bytes] = []
    spy_ready = anyio.Event()

    async def spy() -> None:
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as client:
            await client.subscribe("#")
            spy_ready.set()
            async for message in client.messages:
                seen.append(str(message.topic).encode() + b" " + bytes(message.payload))

    spy_command = [sys.executable, "-m", "tests.support.spy_mcp_server", str(record)]
    module = "tests.support.team_tools"
    printer = ToolProcess(module, mosquitto.url, team_prefix, "--names", "ops_print")
    heard = ListChanged()
    async with anyio.create_task_group() as group:
        group.start_soon(spy)
        with anyio.fail_after(10):
            await spy_ready.wait()
        async with connected(team.url, token, "legacy", message_handler=heard) as client:
            await client.list_tools()
            async with bridged(mosquitto.url, team_prefix, spy_command), printer:
                with anyio.fail_after(30):
                    while True:  # until the gateway lists both
                        before = heard.count
                        listed = {t.name for t in (await client.list_tools()).tools}
                        if {"peek", "ops_print"} <= listed:
                            break
                        await heard.reach(before + 1)
                    assert (await client.call_tool("peek", {"note": "hi"})).content
                    printed = await client.call_tool("ops_print", {})
                assert printed.structured_content == {"tool": "ops_print", "user_id": "ops-bot"}
                await printer.stop()
                assert printer.process is not None and printer.process.stdout is not None
                assert b"ops_print user_id=ops-bot" in printer.process.stdout.read()
        group.cancel_scope.cancel()
    assert any(b"ops-bot" in message for message in seen)  # the spy saw the call
    _, payload, signature = token.split(".")
    for part in (token, payload, signature, payload[:24], signature[:24]):
        assert not any(part.encode() in message for message in seen)
    peeked = record.read_text(encoding="utf-8")
    assert "peeked" not in peeked and '"note": "hi"' in peeked
    for part in (token, payload, signature, payload[:24], signature[:24]):
        assert part not in peeked


KEY_VIEWS = """
[[view]]
subjects = ["ci-*"]
allow = ["echo", "whoami"]
"""


async def test_api_keys_work_and_a_revoked_key_is_refused_at_once(
    mosquitto: Mosquitto, team_prefix: str, test_tools: ToolProcess, tmp_path: pathlib.Path
) -> None:
    """--auth keys FILE: keys made by `mcp keys`, stored hashed; the file is read again on
    change; every call is in the --audit trail with its subject."""
    keys = tmp_path / "keys.toml"
    made = {}
    for subject in ("ci-bot", "ci-other"):
        done = await anyio.run_process(
            [
                sys.executable,
                "-m",
                "argentic_tools",
                "mcp",
                "keys",
                "--file",
                str(keys),
                "--subject",
                subject,
                "--scope",
                "mcp",
            ],
            cwd=ROOT,
            env=child_env(),
        )
        made[subject] = done.stdout.decode().strip()
    stored = keys.read_text(encoding="utf-8")
    assert (
        made["ci-bot"] not in stored
        and hashlib.sha256(made["ci-bot"].encode()).hexdigest() in stored
    )
    views = tmp_path / "views.toml"
    views.write_text(KEY_VIEWS, encoding="utf-8")
    audit = tmp_path / "audit.jsonl"
    port = free_port()
    options = ["--http", f"127.0.0.1:{port}", "--auth", "keys", str(keys), "--scope", "mcp"]
    options += ["--views", str(views), "--audit", str(audit)]
    async with http_gateway(mosquitto.url, team_prefix, *options) as (url, _):
        missing = await initialize(url, None)
        assert missing.status_code == 401
        assert "resource_metadata" not in challenge(missing)  # keys: no server to discover
        assert (await initialize(url, "atk_made-up")).status_code == 401
        answers: list[httpx2.Response] = []
        with anyio.fail_after(30):
            async with connected(url, made["ci-bot"], "legacy", answers) as client:
                assert sorted(t.name for t in (await client.list_tools()).tools) == [
                    "echo",
                    "whoami",
                ]
                result = await client.call_tool("whoami", {})
                assert result.structured_content is not None
                assert result.structured_content["user_id"] == "ci-bot"
                # Revoke ci-bot: its next request is refused, ci-other's still served.
                keys.write_text(
                    "\n".join(block for block in stored.split("\n\n") if "ci-other" in block),
                    encoding="utf-8",
                )
                answers.clear()
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("echo", {"message": "again"})
                # Refused by the gateway for its token, not failed in the tool or the bus.
                assert refused.value.error.message == "Server returned an error response"
                assert [answer.status_code for answer in answers] == [401]
                assert challenge(answers[0])["error"] == "invalid_token"
        assert (await initialize(url, made["ci-bot"])).status_code == 401
        assert (await initialize(url, made["ci-other"])).status_code == 200
        with anyio.fail_after(15):
            while not audit.exists() or "whoami" not in audit.read_text(encoding="utf-8"):
                await anyio.sleep(0.05)
    entries = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [(e["tool_name"], e["user_id"], e["status"]) for e in entries] == [
        ("whoami", "ci-bot", "success")
    ]
    assert made["ci-bot"] not in audit.read_text(encoding="utf-8")


def signing_key(kid: str) -> dict[str, Any]:
    """A new RSA private key as a JWK with key id ``kid``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key))
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


SCOPES = "mcp reports"


def keyset(*keys: dict[str, Any]) -> dict[str, Any]:
    return {"keys": list(keys)}


async def test_a_rotated_signing_key_is_fetched_once_and_made_up_key_ids_cost_nothing() -> None:
    """The verifier finds the JWKS through the issuer's metadata and caches it; a token
    signed with a key it does not know fetches it again, at most once per interval."""
    resource = "http://127.0.0.1:9/mcp"
    port = free_port()
    first, second = signing_key("first"), signing_key("second")
    verifier = JwtVerifier(f"http://127.0.0.1:{port}", resource, refetch_seconds=0)
    async with oidc_provider(resource, SCOPES, [REPORTS], port=port, jwks=keyset(first)) as issuer:
        old = await client_token(issuer, REPORTS, scope="mcp")
        access = await verifier.verify_token(old)
        assert access is not None and access.subject == "reports-bot"
        assert access.scopes == ["mcp"]  # what the resource allows of the client's scopes
        assert await verifier.verify_token(old) is not None
        assert verifier.fetches == 1
    async with oidc_provider(resource, SCOPES, [REPORTS], port=port, jwks=keyset(second)) as issuer:
        new = await client_token(issuer, REPORTS, scope="mcp")
        assert (await verifier.verify_token(new)) is not None  # rotated: fetched again
        assert verifier.fetches == 2
        assert await verifier.verify_token(old) is None  # its key is gone from the JWKS
        careful = JwtVerifier(issuer, resource)  # the default: one refetch per 30 s
        assert await careful.verify_token(new) is not None
        header = base64.urlsafe_b64encode(b'{"alg":"RS256","kid":"made-up"}').rstrip(b"=").decode()
        for _ in range(20):
            assert await careful.verify_token(f"{header}.e30.c2ln") is None
        assert careful.fetches == 1
    # The token's own digest is all the access keeps of it.
    assert access.token == "sha256:" + hashlib.sha256(old.encode()).hexdigest()


@pytest.fixture(scope="module")
def task_tools(mosquitto: Mosquitto, team_prefix: str) -> Iterator[ToolProcess]:
    with serving("tests.support.task_tools", mosquitto.url, team_prefix, TASK_TOOLS) as process:
        yield process


async def test_a_task_belongs_to_the_token_that_made_it(
    mosquitto: Mosquitto, team_prefix: str, task_tools: ToolProcess, tmp_path: pathlib.Path
) -> None:
    """MCP Tasks behind --auth: two callers sending the same client name are still two
    owners (the task is bound to the token's principal, not to what the client says)."""
    keys = tmp_path / "keys.toml"
    alice_key, bob_key = new_api_key(), new_api_key()
    keys.write_text(key_entry(alice_key, "alice") + key_entry(bob_key, "bob"), encoding="utf-8")
    options = ["--http", f"127.0.0.1:{free_port()}", "--auth", "keys", str(keys)]
    async with (
        http_gateway(mosquitto.url, team_prefix, "--wait", "5", *options) as (url, _),
        httpx.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {alice_key}"}) as a,
        httpx.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {bob_key}"}) as b,
    ):
        alice, bob = RawClient(a, url, "same-name"), RawClient(b, url, "same-name")
        task_id = (await alice.call("crunch", {"seconds": 30, "label": "alice's"}))["taskId"]
        with pytest.raises(RpcError) as refused:
            await bob.get(task_id)
        assert refused.value.code == types.INVALID_PARAMS
        assert (await alice.get(task_id))["status"] == "working"
        await alice.request("tasks/cancel", {"taskId": task_id})
        assert (await alice.until(task_id, "completed", "failed", "cancelled"))["status"] == (
            "cancelled"
        )
