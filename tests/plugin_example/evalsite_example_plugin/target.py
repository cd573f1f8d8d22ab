"""``target: shout`` (or ``shout:<suffix>``): answers with the input in capitals, then the suffix."""

from evalsite.calls.targets import TargetResult, register_target


class Shout:
    kind = "shout"

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    async def generate(self, request):
        return TargetResult(output=str(request.input).upper() + self.suffix)

    async def aclose(self) -> None:
        return None


@register_target("shout")
def make_shout(rest, settings, project_root):
    """``rest`` is what follows ``shout:`` in the spec (the suffix); ``settings`` the arm's settings."""
    return Shout(rest or "!")
