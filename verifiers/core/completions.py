"""The text a reward function scores: a completion as TRL passes it, plain text or a conversation."""

from __future__ import annotations

from typing import Any

from .contract import QUOTED_CHARS


def completion_text(completion: Any) -> str:
    """Plain text of a completion: a string as is; a conversation (a message dict, or a list of them): the content of
    the last assistant message (of the last message when none is the assistant's).

    TypeError for anything else: None, numbers, bytes, an empty list, a list holding anything but messages, a dict
    that is not a message (a message has a "role" or a "content" key), content that is neither text nor text parts.
    """
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, dict) else completion
    if not isinstance(messages, (list, tuple)) or not messages or not all(map(_is_message, messages)):
        raise TypeError(
            "a completion must be a string or a conversation (a list of {'role': ..., 'content': ...} messages), "
            f"got {type(completion).__name__} {completion!r:.{QUOTED_CHARS}}"
        )
    assistant = [m for m in messages if m.get("role", "assistant") == "assistant"]
    return _content_text((assistant or messages)[-1].get("content"))


def _is_message(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and ("role" in message or "content" in message)
        and isinstance(message.get("role", ""), str)
    )


def _content_text(content: Any) -> str:
    """Message content may be a string, None, or a list of typed parts ({"type": "text", "text": ...})."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        texts = [part.get("text") for part in content if part.get("text") is not None]  # images and such are skipped
        if all(isinstance(text, str) for text in texts):
            return "".join(texts)
    raise TypeError(
        f"message content must be text or a list of text parts, got {type(content).__name__} {content!r:.{QUOTED_CHARS}}"
    )
