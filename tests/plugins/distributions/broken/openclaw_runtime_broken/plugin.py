"""Imports an SDK that is not installed, like a plugin with a missing optional dependency."""

import nonexistent_vendor_sdk  # noqa: F401
