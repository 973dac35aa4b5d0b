"""Turn openai SDK errors into one small vocabulary the rest of the integration speaks."""

from enum import StrEnum
from typing import Any

import httpx
import openai

# The HTTP library the SDK itself speaks: httpx up to openai 2.x, httpx2 from openai 3.0 on
# (whose errors are its own classes). Both are checked: the client may be either.
_HTTP_LIBRARIES: list[Any] = [httpx]
try:
    import httpx2
except ImportError:  # openai 1.x and 2.x
    pass
else:
    _HTTP_LIBRARIES.append(httpx2)
_TIMEOUTS: tuple[type[BaseException], ...] = tuple(lib.TimeoutException for lib in _HTTP_LIBRARIES)
_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = tuple(
    lib.TransportError for lib in _HTTP_LIBRARIES
)
_HTTP_ERRORS: tuple[type[BaseException], ...] = tuple(lib.HTTPError for lib in _HTTP_LIBRARIES)


class ErrorKind(StrEnum):
    """What went wrong, in the words of the config flow and the spoken answers."""

    INVALID_AUTH = "invalid_auth"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    TIMEOUT = "timeout"
    CANNOT_CONNECT = "cannot_connect"
    CONTENT_FILTER = "content_filter"
    SERVER_ERROR = "server_error"
    BAD_REQUEST = "bad_request"
    STREAM_INTERRUPTED = "stream_interrupted"
    MALFORMED_TOOL_ARGUMENTS = "malformed_tool_arguments"
    UNKNOWN = "unknown"


class ContentFiltered(Exception):
    """Azure's content filter stopped the answer mid-way (finish_reason content_filter)."""


class MalformedToolArguments(Exception):
    """The model called a tool with arguments that are not a JSON object."""


class ResponseFailed(Exception):
    """The Responses API reported a failed or incomplete response."""


_CONTENT_FILTER_CODES = {"content_filter", "content_policy_violation"}


def classify_error(err: BaseException) -> ErrorKind:
    """Return the kind of an error raised while talking to the API."""
    if isinstance(err, ContentFiltered):
        return ErrorKind.CONTENT_FILTER
    if isinstance(err, MalformedToolArguments):
        return ErrorKind.MALFORMED_TOOL_ARGUMENTS
    if isinstance(err, ResponseFailed):
        return ErrorKind.SERVER_ERROR
    if isinstance(err, openai.APITimeoutError):
        return ErrorKind.TIMEOUT
    if isinstance(err, openai.APIConnectionError):
        return ErrorKind.CANNOT_CONNECT
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
        return ErrorKind.INVALID_AUTH
    if isinstance(err, openai.NotFoundError):
        return ErrorKind.NOT_FOUND
    if isinstance(err, openai.RateLimitError):
        return ErrorKind.RATE_LIMITED
    if isinstance(err, openai.InternalServerError):
        return ErrorKind.SERVER_ERROR
    if isinstance(err, openai.APIError) and str(err.code) in _CONTENT_FILTER_CODES:
        return ErrorKind.CONTENT_FILTER
    if isinstance(err, openai.BadRequestError):
        return ErrorKind.BAD_REQUEST
    if isinstance(err, _TIMEOUTS):
        return ErrorKind.TIMEOUT
    if isinstance(err, _TRANSPORT_ERRORS):
        # Raised while iterating a stream whose connection dropped mid-way.
        return ErrorKind.STREAM_INTERRUPTED
    return ErrorKind.UNKNOWN


API_ERRORS: tuple[type[BaseException], ...] = (
    openai.OpenAIError,
    *_HTTP_ERRORS,
    ContentFiltered,
    MalformedToolArguments,
    ResponseFailed,
)
