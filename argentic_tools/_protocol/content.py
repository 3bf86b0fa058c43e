"""Content blocks: what a tool returns besides (or instead of) a JSON value.

Text, an image, audio, an embedded resource or a link to one, each as MCP defines it,
with optional :class:`Annotations` (audience, priority) and ``_meta``. On the wire a
block is MCP's own JSON shape, so a gateway hands it to an MCP client unchanged::

    {"type": "text", "text": "..."}
    {"type": "image", "data": "<base64>", "mimeType": "image/png"}
    {"type": "audio", "data": "<base64>", "mimeType": "audio/wav"}
    {"type": "resource", "resource": {"uri": "...", "mimeType": "...", "text": "..."}}
    {"type": "resource_link", "uri": "...", "name": "..."}

``annotations`` and ``_meta`` appear only when set, never as ``null``. Fields of a
block that this version does not know (a newer MCP revision's) are kept as they came
(:attr:`extra`) and sent on unchanged. In Python, binary data is ``bytes``; the base64
is the wire's business.

:func:`plain` gives each block's plain rendering: the value an argentic peer, which
knows nothing of blocks, finds in ``result``.
"""

import base64
import itertools
import json
import mimetypes
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    model_serializer,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"WAVE", 8, "audio/wav"),
    (b"OggS", 0, "audio/ogg"),
    (b"fLaC", 0, "audio/flac"),
    (b"ID3", 0, "audio/mpeg"),
    (b"<svg", 0, "image/svg+xml"),
)


class Annotations(BaseModel):
    """Hints for the client about a block, as MCP defines them.

    Args:
        audience: Who the block is for: ``"user"``, ``"assistant"`` or both.
        priority: How important it is, from 0 (optional) to 1 (required).
        last_modified: When it last changed (ISO 8601), ``lastModified`` on the wire.

    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    audience: list[Literal["user", "assistant"]] | None = None
    """Who the block is meant for."""
    priority: Annotated[float, Field(ge=0, le=1)] | None = None
    """0 (entirely optional) to 1 (effectively required)."""
    last_modified: str | None = Field(default=None, alias="lastModified")
    """ISO 8601 time of the last change."""

    @model_serializer(mode="plain")
    def _wire(self) -> dict[str, Any]:
        shape: dict[str, Any] = {}
        if self.audience is not None:
            shape["audience"] = list(self.audience)
        if self.priority is not None:
            shape["priority"] = self.priority
        if self.last_modified is not None:
            shape["lastModified"] = self.last_modified
        return shape


class _Block(BaseModel):
    """What every block has: annotations, ``_meta`` and the wire fields it did not know."""

    model_config = ConfigDict(frozen=True, extra="ignore", arbitrary_types_allowed=False)

    annotations: Annotations | None = None
    """Hints for the client (audience, priority)."""
    meta: dict[str, Any] | None = None
    """MCP's ``_meta`` of the block."""
    extra: dict[str, Any] | None = None
    """Fields of the wire shape this version does not know, kept to be sent on unchanged."""

    def wire(self) -> dict[str, Any]:
        """The block in MCP's JSON shape (binary data as base64)."""
        shape = self._own_fields()
        if self.extra:
            shape = {**self.extra, **shape}
        if self.annotations is not None:
            shape["annotations"] = self.annotations._wire()
        if self.meta is not None:
            shape["_meta"] = self.meta
        return shape

    def _own_fields(self) -> dict[str, Any]:
        raise NotImplementedError

    @model_serializer(mode="plain")
    def _serialise(self) -> dict[str, Any]:
        return self.wire()


