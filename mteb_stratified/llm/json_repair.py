"""Parse the JSON in an LLM answer, repairing the usual mistakes of small models.

Code fences, text around the object, curly quotes, single quotes, unquoted keys, trailing
commas and unclosed brackets or strings (a truncated answer) are repaired; what cannot be
repaired gives ``None``, never an exception.
"""

from __future__ import annotations

import json
import re

__all__ = ["repair_json"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)(?:```|$)", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:")


def _close_brackets(text: str) -> str:
    stack, in_str, esc = [], False, False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    if in_str:
        text += '"'
    text = re.sub(r",\s*$", "", text.rstrip())
    text = re.sub(r'"\s*:\s*$', '": ""', text)
    return text + "".join(reversed(stack))


def repair_json(text: str):
    """Parse ``text`` as JSON, repairing common LLM mistakes; ``None`` if it cannot."""
    text = text.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    text = text[min(starts):]
    candidates = [text]
    end = max(text.rfind("}"), text.rfind("]"))
    if end >= 0:
        candidates.append(text[:end + 1])
    fixed = text.replace("“", '"').replace("”", '"').replace("’", "'")
    if '"' not in fixed:
        fixed = fixed.replace("'", '"')
    fixed = _BARE_KEY.sub(r'\1"\2":', fixed)
    fixed = _TRAILING_COMMA.sub(r"\1", fixed)
    candidates += [fixed, _TRAILING_COMMA.sub(r"\1", _close_brackets(fixed))]
    for cand in candidates:
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            continue
    return None
