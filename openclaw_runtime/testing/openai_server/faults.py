"""The server's error answers: OpenAI's error bodies, the refusal of a malformed request or an
unknown model, the refusals of key behaviours, and the
``Plan`` of each error-ish ``Fault`` kind (rate limits, overloads, server errors, context
overflows, injected statuses, hangs, cut streams)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .plans import ChatRequest, Completion, Plan
from .scripts import Fault, KeyBehavior

__all__ = [
    "error_body",
    "fault_plan",
    "key_refusal",
    "not_found",
    "overflow_body",
    "overloaded_response",
    "rate_limit_response",
    "request_error",
]


def error_body(
    message: str, error_type: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def rate_limit_response(fault: Fault, model: str) -> tuple[int, Any, dict[str, str]]:
    retry = fault.retry_after_s
    headers = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"}
    wait = ""
    if retry is not None:
        headers["retry-after"] = f"{retry:g}"
        headers["x-ratelimit-reset-requests"] = f"{retry:g}s"
        wait = f" Please try again in {retry:g}s."
    payload = (
        fault.body
        if fault.body is not None
        else error_body(
            f"Rate limit reached for requests per min (RPM) on {model}: Limit 60, Used 60, "
            f"Requested 1.{wait}",
            "requests",
            "rate_limit_exceeded",
        )
    )
    return fault.status or 429, payload, headers


def overloaded_response(fault: Fault) -> tuple[int, Any, dict[str, str]]:
    payload = (
        fault.body
        if fault.body is not None
        else error_body(
            "The server is overloaded with other requests. Please retry your request later.",
            "overloaded_error",
            "overloaded",
        )
    )
    return fault.status or 503, payload, {}


def overflow_body(window: int, tokens: int) -> dict[str, Any]:
    return error_body(
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )


def not_found(method: str, path: str) -> dict[str, Any]:
    return error_body(f"Invalid URL ({method} {path})", "invalid_request_error")


def key_refusal(
    behavior: KeyBehavior | None, *, any_key: bool, api_key: str | None, fingerprint: str | None
) -> tuple[str, int, Any, dict[str, str]] | None:
    """(outcome, status, body, headers) when the key's behaviour refuses the request
    (``behavior``: the key's, ``None`` for an unknown key; ``any_key``: unknown keys pass)."""
    if behavior is None and not any_key:
        if api_key is None:
            message = (
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            )
        else:
            message = f"Incorrect API key provided: {fingerprint}."
        return (
            "unauthorized",
            401,
            error_body(message, "invalid_request_error", "invalid_api_key"),
            {},
        )
    if behavior is None or behavior is KeyBehavior.OK:
        return None
    if behavior is KeyBehavior.INVALID:
        return (
            "unauthorized",
            401,
            error_body(
                f"Incorrect API key provided: {fingerprint}.",
                "invalid_request_error",
                "invalid_api_key",
            ),
            {},
        )
    if behavior is KeyBehavior.RATE_LIMITED:
        status, body, headers = rate_limit_response(Fault("rate_limit"), "this model")
        return "rate_limited", status, body, headers
    if behavior is KeyBehavior.BILLING:
        return (
            "billing",
            429,
            error_body(
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                "insufficient_quota",
            ),
            {},
        )
    status, body, headers = overloaded_response(Fault("overloaded"))
    return "overloaded", status, body, headers


def fault_plan(
    fault: Fault,
    model: str,
    window: int,
    estimated: int,
    stream: bool,
    include_usage: bool,
) -> Plan:
    """The plan of an error-ish fault (everything but delay / empty / reasoning_only)."""
    kind = fault.kind
    headers = dict(fault.headers or {})
    if kind == "rate_limit":
        status, payload, extra = rate_limit_response(fault, model)
        return Plan("error", -1, status, payload, {**extra, **headers})
    if kind == "overloaded":
        status, payload, extra = overloaded_response(fault)
        return Plan("error", -1, status, payload, {**extra, **headers})
    if kind == "server_error":
        payload = (
            fault.body
            if fault.body is not None
            else error_body(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
            )
        )
        return Plan("error", -1, fault.status or 500, payload, headers)
    if kind == "context_overflow":
        payload = (
            fault.body
            if fault.body is not None
            else overflow_body(window, max(estimated, window + 1))
        )
        return Plan("error", -1, fault.status or 400, payload, headers)
    if kind == "status":
        status = fault.status or 500
        payload = (
            fault.body
            if fault.body is not None
            else error_body(
                f"Injected HTTP {status} error.",
                "invalid_request_error" if status < 500 else "server_error",
            )
        )
        return Plan("error", -1, status, payload, headers)
    if kind == "hang":
        return Plan("hang", -1, stream=stream, before_headers=fault.before_headers)
    # cut_stream: the caller puts the brain's answer in, to be cut short
    return Plan(
        "completion",
        -1,
        completion=Completion(model),
        stream=stream,
        include_usage=include_usage,
    )


def request_error(
    request: ChatRequest, models: Mapping[str, int] | None
) -> tuple[str, int, dict[str, Any]] | None:
    """(outcome, status, body) when the body is malformed (400) or names a model not in
    ``models`` (404; ``None`` serves any model)."""
    model = request.model
    if not request.parsed:
        return (
            "bad_request",
            400,
            error_body(
                "We could not parse the JSON body of your request. (HINT: This likely "
                "means you aren't using your HTTP library correctly. The OpenAI API "
                "expects a JSON payload.)",
                "invalid_request_error",
            ),
        )
    if not isinstance(model, str) or not model:
        return (
            "bad_request",
            400,
            error_body(
                "You must provide a model parameter.",
                "invalid_request_error",
                "missing_required_parameter",
                "model",
            ),
        )
    if not isinstance(request.raw_messages, list) or not request.raw_messages:
        return (
            "bad_request",
            400,
            error_body(
                "Missing required parameter: 'messages'.",
                "invalid_request_error",
                "missing_required_parameter",
                "messages",
            ),
        )
    if models is not None and model not in models:
        return (
            "unknown_model",
            404,
            error_body(
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            ),
        )
    return None
