"""``FailoverClassifierContract``: what a ``classify_failover`` plugin promises the host.

The hook is ``firstresult``: the first plugin that answers decides why a call failed, and
that reason picks the failover action (rotate the key, fall back, compact, give up). A
classifier that raises, answers with something other than a ``FailoverClassification``, is
not deterministic, or answers for providers it does not own silently changes how every
other provider's failures are handled. The suite calls the hook through a real runtime.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

from ..failover.reasons import FailoverClassification, FailoverReason, FailoverSignal
from ._contract_support import PLUGIN_UNDER_TEST, contract_runtime

__all__ = ["FailoverClassifierContract", "failover_probe_signals"]

#: An expected answer: a reason, ``"context_overflow"``, or ``None`` (no opinion).
Expected = FailoverReason | str | None


def failover_probe_signals(provider: str) -> list[FailoverSignal]:
    """Failures of every shape a classifier meets, odd ones included, from ``provider``."""
    messages = (
        None,
        "",
        "Rate limit reached for requests",
        "This model's maximum context length is 8192 tokens",
        "overloaded_error: Overloaded",
        "<html><body>502 Bad Gateway</body></html>",
        "insufficient_quota: You exceeded your current quota",
        "model `x` does not exist",
        "ünïcødé ⚠ " * 20,
        "x" * 4_000,
        "{not json",
    )
    statuses = (None, 0, 200, 400, 401, 402, 403, 404, 408, 413, 429, 499, 500, 502, 503, 529, 999)
    signals = [FailoverSignal(provider=provider)]
    for status in statuses:
        for message in messages:
            signals.append(FailoverSignal(status=status, message=message, provider=provider))
    signals += [
        FailoverSignal(provider=provider, code="rate_limit_exceeded", error_type="requests"),
        FailoverSignal(provider=provider, code="", error_type="", details=("", "\x00")),
        FailoverSignal(provider=provider, status=429, retry_after_ms=-1.0),
        FailoverSignal(provider=provider, status=429, retry_after_ms=float("inf")),
    ]
    return signals


def _expected_of(classification: FailoverClassification | None) -> Expected:
    if classification is None:
        return None
    if classification.kind == "context_overflow":
        return "context_overflow"
    return classification.reason


class FailoverClassifierContract:
    """Inherit and provide a ``failover_plugin`` fixture returning the plugin object (a
    module or an instance with a ``classify_failover`` hookimpl).

    Set ``provider`` to a provider the plugin owns and ``cases`` to ``(signal, expected)``
    pairs: ``expected`` is the plugin's own answer (a ``FailoverReason``,
    ``"context_overflow"``, or ``None`` for no opinion, leaving the decision to the next
    classifier). ``foreign_provider`` names a provider the plugin must leave alone; set it
    to ``None`` for a classifier that deliberately answers for everyone.
    """

    provider: ClassVar[str] = "example"
    foreign_provider: ClassVar[str | None] = "someone-elses-provider"
    cases: ClassVar[tuple[tuple[FailoverSignal, Expected], ...]] = ()

    def _classify_all(
        self, plugin: Any, state_dir: Path, signals: list[FailoverSignal]
    ) -> tuple[list[tuple[FailoverClassification | None, str | None]], list[str]]:
        with contract_runtime(plugin, state_dir) as runtime:
            answers = [runtime.hooks.classify_failover(signal) for signal in signals]
            faults = [f"{f.hook}: {f.error}" for f in runtime.hooks.faults]
        return answers, faults

    def test_declares_its_cases(self, failover_plugin: Any, tmp_path: Path) -> None:
        assert self.cases, "set `cases` to the failures your classifier recognises"
        assert any(expected is not None for _, expected in self.cases), (
            "`cases` has no failure the classifier answers for"
        )

    def test_answers_its_cases(self, failover_plugin: Any, tmp_path: Path) -> None:
        answers, faults = self._classify_all(
            failover_plugin, tmp_path, [signal for signal, _ in self.cases]
        )
        assert not faults, f"the classifier raised: {faults}"
        for (signal, expected), (classification, by) in zip(self.cases, answers, strict=True):
            if expected is None:
                assert by != PLUGIN_UNDER_TEST, (
                    f"expected no opinion on {signal!r}, the plugin answered {classification!r}"
                )
                continue
            assert by == PLUGIN_UNDER_TEST, (
                f"the plugin gave no answer for {signal!r} (the runtime's answer came from "
                f"{by!r}); is the hook registered and marked @hookimpl?"
            )
            assert _expected_of(classification) == expected, (
                f"{signal!r}: expected {expected!r}, got {classification!r}"
            )

    def test_never_raises_and_answers_with_a_classification(
        self, failover_plugin: Any, tmp_path: Path
    ) -> None:
        signals = failover_probe_signals(self.provider)
        answers, faults = self._classify_all(failover_plugin, tmp_path, signals)
        assert not faults, f"the classifier raised on odd input: {faults[:3]}"
        for signal, (classification, by) in zip(signals, answers, strict=True):
            if by == PLUGIN_UNDER_TEST:
                assert isinstance(classification, FailoverClassification), (
                    f"{signal!r}: answered {classification!r}, not a FailoverClassification"
                )
                assert classification.kind in ("reason", "context_overflow")
                if classification.kind == "reason":
                    assert isinstance(classification.reason, FailoverReason), classification

    def test_is_deterministic(self, failover_plugin: Any, tmp_path: Path) -> None:
        signals = [signal for signal, _ in self.cases] + failover_probe_signals(self.provider)
        twice = [signal for signal in signals for _ in range(2)]
        first, _ = self._classify_all(failover_plugin, tmp_path / "a", twice)
        for signal, one, other in zip(signals, first[::2], first[1::2], strict=True):
            assert one == other, (
                f"{signal!r} was classified differently on a second call: {one!r}, {other!r}"
            )
        cases = [signal for signal, _ in self.cases]
        again, _ = self._classify_all(failover_plugin, tmp_path / "b", cases)
        assert again == first[: 2 * len(cases) : 2], (
            "a second runtime classified the same failures differently"
        )

    def test_leaves_other_providers_alone(self, failover_plugin: Any, tmp_path: Path) -> None:
        if self.foreign_provider is None:
            return
        signals = [
            dataclasses.replace(signal, provider=self.foreign_provider) for signal, _ in self.cases
        ] + failover_probe_signals(self.foreign_provider)
        answers, faults = self._classify_all(failover_plugin, tmp_path, signals)
        assert not faults, f"the classifier raised: {faults[:3]}"
        pairs = zip(signals, answers, strict=True)
        answered = [s for s, (_, by) in pairs if by == PLUGIN_UNDER_TEST]
        assert not answered, (
            f"the plugin answered for provider {self.foreign_provider!r} "
            f"(e.g. {answered[0]!r}); return None for providers you do not own"
        )
