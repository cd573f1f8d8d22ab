"""Two offline arms for the scaffolded example; replace them with your own systems.

Point an arm at a model instead with ``target: openai`` (`evalsite docs targets` prints how).
"""


def _word(text: str) -> str:
    return text.rsplit(":", 1)[-1].strip()


def reverse(input: str) -> str:
    """Reverses the word exactly."""
    return _word(input)[::-1]


def lowercase_reverse(input: str) -> str:
    """Reverses the word but loses capital letters: wrong whenever the word has one."""
    return _word(input).lower()[::-1]
