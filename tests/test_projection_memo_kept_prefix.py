"""The projection memo keeps the previous request's leading kept messages across attempts.

``ProjectionMemo.keep_only`` (an attempt's end) used to forget the previous request, so the
first request of a kept-open session's next turn looked at every message again and rebuilt
its entries: 10 000 new tuples at 10 000 messages, ten collections of the cyclic GC,
≈ 3.5 ms of the warm turn (benchmarks/README.md, session 14 warm9). It now keeps the
leading run of that request's messages that are in ``keep``, which the next request
extends. Random sequences of requests and releases, against a memo with the old
``keep_only``: the same outputs, message by message (pass-throughs the very objects);
never a message outside ``keep`` held after a release.
"""

from __future__ import annotations

import operator
import random
from typing import Any

import pytest

from openclaw_runtime.context.guard import ProjectionMemo
from openclaw_runtime.messages import TextContent, ToolResultMessage, UserMessage


class OldMemo(ProjectionMemo):
    """``keep_only`` as it was (verbatim): the previous request is forgotten."""

    def keep_only(self, *keep: Any) -> None:
        wanted = {id(message) for messages in keep for message in messages}
        self._entries = {key: hit for key, hit in self._entries.items() if key in wanted}
        self._last = None


def project(message: Any) -> Any:
    """A pure projection that changes tool results only (as the built-in one)."""
    if isinstance(message, ToolResultMessage):
        return ("projected", message.tool_call_id, message.content[0].text[:3])  # type: ignore[union-attr]
    return message


def _fresh(rng: random.Random, serial: list[int]) -> Any:
    serial[0] += 1
    n = serial[0]
    if rng.random() < 0.5:
        return ToolResultMessage(
            tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text=f"r{n}xyz")]
        )
    return UserMessage(content=f"q{n}")


def _recording(calls: list[Any]) -> Any:
    """``project``, appending every message it is called with to ``calls``."""

    def counting(message: Any) -> Any:
        calls.append(message)
        return project(message)

    return counting


def _same(got: list[Any], expected: list[Any]) -> bool:
    """Equal projections; a message passed through is the very object on both sides."""
    return len(got) == len(expected) and all(
        a is b if isinstance(b, UserMessage) else a == b for a, b in zip(got, expected, strict=True)
    )


@pytest.mark.parametrize("seed", range(300))
def test_requests_and_releases_give_the_old_memos_outputs(seed: int) -> None:
    rng = random.Random(seed)
    serial = [0]
    new, old = ProjectionMemo(), OldMemo()
    history = [_fresh(rng, serial) for _ in range(rng.randrange(0, 12))]
    request = list(history)
    limits = [100, 100, 100, 7]
    projected_request: list[Any] = []
    kept_then: set[int] = set()  # at the previous release: the messages kept, their entries
    entries_then: set[int] = set()
    for _ in range(rng.randrange(1, 14)):
        step = rng.random()
        if step < 0.35:  # a tool loop's next request: the same messages and more
            request = [*request, *(_fresh(rng, serial) for _ in range(rng.randrange(0, 3)))]
        elif step < 0.5:  # a request that starts over from the history (a new attempt)
            request = [*history, *(_fresh(rng, serial) for _ in range(rng.randrange(0, 3)))]
        elif step < 0.6:  # a shuffled, cut or repeated request
            request = rng.sample(request, k=len(request))[: rng.randrange(0, len(request) + 1)]
            request += rng.sample(request, k=min(2, len(request)))
        elif step < 0.85:  # an attempt's end: keep the history and some outputs
            models = history + [_fresh(rng, serial) for _ in range(rng.randrange(0, 3))]
            outputs = rng.sample(request, k=rng.randrange(0, len(request) + 1))
            keep = [models, outputs] if rng.random() < 0.7 else [models]
            new.keep_only(*keep)
            old.keep_only(*keep)
            wanted = {id(m) for messages in keep for m in messages}
            assert set(new._entries) <= set(old._entries) <= wanted
            # what the old memo keeps besides: only (when the lists kept extend the ones
            # kept before) messages that were kept then without an entry and sent since,
            # whose projection is made again if they are sent again
            assert set(old._entries) - set(new._entries) <= kept_then - entries_then
            kept_then, entries_then = wanted, set(new._entries)
            if new._last is not None:
                inputs, projected, _ = new._last
                assert inputs and {id(m) for m in inputs} <= wanted
                # what it holds besides: projections of those messages (a message met twice
                # in one request was projected twice: equal, not always the entry's object;
                # a kept message forgotten as above has none)
                assert _same(projected, [project(m) for m in inputs])
                assert all(
                    _same([projected[i]], [new._entries[id(m)][2]])
                    for i, m in enumerate(inputs)
                    if id(m) in new._entries
                )
                assert len(inputs) <= len(projected_request)
                assert all(map(operator.is_, inputs, projected_request))  # its leading run
            history = models  # the next turn resends the session's models
            request = [*history, *(_fresh(rng, serial) for _ in range(rng.randrange(0, 3)))]
            continue
        limit = rng.choice(limits)
        changes: Any = rng.choice([object, ToolResultMessage])
        got = new.project_all(request, limit, project, changes)
        projected_request = list(request)
        expected = old.project_all(request, limit, project, changes)
        assert _same(got, expected)
        assert _same(got, [project(m) for m in request])


