"""What produced a cached benchmark result: a fingerprint of the groundkb source.

The fitting scripts keep per-question results in ``benchmarks/results/tmp/`` so that a
refit does not search everything again; a result measured with other source must not
be reused (a refit once silently read the previous version's results). Each cache
records ``code_fingerprint()`` and is measured again when it differs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import groundkb


def code_fingerprint() -> str:
    """sha256 of the groundkb source imported here (every ``.py`` file under the
    package, by relative path and content)."""
    root = Path(groundkb.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
