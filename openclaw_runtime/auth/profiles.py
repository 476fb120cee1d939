"""Auth profiles: one credential for one provider, and where its secret comes from.

A secret is referenced, not held: an environment variable, a file, or an inline value kept in a
``SecretStr``. It is read only by ``CredentialRef.resolve()`` at the moment a request needs it,
which registers it with ``openclaw_runtime.redaction``, so it never appears in a ``repr``,
``str``, error message, log line, event, transcript or side file.

``AuthProfile`` is both the ``[[auth.profiles]]`` config entry and the parsed form of a profile
stored in an OpenClaw ``auth-profiles.json`` (``AuthProfile.from_openclaw``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from .._exceptions import ConfigurationError
from ..redaction import register_secret

__all__ = [
    "AUTH_PROFILE_MODES",
    "AuthCredentialType",
    "AuthProfile",
    "AuthProfileMode",
    "CredentialRef",
    "UnresolvedCredentialError",
    "describe_validation_error",
    "normalize_provider_id",
    "resolve_provider_id_for_auth",
]

AuthCredentialType = Literal["api_key", "oauth", "token"]
AuthProfileMode = Literal["api_key", "oauth", "token", "aws-sdk"]
AUTH_PROFILE_MODES: tuple[str, ...] = ("api_key", "oauth", "token", "aws-sdk")


def normalize_provider_id(provider: object) -> str:
    """OpenClaw's ``normalizeProviderId``: trimmed and lower-cased (non-strings become "")."""
    return provider.strip().lower() if isinstance(provider, str) else ""


def resolve_provider_id_for_auth(provider: object) -> str:
    """The key under which a provider's auth state is kept (``resolveProviderIdForAuth``).

    OpenClaw can also fold plugin-declared aliases here; this runtime has none, so it is the
    normalized provider id.
    """
    return normalize_provider_id(provider)


class UnresolvedCredentialError(ConfigurationError):
    """A credential reference could not be resolved (the message names the reference only)."""


