"""Root pytest configuration: every test tree uses the public testing kit."""

pytest_plugins = ["openclaw_runtime.testing"]
