"""Whether a resource answers: one log line when it stops and one when it is back; Repairs.

A failing Azure would otherwise log every turn a household speaks. Counters (stats.py)
still count every failure; the log says when the trouble starts and ends. A refused key
and an unknown deployment do not mend themselves, so each becomes a Repairs issue with
the steps to fix it, removed once the fix is in (a request succeeds, or the setting
changed).
"""

from dataclasses import dataclass, field
import logging

from homeassistant.config_entries import ConfigEntry, ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from ..const import CONF_DEPLOYMENT, DOMAIN, LOGGER
from .errors import ErrorKind

# Failures that say the resource (or this agent's deployment) cannot answer at all, as
# opposed to one request it would not answer (content filter, a garbled tool call).
UNAVAILABLE_KINDS = frozenset(
    {
        ErrorKind.INVALID_AUTH,
        ErrorKind.NOT_FOUND,
        ErrorKind.RATE_LIMITED,
        ErrorKind.TIMEOUT,
        ErrorKind.CANNOT_CONNECT,
        ErrorKind.SERVER_ERROR,
        ErrorKind.STREAM_INTERRUPTED,
    }
)
# Of those, the failures that belong to one agent's deployment, not to the resource: with
# two agents, one whose deployment is missing says nothing about the other.
DEPLOYMENT_KINDS = frozenset({ErrorKind.NOT_FOUND, ErrorKind.RATE_LIMITED})
ISSUE_API_KEY_REFUSED = "api_key_refused"
ISSUE_UNKNOWN_DEPLOYMENT = "unknown_deployment"


@dataclass
class ResourceHealth:
    """What is failing now, as last reported in the log: the resource, or deployments.

    `failing_deployments` holds the subentry ids of agents whose own deployment fails.
    """

    failing: bool = False
    failing_deployments: set[str] = field(default_factory=set)

    def start_failing(self, subentry: ConfigSubentry, kind: ErrorKind) -> bool:
        """Mark what this failure shows as failing; whether that is news."""
        if kind in DEPLOYMENT_KINDS:
            if subentry.subentry_id in self.failing_deployments:
                return False
            self.failing_deployments.add(subentry.subentry_id)
            return True
        if self.failing:
            return False
        self.failing = True
        return True


def api_key_issue_id(entry: ConfigEntry) -> str:
    """The Repairs issue of an entry whose key is refused."""
    return f"{ISSUE_API_KEY_REFUSED}_{entry.entry_id}"


def deployment_issue_id(subentry: ConfigSubentry) -> str:
    """The Repairs issue of an agent (or AI task) whose deployment does not exist."""
    return f"{ISSUE_UNKNOWN_DEPLOYMENT}_{subentry.subentry_id}"


@callback
def async_request_failed(
    hass: HomeAssistant,
    entry: ConfigEntry,
    health: ResourceHealth,
    subentry: ConfigSubentry,
    who: str | None,
    kind: ErrorKind,
    err: BaseException,
) -> None:
    """Log the failure once while the resource stays down; raise what a user must fix.

    The traceback goes with the log line only when debug logging is on.
    """
    details = err if LOGGER.isEnabledFor(logging.DEBUG) else None
    if kind not in UNAVAILABLE_KINDS:
        LOGGER.error(
            "Azure OpenAI request for %s failed (%s): %s",
            who,
            kind.value,
            type(err).__name__,
            exc_info=details,
        )
    elif health.start_failing(subentry, kind):
        LOGGER.error(
            "Azure OpenAI request for %s failed (%s): %s. %s is unavailable; further "
            "failures are logged at debug level until a request succeeds",
            who,
            kind.value,
            type(err).__name__,
            entry.title
            if kind not in DEPLOYMENT_KINDS
            else f"Deployment {subentry.data.get(CONF_DEPLOYMENT)} of {entry.title}",
            exc_info=details,
        )
    else:
        LOGGER.debug(
            "Azure OpenAI request for %s failed again (%s): %s",
            who,
            kind.value,
            type(err).__name__,
            exc_info=details,
        )
    if kind is ErrorKind.INVALID_AUTH:
        ir.async_create_issue(
            hass,
            DOMAIN,
            api_key_issue_id(entry),
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key=ISSUE_API_KEY_REFUSED,
            translation_placeholders={"title": entry.title},
        )
    elif kind is ErrorKind.NOT_FOUND:
        ir.async_create_issue(
            hass,
            DOMAIN,
            deployment_issue_id(subentry),
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key=ISSUE_UNKNOWN_DEPLOYMENT,
            translation_placeholders={
                "title": entry.title,
                "agent": subentry.title,
                "deployment": str(subentry.data.get(CONF_DEPLOYMENT)),
            },
        )


@callback
def async_request_succeeded(
    hass: HomeAssistant, entry: ConfigEntry, health: ResourceHealth, subentry: ConfigSubentry
) -> None:
    """The resource and this deployment answer: say so once; the issues this resolves go.

    Another agent's failing deployment stays failing: this answer proves nothing of it.
    """
    if health.failing:
        health.failing = False
        LOGGER.info("%s is answering again", entry.title)
    if subentry.subentry_id in health.failing_deployments:
        health.failing_deployments.discard(subentry.subentry_id)
        LOGGER.info(
            "Deployment %s of %s is answering again",
            subentry.data.get(CONF_DEPLOYMENT),
            entry.title,
        )
    ir.async_delete_issue(hass, DOMAIN, api_key_issue_id(entry))
    ir.async_delete_issue(hass, DOMAIN, deployment_issue_id(subentry))


@callback
def async_clear_resolved_issues(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """At set-up: the key works (set-up proved it); agents removed or renamed are fixed.

    An agent whose deployment was changed since its issue was raised gets another try
    before anyone is told again. An agent deleted (from this entry or any other) leaves
    nothing to repair.
    """
    ir.async_delete_issue(hass, DOMAIN, api_key_issue_id(entry))
    registry = ir.async_get(hass)
    existing = {
        deployment_issue_id(subentry)
        for other in hass.config_entries.async_entries(DOMAIN)
        for subentry in other.subentries.values()
    }
    prefix = f"{ISSUE_UNKNOWN_DEPLOYMENT}_"
    for domain, issue_id in list(registry.issues):
        if domain == DOMAIN and issue_id.startswith(prefix) and issue_id not in existing:
            ir.async_delete_issue(hass, DOMAIN, issue_id)
    for subentry in entry.subentries.values():
        issue_id = deployment_issue_id(subentry)
        issue = registry.async_get_issue(DOMAIN, issue_id)
        if issue is None:
            continue
        raised_for = (issue.translation_placeholders or {}).get("deployment")
        if raised_for != str(subentry.data.get(CONF_DEPLOYMENT)):
            ir.async_delete_issue(hass, DOMAIN, issue_id)


@callback
def async_remove_issues(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """The entry is deleted: nothing of it is left to repair."""
    ir.async_delete_issue(hass, DOMAIN, api_key_issue_id(entry))
    for subentry in entry.subentries.values():
        ir.async_delete_issue(hass, DOMAIN, deployment_issue_id(subentry))
