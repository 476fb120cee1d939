"""The version of the core distribution, in a leaf module so the plugin manager can report it
without importing the package face."""

__version__ = "0.1.0"