class CredentialRef(BaseModel):
    """Where a secret lives: exactly one of ``env``, ``file``, ``value`` (inline) or ``exec``.

    Also accepts OpenClaw's SecretRef shape ``{"source": "env"|"file"|"exec", "id": ...}`` and a
    bare string (an inline value). ``exec`` refs are recognised but never resolved here.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    env: str | None = None
    file: Path | None = None
    value: SecretStr | None = None
    exec: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_shorthands(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"value": data}
        if isinstance(data, Mapping) and "source" in data:
            source = data.get("source")
            ref_id = data.get("id")
            if source not in ("env", "file", "exec"):
                raise ValueError(f"secret source {source!r} is not supported (env, file, exec)")
            if not isinstance(ref_id, str) or not ref_id.strip():
                raise ValueError("a secret reference needs a non-empty 'id'")
            return {str(source): ref_id.strip()}
        return data

    @field_validator("env", "exec")
    @classmethod
    def _non_blank_name(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value.strip() if value is not None else None

    @field_validator("value")
    @classmethod
    def _non_blank_value(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("an inline credential must not be empty")
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> CredentialRef:
        given = [name for name in ("env", "file", "value", "exec") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError(
                "a credential needs exactly one of 'env', 'file', 'value' or 'exec'"
                + (f" (got {', '.join(given)})" if given else "")
            )
        register_secret(self.value)  # an inline secret is known from now on: mask it
        return self

    @property
    def source(self) -> Literal["env", "file", "inline", "exec"]:
        """Which kind of reference this is."""
        if self.env is not None:
            return "env"
        if self.file is not None:
            return "file"
        if self.exec is not None:
            return "exec"
        return "inline"

    def describe(self) -> str:
        """A safe label: ``env:NAME``, ``file:/path``, ``exec:id`` or ``inline``."""
        if self.env is not None:
            return f"env:{self.env}"
        if self.file is not None:
            return f"file:{self.file}"
        if self.exec is not None:
            return f"exec:{self.exec}"
        return "inline"

    def is_resolvable(self, env: Mapping[str, str] | None = None) -> bool:
        """Whether ``resolve()`` can succeed, checked without reading the secret itself."""
        if self.value is not None:
            return True
        if self.env is not None:
            return bool((os.environ if env is None else env).get(self.env, "").strip())
        if self.file is not None:
            return self.file.expanduser().is_file()
        return False

    def resolve(self, env: Mapping[str, str] | None = None) -> SecretStr:
        """Read the secret now; raise ``UnresolvedCredentialError`` naming only the reference.

        The value is registered with the process-wide redactor (``register_secret``), so
        nothing the process writes or prints afterwards can contain it.
        """
        secret = self._read(env)
        register_secret(secret)
        return secret

    def _read(self, env: Mapping[str, str] | None) -> SecretStr:
        if self.value is not None:
            return self.value
        if self.env is not None:
            raw = (os.environ if env is None else env).get(self.env, "")
            if not raw.strip():
                raise UnresolvedCredentialError(f"environment variable {self.env!r} is not set")
            return SecretStr(raw.strip())
        if self.file is not None:
            path = self.file.expanduser()
            try:
                raw = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reason = getattr(exc, "strerror", None) or type(exc).__name__
                raise UnresolvedCredentialError(
                    f"cannot read credential file {str(path)!r}: {reason}"
                ) from None
            if not raw.strip():
                raise UnresolvedCredentialError(f"credential file {str(path)!r} is empty")
            return SecretStr(raw.strip())
        raise UnresolvedCredentialError(
            f"secret reference {self.describe()!r} cannot be resolved by this runtime"
        )

    def __repr__(self) -> str:
        return f"CredentialRef({self.describe()})"

    def __str__(self) -> str:
        return self.describe()


class AuthProfile(BaseModel):
    """One auth profile: id, provider, mode and (for all but ``aws-sdk``) a credential.

    ``credential`` is the API key (``api_key``), the bearer token (``token``) or the OAuth
    access token (``oauth``); ``refresh`` is the OAuth refresh token. ``expires`` is the expiry
    in ms since the epoch for ``oauth``/``token`` (kept as given, so a malformed value can be
    reported as ``invalid_expires`` instead of failing the whole store).
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
        hide_input_in_errors=True,
    )

    id: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    mode: AuthProfileMode = Field(validation_alias=AliasChoices("mode", "type"))
    credential: CredentialRef | None = None
    refresh: CredentialRef | None = None
    expires: Any = None
    account_id: str | None = Field(
        default=None, validation_alias=AliasChoices("account_id", "accountId")
    )
    email: str | None = None
    auth_flow: str | None = Field(
        default=None, validation_alias=AliasChoices("auth_flow", "authFlow")
    )

    @field_validator("id", "provider")
    @classmethod
    def _strip(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @property
    def type(self) -> str:
        """OpenClaw's credential ``type`` (the mode)."""
        return self.mode

    @property
    def has_credential(self) -> bool:
        """Whether any secret (or reference to one) is attached."""
        return self.credential is not None or self.refresh is not None

    def credential_source(self) -> str:
        """Safe description of where the credential comes from (``env:X``, ``inline``...)."""
        parts = []
        if self.credential is not None:
            parts.append(self.credential.describe())
        if self.refresh is not None:
            parts.append(f"refresh {self.refresh.describe()}")
        return ", ".join(parts) if parts else "none"

    def resolve_secret(self, env: Mapping[str, str] | None = None) -> SecretStr:
        """The secret a request sends (API key, token or OAuth access token)."""
        if self.credential is None:
            raise UnresolvedCredentialError(f"auth profile {self.id!r} has no credential")
        return self.credential.resolve(env)

    @classmethod
    def from_openclaw(cls, profile_id: str, raw: Mapping[str, Any]) -> AuthProfile:
        """Parse a credential as OpenClaw stores it in ``auth-profiles.json``.

        ``api_key``: ``key``/``apiKey`` or ``keyRef``; ``token``: ``token`` or ``tokenRef``
        plus ``expires``; ``oauth``: ``access``, ``refresh``, ``expires``, ``accountId``.
        Empty strings count as absent (OpenClaw's ``normalizeSecretInputString``).
        Raises ``ValueError`` with a message that contains no secret.
        """
        if not isinstance(raw, Mapping):
            raise ValueError(f"auth profile {profile_id!r} is not an object")
        kind = raw.get("type")
        if kind not in ("api_key", "oauth", "token"):
            raise ValueError(f"auth profile {profile_id!r} has unknown type {kind!r}")

        def inline(*names: str) -> dict[str, str] | None:
            for name in names:
                value = raw.get(name)
                if isinstance(value, str) and value.strip():
                    return {"value": value.strip()}
            return None

        def ref(name: str) -> Any:
            value = raw.get(name)
            return value if isinstance(value, Mapping) else None

        credential: Any
        refresh: Any = None
        if kind == "api_key":
            credential = inline("key", "apiKey") or ref("keyRef")
        elif kind == "token":
            credential = inline("token") or ref("tokenRef")
        else:
            credential = inline("access") or ref("oauthRef")
            refresh = inline("refresh")
        fields: dict[str, Any] = {
            "id": profile_id,
            "provider": raw.get("provider"),
            "mode": kind,
            "credential": credential,
            "refresh": refresh,
            "expires": raw.get("expires"),
            "account_id": raw.get("accountId") if isinstance(raw.get("accountId"), str) else None,
            "email": raw.get("email") if isinstance(raw.get("email"), str) else None,
            "auth_flow": raw.get("authFlow") if isinstance(raw.get("authFlow"), str) else None,
        }
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            raise ValueError(
                f"auth profile {profile_id!r}: {describe_validation_error(exc)}"
            ) from None

    def __repr_args__(self) -> Any:
        # SecretStr already masks values; refs print their safe description.
        return [(k, v) for k, v in super().__repr_args__() if v is not None]


def describe_validation_error(exc: ValidationError) -> str:
    """Where and what went wrong, without the offending input (which may be a secret)."""
    parts = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "value"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
