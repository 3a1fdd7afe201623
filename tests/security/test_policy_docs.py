"""docs/security.md carries the route rules exactly as the code has them."""
from pathlib import Path

from cirrus.policies.table import markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_the_documented_policy_table_is_the_codes() -> None:
    text = DOC.read_text()
    start = text.index("<!-- policy-table -->\n") + len("<!-- policy-table -->\n")
    end = text.index("<!-- /policy-table -->")
    assert text[start:end] == markdown(), "run: python -m cirrus.policies.table"
