"""Bad input, said in the user's words: what every store of lib/ raises."""

from typing import Any


class InputError(ValueError):
    """Bad input; `key` is the translation key, `placeholders` fill its message."""

    def __init__(self, translation_key: str, **placeholders: Any) -> None:
        # Only the key in args: a traceback of the refusal must not repeat a huge value.
        super().__init__(translation_key)
        self.key = translation_key
        self.placeholders = {name: str(value) for name, value in placeholders.items()}
