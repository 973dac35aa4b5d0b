"""Make a running Home Assistant ready to chat: a user, a token, the demo home, an agent.

Every step first looks at what is there, so a second run reuses the user, the token, the
entry and the areas, and creates nothing twice.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import time
from typing import Any

from .client import HomeAssistantClient, HomeAssistantError

DOMAIN = "azure_openai_memory"
DEV_NAME = "Developer"
DEV_USER = "dev"
DEV_PASSWORD = "dev-password"
TOKEN_CLIENT_NAME = "scripts/develop"
TOKEN_FILE = ".dev-token"
STATE_FILE = ".dev-home.json"
STAND_IN_KEY = "stub-key-0123456789"

# The demo entities of config/configuration.yaml, by unique id, and the area each lives in.
DEMO_AREAS = {
    "dev_kitchen_light": "Kitchen",
    "dev_coffee_maker": "Kitchen",
    "dev_living_room_lamp": "Living room",
    "dev_heater": "Living room",
    "dev_living_room_thermostat": "Living room",
    "dev_living_room_temperature": "Living room",
    "dev_bedroom_light": "Bedroom",
    "dev_front_door": "Hallway",
    "dev_outdoor_humidity": "Garden",
}


@dataclass(frozen=True)
class ResourceSettings:
    """What the config flow's first form asks for."""

    endpoint: str
    api_key: str
    deployment: str = "gpt-4o-mini"
    api_style: str = "v1"
    api_version: str = "2024-10-21"

    @property
    def is_stand_in(self) -> bool:
        return self.api_key == STAND_IN_KEY

    @classmethod
    def from_environment(cls, stand_in: str) -> "ResourceSettings":
        """Real Azure when AZURE_OPENAI_ENDPOINT, _API_KEY and _DEPLOYMENT are set."""
        endpoint = os.environ.get("AZURE_OPENAI_ENDPOINT", "")
        key = os.environ.get("AZURE_OPENAI_API_KEY", "")
        deployment = os.environ.get("AZURE_OPENAI_DEPLOYMENT", "")
        if endpoint and key and deployment:
            return cls(
                endpoint=endpoint,
                api_key=key,
                deployment=deployment,
                api_style=os.environ.get("AZURE_OPENAI_API_STYLE", "v1"),
                api_version=os.environ.get("AZURE_OPENAI_API_VERSION", "2024-10-21"),
            )
        return cls(endpoint=stand_in, api_key=STAND_IN_KEY)


@dataclass
class DevHome:
    """What scripts/develop prints and scripts/chat needs."""

    base_url: str
    token: str
    entry_id: str
    agent_id: str
    user: str = DEV_USER
    password: str = DEV_PASSWORD
    created: list[str] = field(default_factory=list)

    @property
    def client(self) -> HomeAssistantClient:
        return HomeAssistantClient(self.base_url, self.token)


def wait_until_running(client: HomeAssistantClient, timeout: float = 180) -> None:
    """Home Assistant answers HTTP before every integration is set up: wait for RUNNING."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if client.get("/api/config", timeout=5).get("state") == "RUNNING":
                return
        except (HomeAssistantError, OSError):
            pass
        if time.monotonic() > deadline:
            raise HomeAssistantError(f"Home Assistant at {client.base_url} is not running")
        time.sleep(0.3)


def wait_until_answering(client: HomeAssistantClient, timeout: float = 300) -> None:
    """The first start on a fresh machine installs and compiles for minutes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            # Any answer will do; /api/ without a token would log a failed login.
            client.get("/manifest.json", auth=False, timeout=5)
            return
        except HomeAssistantError:
            return  # an HTTP error is an answer too
        except OSError:
            if time.monotonic() > deadline:
                raise HomeAssistantError(
                    f"Home Assistant at {client.base_url} did not answer in {timeout:.0f} s"
                ) from None
        time.sleep(0.3)


def prepare(
    base_url: str,
    config_dir: Path,
    resource: ResourceSettings,
    say: Callable[[str], None] = lambda _: None,
) -> DevHome:
    """Everything item 1 of scripts/develop promises, idempotent."""
    client = HomeAssistantClient(base_url)
    created: list[str] = []
    wait_until_answering(client)
    client.token = _sign_in(client, config_dir, created)
    wait_until_running(client)
    _keep_http_settings(client, created)
    _arrange_demo_home(client, created)
    entry_id = _ensure_entry(client, config_dir, resource, created)
    agent_id = _wait_for_agent(client, entry_id)
    _make_preferred_agent(client, agent_id, created)
    _write_state(config_dir, agent_id=agent_id)
    for line in created:
        say(line)
    return DevHome(base_url, client.token, entry_id, agent_id, created=created)


def read_token(config_dir: Path) -> str:
    """The long-lived token scripts/develop wrote, or "" when there is none."""
    path = config_dir / TOKEN_FILE
    return path.read_text().strip() if path.exists() else ""


def read_agent(config_dir: Path) -> str:
    """The agent scripts/develop made Assist's, or "" when there is none."""
    return str(_read_state(config_dir).get("agent_id", ""))


