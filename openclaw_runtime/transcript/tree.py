"""``SessionTree``: the entries of one session and the indexes derived from them.

Entries are indexed in file order (by id, labels, logical parents after leaf moves) and the
visible leaf and the next append's parent are tracked; ``extend`` is the hot path of loading
a session. Shared by the file session manager and the Redis one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .entries import LEAF_MOVING_TYPES

if TYPE_CHECKING:
    from .clean_head import CleanHead

__all__ = ["SessionTree"]


@dataclass
class SessionTree:
    """The entries of one session file and the indexes derived from them."""

    header: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    logical_parents: dict[str, str | None] = field(default_factory=dict)
    leaf_id: str | None = None
    append_parent_id: str | None = None
    #: the clean head of the bytes this tree was loaded from (``load.load_session_file``);
    #: ``None`` for a tree made any other way
    clean_head: CleanHead | None = field(default=None, compare=False, repr=False)

    @classmethod
    def build(cls, header: dict[str, Any], entries: list[dict[str, Any]]) -> SessionTree:
        tree = cls(header)
        tree.extend(entries)
        return tree

    def extend(self, entries: list[dict[str, Any]]) -> None:
        """Index entries in file order (one tight loop: this is the hot path of loading)."""
        by_id = self.by_id
        logical = self.logical_parents
        labels = self.labels
        leaf = self.leaf_id
        append_parent = self.append_parent_id
        moving = LEAF_MOVING_TYPES
        self.entries.extend(entries)
        for entry in entries:
            entry_id = entry["id"]
            by_id[entry_id] = entry
            kind = entry["type"]
            if kind == "leaf":
                leaf = entry.get("targetId")
                has_append_parent = "appendParentId" in entry
                append_parent = entry.get("appendParentId") if has_append_parent else leaf
                continue
            if kind in moving and entry.get("appendMode") != "side":
                if entry.get("parentId") == append_parent and leaf != append_parent:
                    logical[entry_id] = leaf
                leaf = entry_id
                if kind == "label":
                    target = entry.get("targetId")
                    text = entry.get("label")
                    text = text.strip() if isinstance(text, str) else ""
                    if isinstance(target, str):
                        if text:
                            labels[target] = text
                        else:
                            labels.pop(target, None)
            append_parent = entry_id
        self.leaf_id = leaf
        self.append_parent_id = append_parent

    def preview(self, entries: list[dict[str, Any]]) -> SessionTree:
        """A copy of the indexes with ``entries`` added (the original is left alone)."""
        probe = SessionTree(
            self.header,
            [],
            dict(self.by_id),
            dict(self.labels),
            dict(self.logical_parents),
            self.leaf_id,
            self.append_parent_id,
        )
        probe.extend(entries)
        return probe

    def repair_pointers(self) -> list[str]:
        """Fall back to the last visible entry when the leaf or append parent is gone."""
        problems: list[str] = []
        if self.leaf_id is not None and self.leaf_id not in self.by_id:
            problems.append(f"leaf entry {self.leaf_id} not found")
            self.leaf_id = self._last_visible()
        if self.append_parent_id is not None and self.append_parent_id not in self.by_id:
            problems.append(f"append parent {self.append_parent_id} not found")
            self.append_parent_id = self.leaf_id
        return problems

    def _last_visible(self) -> str | None:
        for entry in reversed(self.entries):
            if entry["type"] in LEAF_MOVING_TYPES and entry.get("appendMode") != "side":
                return str(entry["id"])
        return None
