"""What an entry (and its device, and so its sensors' entity ids) is called."""

from urllib.parse import urlsplit

TITLE_PREFIX = "Azure OpenAI"
# Host suffixes under which the first label is the Azure resource's name.
AZURE_HOST_SUFFIXES = (
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".services.ai.azure.com",
)


def resource_title(endpoint: str) -> str:
    """Name an Azure resource as the portal does: https://myres.openai.azure.com is myres.

    Any other server (OpenAI-compatible, or the stand-in on 127.0.0.1) is named by host,
    and port when the URL gives one, so two servers on one machine read apart.
    """
    parts = urlsplit(endpoint)
    host = parts.hostname or endpoint
    for suffix in AZURE_HOST_SUFFIXES:
        if host.endswith(suffix) and host != suffix.lstrip("."):
            return f"{TITLE_PREFIX} {host.removesuffix(suffix)}"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{TITLE_PREFIX} {host}"


def is_untouched_title(title: str, endpoint: str) -> bool:
    """The title is one this integration gave, never one the user typed.

    Before 0.2 an entry was titled after its host name; that, and today's title, may be
    replaced by the current one. A title the user chose is kept.
    """
    return title in (urlsplit(endpoint).hostname, resource_title(endpoint))
