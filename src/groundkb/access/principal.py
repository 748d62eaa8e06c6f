"""Who is calling: a user, their groups, and the sources they unlocked for this call."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller as the server established it (a verified token, or the configured local
    user). ``operator`` reads every source (the command line, an unconfigured stdio
    server); ``unlocked`` are capability sources opened by a per-call credential."""

    user: str
    groups: frozenset[str] = frozenset()
    operator: bool = False
    via: str = ""  # token, jwt, local, anonymous
    unlocked: frozenset[str] = field(default=frozenset())

    def describe(self) -> str:
        if self.operator:
            return f"{self.user} (every source)"
        return f"{self.user} (groups: {', '.join(sorted(self.groups)) or 'none'})"


OPERATOR = Principal("operator", operator=True, via="local")
ANONYMOUS = Principal("anonymous", via="anonymous")
