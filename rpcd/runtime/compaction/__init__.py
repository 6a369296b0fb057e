"""Compaction and tree navigation as Pi 0.85.0 does them (``docs/compaction.md`` of the Pi package).

* ``tokens`` — token estimates, the threshold, the settings;
* ``cut_point`` — where a compaction cuts (never between a tool call and its result);
* ``prepare`` — what a compaction summarizes (``prepareCompaction``);
* ``serialize`` — the text the summarizer reads, the read/modified file lists;
* ``branch`` — the entries of a branch being left (``collectEntriesForBranchSummary``,
  ``prepareBranchEntries``);
* ``prompts``, ``summarize`` — Pi's prompts and the summary model calls;
* ``controller`` — one session's manual and automatic compaction, overflow recovery and
  ``navigateTree``, with their events.

Everything reads the session through the store (``rpcd.store``) and calls the model through
the session's provider (``rpcd.providers``).
"""

from typing import TYPE_CHECKING

from rpcd.core.lazy import lazy_exports

if TYPE_CHECKING:
    from rpcd.runtime.compaction.controller import SessionCompaction
    from rpcd.runtime.compaction.tokens import CompactionSettings

__getattr__, __dir__ = lazy_exports(__name__, {
    ".controller": ("SessionCompaction",),
    ".tokens": ("CompactionSettings",),
})

__all__ = ["CompactionSettings", "SessionCompaction"]
