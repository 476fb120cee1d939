"""Compaction on request (``/compact``, ``openclaw-runtime compact``): the queued variant.

It waits in the session's lane like a run, so it never rewrites a transcript a turn is
writing; then it compacts through the configured context engine exactly as the run loop does.
Callers already inside the session's lane must not use it (it would wait for itself:
``LaneReentryError``); the run loop compacts directly.
"""

from __future__ import annotations

import os
from typing import Any

from .._exceptions import ConfigurationError
from ..context.compaction import SummaryModel
from ..context.engine import CompactResult
from ..transcript import validate_session_id
from .auth_controller import AuthController, AuthProfilesUnavailableError
from .checkin import SessionUser, check_out_session, flush_session
from .entry import resolve_context_window_info, resolve_initial_run_model_ref
from .lane_policy import resolve_session_lane
from .services import RunHost
from .session_ops import compact_with_engine

__all__ = ["compact_session_queued"]


async def compact_session_queued(
    runtime: RunHost,
    *,
    session_id: str | None = None,
    session_key: str | None = None,
    model: str | None = None,
    force: bool = True,
    custom_instructions: str | None = None,
) -> CompactResult:
    """Compact a stored session now (waiting for its lane first)."""
    services = runtime.services
    services.validate()
    index = services.session_index
    if session_id is None and session_key is not None:
        session_id = await index.lookup_id(session_key)
    if session_id is None:
        raise ConfigurationError("compact needs a session id or a known session key")
    session_id = validate_session_id(session_id)
    if not await services.session_store.exists(session_id):
        raise ConfigurationError(f"session {session_id!r} does not exist")
    key = session_key or await index.lookup_key(session_id)
    config = runtime.config
    aliases = {**runtime.models.aliases(), **config.agent.model_aliases}
    ref = resolve_initial_run_model_ref(
        provider=None,
        model=model or config.agent.compaction_model,
        aliases=aliases,
        agent_default=config.agent.model,
    )
    resolved = runtime.resolve_model(ref)
    api_key: str | None = None
    auth = AuthController(
        store=services.auth_store,
        settings=config.auth,
        provider=resolved.provider,
        model_id=resolved.id,
        env=runtime.env,
    )
    try:
        await auth.start()
        api_key = await auth.api_key()
    except AuthProfilesUnavailableError:
        api_key = None
    window = resolve_context_window_info(
        model_context_window=resolved.context_window,
        agent_context_tokens=config.agent.context_tokens,
    ).tokens
    engine = await runtime.resolve_context_engine()
    summary = [SummaryModel(resolved, runtime.stream_fn_for(resolved), api_key)]
    async with services.lanes.hold(resolve_session_lane(key or session_id), priority="foreground"):
        # the session a run would get (kept open between turns): what it buffered is written
        # first, and what this compaction buffers stays with it if the flush fails
        user = SessionUser(services, runtime.hooks, session_id)
        session = await check_out_session(user, os.getcwd())
        try:
            result: Any = await compact_with_engine(
                engine,
                session,
                summary,
                session_key=key,
                token_budget=max(1, window - min(16_384, resolved.max_tokens or 0)),
                current_token_count=None,
                force=force,
                keep_recent_tokens=min(config.agent.keep_recent_tokens, max(1, window // 4)),
                custom_instructions=custom_instructions,
            )
            await flush_session(user, session, "compaction")
        except BaseException:
            services.keep_session(session)  # its lines stay for the next checkout to write
            raise
        await services.checkin_session(session)
    return result
