"""A message's JSON straight from its field values, for the one message sent per call.

:func:`~argentic_tools._protocol.messages.encode` of ``Model.model_construct(...)``
builds a model only to serialise it; building it costs about five times the
serialisation. :func:`encode_fields` writes the same JSON from the values alone: the
fields in the model's order, unset ones at their defaults, ``None`` left out, NaN and
infinities as ``null``, as :func:`encode` does. The caller passes values already
checked and typed as the fields declare (floats as floats): nothing is validated here.
"""

import functools
from typing import Any

import pydantic_core
from pydantic import BaseModel


@functools.cache
def _layout(model: type[BaseModel]) -> tuple[tuple[str, Any, Any], ...]:
    """Each field of ``model``: its name, its default (None when it has none) and factory."""
    return tuple(
        (
            name,
            None if field.is_required() or field.default_factory else field.default,
            field.default_factory,
        )
        for name, field in model.model_fields.items()
    )


def encode_fields(model: type[BaseModel], values: dict[str, Any]) -> bytes:
    """The JSON of ``encode(model.model_construct(**values))``, without building the model.

    Raises:
        ValueError: A value cannot be written as JSON (pydantic_core's
            ``PydanticSerializationError`` is one).
        KeyError: ``values`` names a field ``model`` does not have.

    """
    out: dict[str, Any] = {}
    remaining = len(values)
    for name, default, factory in _layout(model):
        if name in values:
            value = values[name]
            remaining -= 1
        elif factory is not None:
            value = factory()
        else:
            value = default
        if value is not None:
            out[name] = value
    if remaining:
        unknown = sorted(set(values) - set(model.model_fields))
        raise KeyError(f"{model.__name__} has no field {', '.join(unknown)}")
    return pydantic_core.to_json(out, exclude_none=True, inf_nan_mode="null")
