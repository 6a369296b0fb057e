"""Per-project resources, as Pi loads them: settings, context files (``AGENTS.md``), project trust,
skills, prompt templates, slash commands, the system prompt, frontmatter and where resources are
found (``discovery``).

Doors: ``rpcd.core`` and ``rpcd.tools`` (path rules); never the session core, the turn machinery
or the extension host.
"""
