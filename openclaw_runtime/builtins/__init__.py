"""Plugins that ship with the core distribution; every implementation is ``trylast``."""
