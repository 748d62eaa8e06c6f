"""Flag retrieved text that addresses instructions to the model (prompt injection).

A knowledge base holds text written by many people; a page can carry sentences meant for
the AI that will read it ("ignore all previous instructions…"). Prompts built here keep
such text inside delimited data sections (see ``formats.escape_data``) and tell the model
never to follow instructions found there; this detector additionally *flags* the
passage in the evidence so an operator or an audit can see it.

The detector looks for the grammatical shapes that instructions to a model take, not for
one phrase list:

- ``override``: an override verb (ignore, disregard, forget, bypass, stop following…)
  whose object is the model's instructions: ``ignore all previous instructions``,
  ``disregard your prior guidelines``, ``override the system prompt``, ``forget
  everything above``. Generic objects (rules, restrictions) count only with a modifier
  that points at the model's own (previous, above, your, system…), so "to ignore all
  rules in a file" in a linter's docs is not flagged.
- ``role``: reassigning who the model is: ``you are now`` + an AI persona or mode,
  ``from now on`` + a response verb, a sentence starting with ``act as an …`` + a
  persona or with ``pretend to be``, ``pretend you are``, ``your new task is``.
- ``address``: text addressed to an AI reader: ``Note to the AI:``, ``Hey ChatGPT,``
  (a label or greeting, so "send a message to the AI agent" in a CLI's docs is not),
  ``if you are an AI``,
  ``language models reading this``, ``ChatGPT, …``, ``AI systems must …``.
- ``markup``: chat-format control sequences that have no business in documentation:
  ``<|im_start|>``, ``[INST]``, ``<<SYS>>``, ``<system>`` tags, ``### System:``,
  ``Human:``/``Assistant:`` turns, ``BEGIN SYSTEM PROMPT``.
- ``conceal``: hiding things from the user or extracting the prompt: ``do not tell the
  user``, ``without informing the user``, ``reveal your system prompt``.
- ``hidden``: invisible Unicode tag characters (U+E0000–U+E007F), used to smuggle
  instructions past human readers.

It errs towards precision: a flag is a signal for review, never a reason to drop a
passage. ``benchmarks/prompt_tokens.py`` reports its precision and recall on held-out
sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_F = re.IGNORECASE

_AI = (
    r"(?:A\.?I\.?(?: (?:assistants?|agents?|models?|systems?|bots?|tools?))?|LLMs?(?: agents?)?"
    r"|(?:large )?language models?|chat ?bots?|assistants?|GPT(?:-?\d\w*)?|ChatGPT|Claude"
    r"|Gemini|Copilot)"
)
_OVERRIDE_VERB = (
    r"(?:ignore|disregard|forget|override|overrule|bypass|circumvent|abandon|discard"
    r"|stop following|do not follow|don't follow|no longer follow)"
)
_MODIFIER = (
    r"(?:all|any|every|each|the|these|those|your|its|their|of|previous|prior|above|earlier"
    r"|preceding|former|original|initial|existing|current|system|developer|safety|standing"
    r"|old|given|other|such|provided|aforementioned)"
)
_STRONG = {
    "previous",
    "prior",
    "above",
    "earlier",
    "preceding",
    "former",
    "original",
    "initial",
    "your",
    "system",
    "developer",
    "safety",
    "aforementioned",
}
_MODEL_NOUN = (
    r"(?:instructions?|prompts?|directions?|directives?|guidelines?|guidance|guardrails?"
    r"|programming|system messages?|commands?)"
)
_WEAK_NOUN = r"(?:rules|constraints|restrictions|policies|context|limitations)"

_OVERRIDE = re.compile(
    rf"\b{_OVERRIDE_VERB}((?:\s+{_MODIFIER}){{0,4}})\s+({_MODEL_NOUN}|{_WEAK_NOUN})\b", _F
)
_OVERRIDE_ABOVE = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:(?:everything|all|anything)\s+)?(?:that\s+)?"
    r"(?:(?:was\s+)?(?:said|written|stated|mentioned)\s+)?(?:the\s+)?(?:above|before|previously)\b",
    _F,
)
_ROLE = (
    re.compile(
        r"\byou are (?:now|no longer)\b[^.!?\n]{0,60}?(?:\b(?:A\.?I|assistant|\w*bot|model"
        r"|persona|character|unrestricted|jailbroken|uncensored|DAN)\b|\b(?:developer|god"
        r"|jailbreak|unrestricted|debug|sudo|DAN) mode\b)",
        _F,
    ),
    re.compile(
        r"\bfrom now on,?\s+(?:you\s+(?:will|must|should|shall|are to)\s+)?(?:always\s+|only\s+"
        r"|never\s+)?(?:respond|answer|reply|act|behave|speak|write|output|say|refuse|ignore)\b",
        _F,
    ),
    re.compile(
        r"(?:^|[.!?:;]\s+|\n)\s*(?:please\s+)?(?:act|behave|respond)\s+as\s+(?:if\s+you\s+"
        r"(?:were|are)\s+)?(?:an?|the)\s+[^.!?\n]{0,40}?\b(?:A\.?I|assistant|model|\w*bot"
        r"|administrator|admin|root|DAN|unrestricted|uncensored|jailbroken|hacker)\b",
        _F,
    ),
    re.compile(
        r"\bpretend (?:you are|you're|that you)\b|(?:^|[.!?:;]\s+|\n)\s*(?:please\s+)?"
        r"pretend to be\b",
        _F,
    ),
    re.compile(
        r"\byour (?:new|real|true|actual|only) (?:role|task|goal|purpose|objective|instructions"
        r"|job|mission|identity|persona)\b",
        _F,
    ),
)
_ADDRESS = (
    re.compile(  # a label or greeting: "Note to the AI:", "Hey ChatGPT,"
        rf"\b(?:note|message|instructions?|attention|reminder|hey|hi|hello|dear)\b[\s:,]*"
        rf"(?:(?:to|for)\s+)?(?:(?:the|all|any)\s+)?{_AI}\s*[:,!]",
        _F,
    ),
    re.compile(rf"\bif you are (?:an?|the|any)\s+{_AI}\b", _F),
    re.compile(
        rf"\b{_AI}\s+(?:that\s+(?:is|are)\s+)?(?:reading|processing|parsing|summari[sz]ing"
        r"|viewing|crawling|indexing|analy[sz]ing)\s+(?:this|these)\b",
        _F,
    ),
    re.compile(rf"(?:^|[.!?]\s+|\n)\s*{_AI},\s+(?:please\s+)?[a-z]+", _F),
    re.compile(
        r"\b(?:A\.?I\.?|LLMs?|(?:large )?language models?)(?: (?:systems?|agents?|models?"
        r"|tools?|assistants?))?\s+(?:must|should|shall|are required to|need to|have to)\b",
        _F,
    ),
)
_MARKUP = (
    re.compile(
        r"<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text"
        r"|start_header_id|end_header_id|eot_id)\s*\|>",
        _F,
    ),
    re.compile(r"\[/?INST\]|<</?SYS>>"),
    re.compile(r"</?\s*(?:system|system[_-]prompt|instructions?)\s*>", _F),
    re.compile(r"(?:^|\n)\s*#{1,6}\s*(?:system|instructions?)\s*:", _F),
    re.compile(r"(?:^|\n)\s*(?:System|Human|Assistant|SYSTEM|HUMAN|ASSISTANT)\s*:\s*\S"),
    re.compile(r"\bBEGIN\s+(?:SYSTEM|NEW|HIDDEN)\s+(?:PROMPT|INSTRUCTIONS)\b", _F),
)
_CONCEAL = (
    re.compile(
        r"\b(?:do not|don't|never)\s+(?:tell|inform|mention|reveal|show|disclose|let)\b"
        r"[^.!?\n]{0,30}?\bthe user\b",
        _F,
    ),
    re.compile(r"\bwithout (?:telling|informing|notifying|alerting|asking) the user\b", _F),
    re.compile(
        r"\b(?:reveal|print|repeat|output|show|leak|disclose|dump)\s+(?:me\s+)?(?:your|the)\s+"
        r"(?:(?:full|entire|hidden|initial|original|exact)\s+)*(?:system\s+prompt|prompt"
        r"|instructions|context window)\b",
        _F,
    ),
)
_HIDDEN = re.compile("[\U000e0000-\U000e007f]")


@dataclass(frozen=True, slots=True)
class Flag:
    """One signal: its kind and the text that raised it."""

    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.excerpt!r}"


def _excerpt(text: str, m: re.Match[str]) -> str:
    return " ".join(text[m.start() : m.end()].split())[:80]


def detect_injection(text: str) -> tuple[Flag, ...]:
    """Signals that ``text`` addresses instructions to a model; empty when none."""
    flags: list[Flag] = []
    for m in _OVERRIDE.finditer(text):
        mods = {w.lower() for w in m.group(1).split()}
        noun = m.group(2).lower()
        if re.fullmatch(_WEAK_NOUN, noun) and not mods & _STRONG:
            continue
        flags.append(Flag("override", _excerpt(text, m)))
        break
    if not flags and (m2 := _OVERRIDE_ABOVE.search(text)):
        flags.append(Flag("override", _excerpt(text, m2)))
    for kind, patterns in (
        ("role", _ROLE),
        ("address", _ADDRESS),
        ("markup", _MARKUP),
        ("conceal", _CONCEAL),
    ):
        for pattern in patterns:
            if m3 := pattern.search(text):
                flags.append(Flag(kind, _excerpt(text, m3)))
                break
    if hidden := _HIDDEN.findall(text):
        flags.append(Flag("hidden", f"{len(hidden)} invisible tag characters"))
    return tuple(flags)
