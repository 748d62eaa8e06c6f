"""Access control: who is calling (``principal.py``), which sources they may read, how
bearer tokens become callers (``tokens.py``) and the audit log (``audit.py``).

Identity comes from the transport, never from the model: on HTTP a bearer token checked
by a verifier, on stdio and the command line the configured local user. See
docs/access.md.
"""

from .principal import ANONYMOUS, OPERATOR, Principal

__all__ = ["ANONYMOUS", "OPERATOR", "Principal"]
