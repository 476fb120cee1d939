"""The subcommands of ``openclaw-runtime`` beyond ``plugins``/``profiles``/``demo``.

One module per purpose: ``run`` and ``chat`` (talking to a model), ``sessions`` (reading
transcripts) and ``compact``, ``doctor`` (checking a setup), ``timeline`` (turning run events
into one human line each, shared with the demo), ``_common`` (errors, config, runtime).
``openclaw_runtime.cli`` adds them to the click group.
"""

from __future__ import annotations

from .chat import chat
from .doctor import doctor
from .run import run
from .sessions import compact, sessions

__all__ = ["chat", "compact", "doctor", "run", "sessions"]
