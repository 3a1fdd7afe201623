"""Regenerate the initial migration from the models (pre-release only).

Until cirrus has a release there are no deployed databases to upgrade, so the
schema lives in one initial revision regenerated from the models. After the
first release, add new revisions with ``alembic revision --autogenerate``.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from alembic import command

from cirrus.db.migrate import MIGRATIONS, alembic_config

TARGET = MIGRATIONS / "versions" / "0001_initial.py"


def main() -> int:
    TARGET.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = alembic_config(f"sqlite:///{Path(tmp) / 'empty.db'}")
        command.revision(cfg, message="initial schema", autogenerate=True, rev_id="0001")
    generated = next((MIGRATIONS / "versions").glob("0001_*.py"))
    if generated != TARGET:
        generated.rename(TARGET)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
