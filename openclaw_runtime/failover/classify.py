"""Why did a model call fail? OpenClaw's ``classifyFailoverSignal``: the procedure (spec §1.2).

``classify_failover_signal`` runs status inference, the TLS and HTML short-circuits, the
message and detail merge, structured codes, a provider owner's answer, then the status
mapping. Its parts live in their own modules:

* ``signals`` — a failure's facts from raw errors and assistant messages;
* ``api_errors`` — leading statuses, JSON error payloads, HTML/no-body shapes;
* ``message_rules`` — ``MESSAGE_RULES``, the ordered message classifier (§1.3);
* ``http_status`` — the status mapping (§1.4);
* ``owners`` — a provider plugin's dialect, which ``ProviderFailoverOwner`` extends here.

Provider-specific rules live in provider plugins as a ``ProviderFailoverOwner`` (their
structured codes, their message rules); core keeps the cross-provider rows. A plugin answers
the ``classify_failover`` hook with ``owner.classify(signal)``, which runs this same procedure
with its owner, exactly like OpenClaw consults a provider's ``classifyFailoverReason`` hook.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._json import untrusted_json_object
from .api_errors import (
    extract_leading_http_status,
    finite_status,
    infer_signal_status,
    is_html_error_response,
    is_transport_html_error_status,
    parse_api_error_info,
)
from .http_status import (
    classify_failover_classification_from_http_status,
    failover_reason_from_classification,
    plugin_classification,
    reason_classification,
)
from .matchers import (
    classify_core_failover_reason_from_error_type,
    classify_failover_reason_from_code,
    inspect_tls_certificate_error,
)
from .message_rules import (
    classify_details,
    classify_failover_classification_from_message,
    merge_message_and_detail_classification,
)
from .overflow import looks_like_provider_context_overflow_candidate
from .owners import ProviderFailoverDialect
from .reasons import FailoverClassification, FailoverReason, FailoverSignal
from .signals import coerce_signal

__all__ = [
    "ProviderFailoverOwner",
    "classify_failover_reason",
    "classify_failover_signal",
    "is_failover_error_message",
]


class ProviderFailoverOwner(ProviderFailoverDialect):
    """A provider plugin's failure dialect: the providers it owns and how it reads them.

    ``classify_failover_reason`` and ``matches_context_overflow_error`` mirror OpenClaw's
    provider hooks; their answer is authoritative over the tables (the status mapping still
    applies). ``message_rules`` run in the message classifier right after the image checks.
    """

    __slots__ = ()

    def classify(self, signal: FailoverSignal | Mapping[str, Any]) -> FailoverClassification | None:
        """The full classification with this owner, or None for a provider it does not own."""
        facts = coerce_signal(signal)
        if not self.owns(facts.provider):
            return None
        return classify_failover_signal(facts, provider_owner=self)


# --------------------------------------------------------------------------- the signal procedure


_THROTTLING_EXCEPTION_RE = re.compile(r"^throttling_?exception$", re.IGNORECASE)
_RETRYABLE_4XX = frozenset({408, 409, 410, 429, 499})
_TRANSIENT_CODE_REASONS = frozenset(
    {FailoverReason.RATE_LIMIT, FailoverReason.OVERLOADED, FailoverReason.TIMEOUT}
)


def _has_independent_transient_message(
    raw: str | None,
    reason: FailoverReason,
    provider: str | None,
    owner: ProviderFailoverDialect | None,
) -> bool:
    if not raw:
        return False
    leading = extract_leading_http_status(raw)
    text = leading.rest if leading is not None else raw
    info = parse_api_error_info(text)
    payload = untrusted_json_object(text) if info is None and text else None
    if info is not None:
        prose = info.message
    elif payload is not None:
        prose = payload.get("message") if isinstance(payload.get("message"), str) else None
    else:
        prose = text
    if not prose:
        return False
    if classify_failover_reason_from_code(prose) == reason:
        return False
    found = classify_failover_classification_from_message(prose, provider, provider_owner=owner)
    return failover_reason_from_classification(found) == reason


def classify_failover_signal(
    signal: FailoverSignal | Mapping[str, Any],
    *,
    provider_owner: ProviderFailoverDialect | None = None,
) -> FailoverClassification | None:
    """OpenClaw's ``classifyFailoverSignal`` (spec §1.2): every fact of a failure in, a reason
    or the overflow kind out, or None when nothing is known.

    Accepts a ``FailoverSignal`` or a dict with OpenClaw's keys (``status``, ``retryAfterMs``,
    ``code``, ``errorType``, ``message``, ``provider``, ``details``). ``provider_owner`` is the
    failing provider's dialect (see ``ProviderFailoverOwner``).
    """
    facts = coerce_signal(signal)
    owner = provider_owner
    inferred_status = infer_signal_status(facts)
    explicit_status = finite_status(facts.status)
    message_classification = (
        classify_failover_classification_from_message(
            facts.message, facts.provider, facts.error_type, provider_owner=owner
        )
        if facts.message
        else None
    )
    detail_classification = classify_details(facts.details, facts.provider, owner)
    message_or_detail = merge_message_and_detail_classification(
        message_classification, detail_classification
    )
    error_type_reason = classify_core_failover_reason_from_error_type(facts.error_type)
    error_type_classification = (
        reason_classification(error_type_reason) if error_type_reason else None
    )

    provider_reason: FailoverReason | None = None
    if owner is not None:
        hook_status = explicit_status
        if hook_status is None and facts.provider and inferred_status in (401, 403, 429):
            hook_status = inferred_status
        has_signal = bool(
            facts.message or facts.code or facts.error_type or inferred_status is not None
        )
        has_descriptor = (
            hook_status is not None or facts.code is not None or facts.error_type is not None
        )
        has_context_candidate = bool(
            facts.message and looks_like_provider_context_overflow_candidate(facts.message)
        )
        if has_signal and (has_descriptor or has_context_candidate or not message_classification):
            provider_reason = owner.classify_reason(
                error_message=facts.message or "",
                provider=facts.provider,
                status=hook_status,
                code=facts.code,
                error_type=facts.error_type,
            )

    if (
        provider_reason is None
        and inferred_status is None
        and inspect_tls_certificate_error(facts.code, facts.message) is not None
    ):
        return reason_classification(FailoverReason.TLS_CERTIFICATE)
    if (
        provider_reason is None
        and facts.message
        and is_transport_html_error_status(inferred_status)
        and is_html_error_response(facts.message, inferred_status)
    ):
        html = classify_failover_classification_from_http_status(
            inferred_status, None, None, facts.status, facts.provider
        )
        if html is not None:
            return html

    info = parse_api_error_info(facts.message)
    code_reason = classify_failover_reason_from_code(facts.code) or (
        classify_failover_reason_from_code(info.code if info else None)
    )
    effective: FailoverClassification | None
    if provider_reason is not None:
        effective = plugin_classification(provider_reason)
    elif code_reason == FailoverReason.FORMAT:
        effective = reason_classification(FailoverReason.FORMAT)
    else:
        effective = merge_message_and_detail_classification(
            message_or_detail or error_type_classification,
            reason_classification(code_reason) if code_reason else None,
        )
    if code_reason == FailoverReason.AUTH_PERMANENT:
        return reason_classification(code_reason)
    status_classification = classify_failover_classification_from_http_status(
        inferred_status,
        facts.message,
        effective,
        facts.status,
        facts.provider,
        preserve_provider_signal_classification=provider_reason is not None,
    )
    if status_classification is not None:
        classification: FailoverClassification | None = status_classification
    elif code_reason is not None:
        classification = reason_classification(code_reason)
    else:
        classification = effective
    if provider_reason is not None:
        return classification
    return _mark_same_model_retry(classification, facts, inferred_status, code_reason, owner)


def _mark_same_model_retry(
    classification: FailoverClassification | None,
    facts: FailoverSignal,
    inferred_status: int | None,
    code_reason: FailoverReason | None,
    owner: ProviderFailoverDialect | None,
) -> FailoverClassification | None:
    """The newer ``classify-core`` rule: a transient reason that only a 4xx *code* supplied,
    with no transient prose, is not worth retrying on the same model."""
    if (
        classification is None
        or classification.kind != "reason"
        or code_reason not in _TRANSIENT_CODE_REASONS
        or classification.reason != code_reason
        or inferred_status is None
        or not 400 <= inferred_status < 500
        or inferred_status in _RETRYABLE_4XX
    ):
        return classification
    assert code_reason is not None
    transient_prose = _has_independent_transient_message(
        facts.message, code_reason, facts.provider, owner
    ) or any(
        _has_independent_transient_message(detail, code_reason, facts.provider, owner)
        for detail in facts.details
    )
    info = parse_api_error_info(facts.message)
    code = facts.code if facts.code is not None else (info.code if info else None)
    if transient_prose or _THROTTLING_EXCEPTION_RE.search(code or ""):
        return classification
    return replace(classification, same_model_retry=False)


def classify_failover_reason(
    raw: str,
    *,
    provider: str | None = None,
    provider_owner: ProviderFailoverDialect | None = None,
) -> FailoverReason | None:
    """OpenClaw's ``classifyFailoverReason``: the reason of a bare message (overflow as
    ``context_overflow``), or None."""
    classification = classify_failover_signal(
        FailoverSignal(message=raw, provider=provider), provider_owner=provider_owner
    )
    return failover_reason_from_classification(classification)


def is_failover_error_message(raw: str, *, provider: str | None = None) -> bool:
    """Does the message classify at all?"""
    return classify_failover_reason(raw, provider=provider) is not None
