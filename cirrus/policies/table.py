"""The route rules as a Markdown table, for ``docs/security.md``.

``python -m cirrus.policies.table`` prints it; a test checks the document
carries exactly this text between its ``policy-table`` markers.
"""
from __future__ import annotations

from cirrus.policies import TABLES
from cirrus.policies.compute import SERVER_ACTIONS


def markdown() -> str:
    """One row per (family, method, path): the rule's name and level."""
    lines = ["| API | method | path | rule | needs |", "|---|---|---|---|---|"]
    for prefix, table in TABLES.items():
        for (method, path), rule in sorted(table.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            lines.append(f"| {prefix[1:]} | {method} | `{path}` | `{rule.name}` | "
                         f"{rule.level.name.lower()} |")
        if prefix == "/compute":
            for action, rule in sorted(SERVER_ACTIONS.items()):
                lines.append(f"| compute | POST | `/v2.1/servers/{{server_id}}/action` "
                             f"`{action}` | `{rule.name}` | {rule.level.name.lower()} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - a documentation helper
    print(markdown(), end="")