def read_conversation(config_dir: Path) -> str:
    """The conversation scripts/chat is in, or "" to start one."""
    return str(_read_state(config_dir).get("conversation_id", ""))


def write_conversation(config_dir: Path, conversation_id: str) -> None:
    """Remember the conversation so the next scripts/chat goes on with it."""
    _write_state(config_dir, conversation_id=conversation_id)


# -- user and token --------------------------------------------------------------------


def _sign_in(client: HomeAssistantClient, config_dir: Path, created: list[str]) -> str:
    """The saved long-lived token while it works and onboarding is over; else a new one."""
    steps = _onboarding_steps(client)
    if (token := read_token(config_dir)) and all(steps.values()):
        client.token = token
        try:
            client.get("/api/")
            return token
        except HomeAssistantError as err:
            if err.status != 401:
                raise
    client_id = client.base_url + "/"
    # Once onboarding is over its views are gone (steps is empty): log in then.
    if "user" in steps and not steps["user"]:
        code = client.post(
            "/api/onboarding/users",
            {
                "client_id": client_id,
                "name": DEV_NAME,
                "username": DEV_USER,
                "password": DEV_PASSWORD,
                "language": "en",
            },
            auth=False,
        )["auth_code"]
        created.append(f"created the user {DEV_USER!r} through onboarding")
    else:
        code = _log_in(client, client_id)
    tokens = client.post(
        "/auth/token",
        {"grant_type": "authorization_code", "code": code, "client_id": client_id},
        auth=False,
        form=True,
    )
    # The last onboarding step wants a login's token, not a long-lived one.
    client.token = tokens["access_token"]
    _finish_onboarding(client, steps, created)
    # A lost token file leaves its token behind: replace it rather than pile them up.
    (existing,) = client.ws({"type": "auth/refresh_tokens"})
    stale = [
        {"type": "auth/delete_refresh_token", "refresh_token_id": t["id"]}
        for t in existing
        if t.get("client_name") == TOKEN_CLIENT_NAME
    ]
    if stale:
        client.ws(*stale)
    (token,) = client.ws(
        {"type": "auth/long_lived_access_token", "client_name": TOKEN_CLIENT_NAME, "lifespan": 3650}
    )
    path = config_dir / TOKEN_FILE
    # Never readable by others, not even between creating and restricting the file.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(token + "\n")
    created.append(f"wrote a long-lived token to {path}")
    return str(token)


def _log_in(client: HomeAssistantClient, client_id: str) -> str:
    flow = client.post(
        "/auth/login_flow",
        {"client_id": client_id, "handler": ["homeassistant", None], "redirect_uri": client_id},
        auth=False,
    )
    result = client.post(
        f"/auth/login_flow/{flow['flow_id']}",
        {"client_id": client_id, "username": DEV_USER, "password": DEV_PASSWORD},
        auth=False,
    )
    if result.get("type") != "create_entry":
        raise HomeAssistantError(
            f"Onboarding was done by someone else and {DEV_USER!r} cannot log in: "
            f"remove {TOKEN_FILE} and config/.storage to start again ({result.get('errors')})"
        )
    return str(result["result"])


def _onboarding_steps(client: HomeAssistantClient) -> dict[str, bool]:
    """Each step and whether it is done; none once onboarding is over (no views then)."""
    try:
        steps = client.get("/api/onboarding", auth=False)
    except HomeAssistantError as err:
        if err.status == 404:
            return {}
        raise
    return {s["step"]: bool(s["done"]) for s in steps}


def _finish_onboarding(
    client: HomeAssistantClient, steps: dict[str, bool], created: list[str]
) -> None:
    client_id = client.base_url + "/"
    bodies = {
        "core_config": {},
        "analytics": {},
        "integration": {"client_id": client_id, "redirect_uri": client_id},
    }
    for step, body in bodies.items():
        if step in steps and not steps[step]:
            client.post(f"/api/onboarding/{step}", body)
            created.append(f"finished the onboarding step {step}")


# -- the demo home ---------------------------------------------------------------------


def _keep_http_settings(client: HomeAssistantClient, created: list[str]) -> None:
    """Confirm the HTTP settings from configuration.yaml (the port), as a person would.

    Home Assistant 2026.10 moves `http:` from YAML into its storage as a trial: it asks to
    confirm it in a dialog, and reverts it (restarting on port 8123) five minutes later
    unless confirmed. Earlier versions have no such command and keep the YAML as it is.
    """
    try:
        (config,) = client.ws({"type": "http/config"})
    except HomeAssistantError as err:
        if err.error.get("code") == "unknown_command":
            return
        raise
    if config["pending"] is not None and config["revert_at"] is not None:
        client.ws({"type": "http/config/promote"})
        created.append("the HTTP settings of configuration.yaml confirmed (Home Assistant 2026.10)")