def _common(shape: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """A wire shape's annotations, ``_meta`` and unknown fields, as field values."""
    values: dict[str, Any] = {}
    if shape.get("annotations") is not None:
        values["annotations"] = shape["annotations"]
    meta = shape.get("_meta", shape.get("meta"))
    if meta is not None:
        values["meta"] = meta
    extra = {
        key: value
        for key, value in shape.items()
        if key not in known and key not in _COMMON_KEYS and not key.startswith("mime")
    }
    if shape.get("extra"):
        extra.update(shape["extra"])
    if extra:
        values["extra"] = extra
    return values


_COMMON_KEYS = frozenset({"type", "annotations", "_meta", "meta", "extra"})


def _given(**values: Any) -> dict[str, Any]:
    """The arguments that were given (not None)."""
    return {key: value for key, value in values.items() if value is not None}


def _decoded(value: Any, what: str) -> Any:
    """Bytes from the wire's base64 (bytes given in Python pass through)."""
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            raise ValueError(f"{what} is not valid base64") from None
    return value


def _encoded(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class Text(_Block):
    """A text block.

    Args:
        text: The text.
        annotations: Hints for the client.
        meta: MCP's ``_meta``.

    """

    type: Literal["text"] = "text"
    text: str
    """The text."""

    def __init__(
        self,
        text: str,
        *,
        annotations: Annotations | None = None,
        meta: dict[str, Any] | None = None,
        **wire: Any,
    ) -> None:
        # pydantic validates a received block through __init__ too, with its wire fields.
        super().__init__(text=text, **_given(annotations=annotations, meta=meta), **wire)

    @model_validator(mode="before")
    @classmethod
    def _from_wire(cls, value: Any) -> Any:
        if isinstance(value, dict) and ("_meta" in value or _unknown(value, _TEXT_KEYS)):
            return {"text": value.get("text"), **_common(value, _TEXT_KEYS)}
        return value

    def _own_fields(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


_TEXT_KEYS = frozenset({"text"})


def _unknown(value: dict[str, Any], known: frozenset[str]) -> bool:
    return any(key not in known and key not in _COMMON_KEYS for key in value)


class _Media(_Block):
    """An image or audio: bytes and their MIME type."""

    data: bytes
    """The raw bytes (base64 only on the wire)."""
    mime_type: str
    """The MIME type, ``mimeType`` on the wire."""

    def __init__(
        self,
        data: bytes | None = None,
        *,
        mime_type: str | None = None,
        path: str | os.PathLike[str] | None = None,
        annotations: Annotations | None = None,
        meta: dict[str, Any] | None = None,
        **wire: Any,
    ) -> None:
        kind = type(self).__name__.lower()
        if wire:  # a received block, validated through __init__ with its wire fields
            given = _given(data=data, mime_type=mime_type, annotations=annotations, meta=meta)
            super().__init__(**given, **wire)
            return
        if (data is None) == (path is None):
            raise ValueError(f"{type(self).__name__}: give data or path, not both or neither")
        if path is not None:
            data = Path(path).read_bytes()
            mime_type = mime_type or mimetypes.guess_type(os.fspath(path))[0]
        assert data is not None
        mime_type = mime_type or _sniffed(data)
        if mime_type is None:
            raise ValueError(
                f"{type(self).__name__}: cannot tell the {kind}'s MIME type; give mime_type"
            )
        super().__init__(data=data, mime_type=mime_type, annotations=annotations, meta=meta)

    @model_validator(mode="before")
    @classmethod
    def _from_wire(cls, value: Any) -> Any:
        if isinstance(value, dict) and "mimeType" in value:
            return {
                "data": _decoded(value.get("data"), f"the {cls.__name__.lower()}'s data"),
                "mime_type": value["mimeType"],
                **_common(value, _MEDIA_KEYS),
            }
        return value

    def _own_fields(self) -> dict[str, Any]:
        return {"type": self._kind(), "data": _encoded(self.data), "mimeType": self.mime_type}

    def _kind(self) -> str:
        raise NotImplementedError

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield (name, f"<{len(value):,} bytes>") if name == "data" else (name, value)


_MEDIA_KEYS = frozenset({"data", "mimeType"})


class Image(_Media):
    """An image block: ``Image(data, mime_type=...)`` or ``Image(path=...)``.

    Args:
        data: The image's bytes.
        mime_type: Its MIME type; guessed from ``path`` or from the bytes (PNG, JPEG,
            GIF, WebP, SVG) when not given.
        path: A file to read instead of ``data``.
        annotations: Hints for the client.
        meta: MCP's ``_meta``.

    Raises:
        ValueError: Neither or both of ``data`` and ``path``, or an unknown MIME type.
        OSError: ``path`` cannot be read.

    """

    type: Literal["image"] = "image"

    def __init__(
        self,
        data: bytes | None = None,
        *,
        mime_type: str | None = None,
        path: str | os.PathLike[str] | None = None,
        annotations: Annotations | None = None,
        meta: dict[str, Any] | None = None,
        **wire: Any,
    ) -> None:
        # Spelled out (not inherited) so that type checkers see this signature.
        super().__init__(
            data, mime_type=mime_type, path=path, annotations=annotations, meta=meta, **wire
        )

    def _kind(self) -> str:
        return "image"


class Audio(_Media):
    """An audio block: ``Audio(data, mime_type=...)`` or ``Audio(path=...)``.

    Args:
        data: The audio's bytes.
        mime_type: Its MIME type; guessed from ``path`` or from the bytes (WAV, Ogg,
            FLAC, MP3 with an ID3 tag) when not given.
        path: A file to read instead of ``data``.
        annotations: Hints for the client.
        meta: MCP's ``_meta``.

    Raises:
        ValueError: Neither or both of ``data`` and ``path``, or an unknown MIME type.
        OSError: ``path`` cannot be read.

    """

    type: Literal["audio"] = "audio"

    def __init__(
        self,
        data: bytes | None = None,
        *,
        mime_type: str | None = None,
        path: str | os.PathLike[str] | None = None,
        annotations: Annotations | None = None,
        meta: dict[str, Any] | None = None,
        **wire: Any,
    ) -> None:
        # Spelled out (not inherited) so that type checkers see this signature.
        super().__init__(
            data, mime_type=mime_type, path=path, annotations=annotations, meta=meta, **wire
        )

    def _kind(self) -> str:
        return "audio"


class EmbeddedResource(_Block):
    """A resource's contents, embedded: text or bytes, under its URI.

    Args:
        uri: The resource's URI.
        text: Its text, or
        blob: its bytes (base64 only on the wire).
        mime_type: Its MIME type.
        annotations: Hints for the client.
        meta: MCP's ``_meta`` of the block.
        resource_meta: MCP's ``_meta`` of the resource contents.

    Raises:
        ValueError: Neither or both of ``text`` and ``blob``.

    """

    type: Literal["resource"] = "resource"
    uri: str
    """The resource's URI."""
    text: str | None = None
    """Its text (None for binary contents)."""
    blob: bytes | None = None
    """Its bytes (None for text contents)."""
    mime_type: str | None = None
    """Its MIME type."""
    resource_meta: dict[str, Any] | None = None
    """MCP's ``_meta`` of the resource contents (``meta`` is the block's)."""

    def __init__(
        self,
        uri: str | None = None,
        *,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
        annotations: Annotations | None = None,
        meta: dict[str, Any] | None = None,
        resource_meta: dict[str, Any] | None = None,
        **wire: Any,
    ) -> None:
        if wire:  # a received block, validated through __init__ with its wire fields
            given = _given(
                uri=uri,
                text=text,
                blob=blob,
                mime_type=mime_type,
                annotations=annotations,
                meta=meta,
                resource_meta=resource_meta,
            )
            super().__init__(**given, **wire)
            return
        if uri is None:
            raise ValueError("EmbeddedResource: give the resource's uri")
        if (text is None) == (blob is None):
            raise ValueError("EmbeddedResource: give text or blob, not both or neither")
        super().__init__(
            uri=uri,
            text=text,
            blob=blob,
            mime_type=mime_type,
            annotations=annotations,
            meta=meta,
            resource_meta=resource_meta,
        )

    @model_validator(mode="before")
    @classmethod
    def _from_wire(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("resource"), dict):
            inner = value["resource"]
            values: dict[str, Any] = {
                "uri": inner.get("uri"),
                "mime_type": inner.get("mimeType"),
                "resource_meta": inner.get("_meta"),
                **_common(value, _RESOURCE_KEYS),
            }
            if "blob" in inner:
                values["blob"] = _decoded(inner["blob"], "the resource's blob")
            else:
                values["text"] = inner.get("text")
            inner_extra = {key: item for key, item in inner.items() if key not in _CONTENTS_KEYS}
            if inner_extra:
                values["extra"] = {**values.get("extra", {}), "resource": inner_extra}
            return values
        return value

    def wire(self) -> dict[str, Any]:
        """The block in MCP's JSON shape (a blob as base64)."""
        extra = dict(self.extra or {})
        inner_extra = extra.pop("resource", None)
        resource: dict[str, Any] = dict(inner_extra) if isinstance(inner_extra, dict) else {}
        resource["uri"] = self.uri
        if self.mime_type is not None:
            resource["mimeType"] = self.mime_type
        if self.blob is not None:
            resource["blob"] = _encoded(self.blob)
        else:
            resource["text"] = self.text or ""
        if self.resource_meta is not None:
            resource["_meta"] = self.resource_meta
        shape: dict[str, Any] = {**extra, "type": "resource", "resource": resource}
        if self.annotations is not None:
            shape["annotations"] = self.annotations._wire()
        if self.meta is not None:
            shape["_meta"] = self.meta
        return shape

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name == "blob" and value is not None:
                yield name, f"<{len(value):,} bytes>"
            else:
                yield name, value


_RESOURCE_KEYS = frozenset({"resource"})
_CONTENTS_KEYS = frozenset({"uri", "mimeType", "text", "blob", "_meta"})


class ResourceLink(_Block):
    """A link to a resource the client can read (MCP's ``resource_link``).

    Args:
        uri: The resource's URI.
        name: Its name.
        title: A title for people.
        description: What it is.
        mime_type: Its MIME type.
        size: Its size in bytes.
        annotations: Hints for the client.
        meta: MCP's ``_meta``.

    """

    type: Literal["resource_link"] = "resource_link"
    uri: str
    """The resource's URI."""
    name: str
    """Its name."""
    title: str | None = None
    """A title for people."""
    description: str | None = None
    """What it is."""
    mime_type: str | None = None
    """Its MIME type."""
    size: int | None = None
    """Its size in bytes."""

    def __init__(
        self,
        uri: str,
        name: str,
        *,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: Annotations | None = None,
        meta: dict[str, Any] | None = None,
        **wire: Any,
    ) -> None:
        super().__init__(
            **wire,
            uri=uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            annotations=annotations,
            meta=meta,
        )

    @model_validator(mode="before")
    @classmethod
    def _from_wire(cls, value: Any) -> Any:
        if isinstance(value, dict) and (
            "_meta" in value or "mimeType" in value or _unknown(value, _LINK_KEYS)
        ):
            values = {key: value.get(key) for key in _LINK_FIELDS if key in value}
            if "mimeType" in value:
                values["mime_type"] = value["mimeType"]
            return {**values, **_common(value, _LINK_KEYS)}
        return value

    def _own_fields(self) -> dict[str, Any]:
        shape: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("size", self.size),
        ):
            if value is not None:
                shape[key] = value
        return shape


_LINK_FIELDS = ("uri", "name", "title", "description", "size", "mime_type")
_LINK_KEYS = frozenset({"uri", "name", "title", "description", "size", "mimeType", "mime_type"})


ContentBlock = Annotated[
    Union[  # noqa: UP007 - tagged members read best as a Union
        Annotated[Text, Tag("text")],
        Annotated[Image, Tag("image")],
        Annotated[Audio, Tag("audio")],
        Annotated[EmbeddedResource, Tag("resource")],
        Annotated[ResourceLink, Tag("resource_link")],
    ],
    Discriminator("type"),
]
"""Any content block: :class:`Text`, :class:`Image`, :class:`Audio`,
:class:`EmbeddedResource` or :class:`ResourceLink`."""

BLOCK_TYPES = (Text, Image, Audio, EmbeddedResource, ResourceLink)
"""The block classes, for ``isinstance``."""

_BLOCK: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)


def parse_block(shape: Any) -> ContentBlock:
    """One block from its wire shape (or a block, returned as it is).

    Raises:
        ValueError: Not a block of a known type, or a malformed one.

    """
    if isinstance(shape, BLOCK_TYPES):
        return shape
    try:
        return _BLOCK.validate_python(shape)
    except PydanticValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        raise ValueError(f"not a content block: {first['msg']}") from None


def parse_blocks(shapes: Any) -> list[ContentBlock] | None:
    """The blocks of a received ``content`` field; malformed or unknown ones are left out.

    A newer peer may send a block type this version does not know: the call's plain
    ``result`` still carries what it says, so the others are kept and the call is not lost.
    """
    if shapes is None:
        return None
    if not isinstance(shapes, list):
        return []
    blocks: list[ContentBlock] = []
    for shape in shapes:
        try:
            blocks.append(parse_block(shape))
        except ValueError:
            continue
    return blocks


def plain(block: ContentBlock) -> str:
    """The block as plain text: a text's text, a short description of anything else.

    This is what a peer that knows nothing of blocks finds in ``result`` (an argentic
    0.16 agent, a model fed the result as text): never the base64 of the data.
    """
    if isinstance(block, Text):
        return block.text
    if isinstance(block, Image | Audio):
        return f"[{block._kind()}: {block.mime_type}, {len(block.data):,} bytes]"
    if isinstance(block, EmbeddedResource):
        if block.text is not None:
            return block.text
        size = len(block.blob or b"")
        return f"[resource {block.uri}: {block.mime_type or 'binary'}, {size:,} bytes]"
    text = f"[resource link {block.name}: {block.uri}]"
    return text if block.description is None else f"{text} {block.description}"


def rendered(content: Sequence[ContentBlock]) -> Any:
    """The plain value of blocks given without one: one block's :func:`plain`, or a list."""
    if len(content) == 1:
        return plain(content[0])
    return [plain(block) for block in content]


def renders(value: Any, content: Sequence[ContentBlock]) -> bool:
    """True when ``value`` is the blocks' own plain rendering, nothing more.

    That is the ``result`` of a tool that returned blocks without a value beside them
    (:func:`rendered`), where a plain value given among the blocks stands as itself
    (its block being the text of its JSON): a result whose value says nothing the
    blocks do not.
    """
    if len(content) == 1 and not isinstance(value, list):
        return bool(value == plain(content[0]))
    if not isinstance(value, list) or len(value) != len(content):
        return False
    return all(
        item == plain(block)
        or (isinstance(block, Text) and block.text == json.dumps(item, ensure_ascii=False))
        for item, block in zip(value, content, strict=True)
    )


def _sniffed(data: bytes) -> str | None:
    for signature, offset, mime_type in _SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            return mime_type
    return None


_BLOCK_CLASSES = frozenset(BLOCK_TYPES)
_JSON_TYPES = frozenset({str, int, float, bool, type(None), dict, list, tuple})
_SEQUENCES = frozenset({list, tuple})
_SCALARS = _JSON_TYPES - _SEQUENCES


def is_block(value: Any) -> bool:
    """True for a content block.

    Every result passes here: JSON values and blocks are told apart by their exact type
    (isinstance against pydantic models costs ~0.8 µs, 50 times more); a subclass of a
    block still counts.
    """
    kind = type(value)
    return kind in _BLOCK_CLASSES or (kind not in _JSON_TYPES and isinstance(value, _Block))


def as_block(value: Any) -> ContentBlock:
    """``value`` as a block: a block as it is, a string or another value as :class:`Text`.

    A value other than a string becomes the text of its JSON.

    Raises:
        TypeError: ``value`` cannot be written as JSON.

    """
    if is_block(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, str):
        return Text(value)
    return Text(json.dumps(value, ensure_ascii=False))


def blocks_in(items: Sequence[Any]) -> tuple[list[ContentBlock], list[Any]] | None:
    """A list that holds blocks, as content and a plain value; None when it holds none.

    Each item becomes blocks (a value beside blocks becomes :class:`Text`; an item that is
    itself a list of blocks, a streamed chunk, gives each of its own); the plain value is
    the list with each block replaced by :func:`plain`.

    Raises:
        TypeError: A value beside the blocks cannot be written as JSON.

    """
    if not _any_block(items):
        return None
    content: list[ContentBlock] = []
    value: list[Any] = []
    for item in items:
        if type(item) in (list, tuple) and _holds_blocks(item):
            content.extend(as_block(part) for part in item)
            value.append([plain(part) if is_block(part) else part for part in item])
        else:
            content.append(as_block(item))
            value.append(plain(item) if is_block(item) else item)
    return content, value


def _any_block(items: Sequence[Any]) -> bool:
    """Whether ``items``, or a list or tuple among them, holds a block.

    Every list a tool returns is checked, so the types are gathered at C speed
    (``set(map(type, ...))``): a list of 1,000 plain values costs tens of µs, not the
    milliseconds of one isinstance per item.
    """
    kinds = set(map(type, items))
    if kinds & _BLOCK_CLASSES:
        return True
    if kinds <= _SCALARS:
        return False
    nested = list(itertools.compress(items, map(_SEQUENCES.__contains__, map(type, items))))
    inner = set(map(type, itertools.chain.from_iterable(nested)))
    if inner & _BLOCK_CLASSES:
        return True
    unknown = (kinds | inner) - _JSON_TYPES
    if not unknown:
        return False
    # A type that is neither JSON nor a block: maybe a block's subclass.
    candidates = itertools.chain(items, itertools.chain.from_iterable(nested))
    return any(type(item) in unknown and is_block(item) for item in candidates)


def _holds_blocks(item: Any) -> bool:
    if is_block(item):
        return True
    kind = type(item)
    return (kind is list or kind is tuple) and any(is_block(part) for part in item)
