"""Test fixture distribution."""