def _arrange_demo_home(client: HomeAssistantClient, created: list[str]) -> None:
    """Areas for the demo entities, and every one of them exposed to Assist."""
    areas, entities = client.ws(
        {"type": "config/area_registry/list"}, {"type": "config/entity_registry/list"}
    )
    # Onboarding made "Living Room", "Kitchen" and "Bedroom"; names compare as HA does.
    area_ids = {_area_key(a["name"]): a["area_id"] for a in areas}
    for name in sorted(set(DEMO_AREAS.values())):
        if _area_key(name) not in area_ids:
            (area,) = client.ws({"type": "config/area_registry/create", "name": name})
            area_ids[_area_key(name)] = area["area_id"]
            created.append(f"created the area {name}")
    demo = {e["unique_id"]: e for e in entities if e["unique_id"] in DEMO_AREAS}
    missing = sorted(set(DEMO_AREAS) - set(demo))
    if missing:
        raise HomeAssistantError(f"demo entities missing from config/configuration.yaml: {missing}")
    updates = [
        {"type": "config/entity_registry/update", "entity_id": e["entity_id"], "area_id": want}
        for unique_id, e in demo.items()
        if e["area_id"] != (want := area_ids[_area_key(DEMO_AREAS[unique_id])])
    ]
    if updates:
        client.ws(*updates)
        created.append(f"put {len(updates)} demo entities in their areas")
    client.ws(
        {
            "type": "homeassistant/expose_entity",
            "assistants": ["conversation"],
            "entity_ids": sorted(e["entity_id"] for e in demo.values()),
            "should_expose": True,
        }
    )


def _area_key(name: str) -> str:
    return "".join(name.casefold().split())


# -- the integration -------------------------------------------------------------------


def _read_state(config_dir: Path) -> dict[str, Any]:
    path = config_dir / STATE_FILE
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def _write_state(config_dir: Path, **values: Any) -> None:
    (config_dir / STATE_FILE).write_text(json.dumps({**_read_state(config_dir), **values}))


def _entries(client: HomeAssistantClient) -> dict[str, dict[str, Any]]:
    return {
        e["entry_id"]: e for e in client.get(f"/api/config/config_entries/entry?domain={DOMAIN}")
    }


def _ensure_entry(
    client: HomeAssistantClient, config_dir: Path, resource: ResourceSettings, created: list[str]
) -> str:
    """The entry for this resource: the one made before, else one made through the flow."""
    entries = _entries(client)
    known = _read_state(config_dir).get("entries", {}).get(resource.endpoint)
    if known in entries:
        return str(known)
    flow = client.post("/api/config/config_entries/flow", {"handler": DOMAIN})
    form = {
        "endpoint": resource.endpoint,
        "api_key": resource.api_key,
        "api_style": resource.api_style,
        "deployment": resource.deployment,
    }
    if resource.api_style == "deployment":
        form["api_version"] = resource.api_version
    result = client.post(f"/api/config/config_entries/flow/{flow['flow_id']}", form)
    if result["type"] == "abort" and result["reason"] == "already_configured" and entries:
        entry_id = str(next(iter(entries)))
    elif result["type"] == "create_entry":
        entry_id = str(result["result"]["entry_id"])
        created.append(f"added Azure OpenAI Memory for {resource.endpoint}")
    else:
        raise HomeAssistantError(
            f"the config flow refused {resource.endpoint}: {result.get('errors') or result}"
        )
    _write_state(
        config_dir,
        entries={**_read_state(config_dir).get("entries", {}), resource.endpoint: entry_id},
    )
    return entry_id


def agents_of(client: HomeAssistantClient, entry_id: str) -> list[str]:
    """The entry's conversation agents, oldest first."""
    (entities,) = client.ws({"type": "config/entity_registry/list"})
    agents = sorted(
        (
            e
            for e in entities
            if e["config_entry_id"] == entry_id and e["entity_id"].startswith("conversation.")
        ),
        key=lambda e: e["created_at"],
    )
    return [str(e["entity_id"]) for e in agents]


def _wait_for_agent(client: HomeAssistantClient, entry_id: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        state = _entries(client)[entry_id]["state"]
        if state == "loaded" and (agents := agents_of(client, entry_id)):
            return agents[0]
        if time.monotonic() > deadline:
            raise HomeAssistantError(f"the Azure OpenAI Memory entry did not load ({state})")
        time.sleep(0.3)


def _make_preferred_agent(client: HomeAssistantClient, agent_id: str, created: list[str]) -> None:
    (listing,) = client.ws({"type": "assist_pipeline/pipeline/list"})
    preferred = next(p for p in listing["pipelines"] if p["id"] == listing["preferred_pipeline"])
    if preferred["conversation_engine"] == agent_id:
        return
    pipeline = {k: v for k, v in preferred.items() if k != "id"}
    client.ws(
        {
            "type": "assist_pipeline/pipeline/update",
            "pipeline_id": preferred["id"],
            **pipeline,
            "conversation_engine": agent_id,
        }
    )
    created.append(f"made {agent_id} the agent of the Assist pipeline {preferred['name']!r}")