def test_a_turn_after_a_release_extends_the_kept_run() -> None:
    """The first request after a release looks at the new messages only."""
    rng = random.Random(1)
    serial = [0]
    history = [_fresh(rng, serial) for _ in range(50)]
    calls: list[Any] = []
    counting = _recording(calls)

    memo = ProjectionMemo()
    prompt = UserMessage(content="prompt")
    memo.project_all([*history, prompt], 100, counting)
    memo.keep_only(history, [])  # the prompt was the kernel's object: forgotten
    assert memo._last is not None and all(map(operator.is_, memo._last[0], history))
    calls.clear()
    turn = [*history, UserMessage(content="prompt again"), UserMessage(content="next")]
    assert _same(memo.project_all(turn, 100, counting), [project(m) for m in turn])
    assert calls == turn[50:]
    # at another limit the kept run is not used: every message is looked at
    calls.clear()
    memo.keep_only(turn, [])
    memo.project_all(turn, 7, counting)
    assert len(calls) == sum(isinstance(m, ToolResultMessage) for m in turn) or calls == turn


def test_a_request_sharing_the_leading_part_projects_from_the_first_other_object() -> None:
    """A message replaced by a fresh copy (a sanitizer stripping a tool result again) costs
    the copy and what is new: the messages before it keep the previous output, the same
    objects after it their entries; nothing else is projected again."""
    rng = random.Random(3)
    serial = [0]
    history = [_fresh(rng, serial) for _ in range(60)]
    calls: list[Any] = []
    counting = _recording(calls)

    class LookUps(dict[int, Any]):
        """The memo's entries, counting the messages looked up in them."""

        looked: int = 0

        def get(self, key: Any, default: Any = None) -> Any:
            LookUps.looked += 1
            return super().get(key, default)

    memo = ProjectionMemo()
    memo.project_all(history, 100, counting)
    for index in (59, 57, 40, 0):
        calls.clear()
        memo._entries = LookUps(memo._entries)
        LookUps.looked = 0
        copy = history[index].model_copy()
        history = [*history[:index], copy, *history[index + 1 :], _fresh(rng, serial)]
        assert _same(memo.project_all(history, 100, counting), [project(m) for m in history])
        assert calls == [copy, history[-1]], index
        # the messages before the copy were not looked at again (all of them: no shared part)
        assert LookUps.looked == len(history) - index, index
        assert memo._last is not None and all(map(operator.is_, memo._last[0], history))


def test_a_kept_open_sessions_releases_look_at_what_is_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kept-open session's attempts end with ``keep_only(history, cached outputs)``, each
    list the previous one plus the turn's messages. Only those are looked at then (the
    keys entered since against the lists' new messages), not the whole history: an id set
    of the history cost ≈ 1.5 ms of a warm turn at 10 000 messages. A list that does not
    start with the previous one (a compaction rewrote the history) takes the whole look."""
    from openclaw_runtime.context import guard as guard_module

    looked = [0]

    class CountingSet(set):  # type: ignore[type-arg]
        def update(self, *items: Any) -> None:
            for each in items:
                each = list(each)
                looked[0] += len(each)
                super().update(each)

    monkeypatch.setattr(guard_module, "set", CountingSet, raising=False)
    rng = random.Random(7)
    serial = [0]
    memo = ProjectionMemo()
    history = [_fresh(rng, serial) for _ in range(300)]
    outputs = list(history)
    for turn in range(12):
        prompt = UserMessage(content=f"turn {turn}")
        loop = [_fresh(rng, serial) for _ in range(4)]  # the kernel's messages of the turn
        for end in range(1, len(loop) + 1):
            request = [*outputs, prompt, *loop[:end]]
            assert _same(memo.project_all(request, 100, project), [project(m) for m in request])
        models = [_fresh(rng, serial) for _ in range(5)]  # the session's models of the turn
        history = [*history, *models]
        outputs = [*outputs, *models]
        looked[0] = 0
        memo.keep_only(history, outputs)
        # every message of the kernel's is forgotten, every kept one that has an entry stays
        assert not {id(prompt), *map(id, loop)} & set(memo._entries)
        assert {id(m) for m in outputs[:300]} <= set(memo._entries)
        if turn:
            assert looked[0] <= 2 * len(models), (turn, looked[0])
    # a history that no longer starts with the one kept before: everything is looked at
    history = history[100:]
    looked[0] = 0
    memo.keep_only(history, history)
    assert looked[0] >= 2 * len(history)
    assert set(memo._entries) <= {id(m) for m in history}
