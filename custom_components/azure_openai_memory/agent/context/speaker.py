"""Who is speaking, as data: the model chooses a remembered fact's scope by it.

The name comes from the person entity (a user can name it anything), so it travels as one
escaped JSON line inside a <data> block, like every other stored value.
"""

from .base import CLOSE, json_line

SPEAKER_NOTE = (
    "The person speaking, as Home Assistant knows them. Facts about them alone are theirs "
    "(remember with scope private); facts for everyone in the home are the household's."
)


def speaker_block(name: str) -> str:
    """The speaker's name in a <data source="speaker"> block."""
    return "\n".join(['<data source="speaker">', SPEAKER_NOTE, json_line({"name": name}), CLOSE])
