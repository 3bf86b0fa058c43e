"""A message's JSON straight from its field values, for the one message sent per call.

:func:`~argentic_tools._protocol.messages.encode` of ``Model.model_construct(...)``
builds a model only to serialise it; building it costs about five times the
serialisation. :func:`encode_fields` writes the same JSON from the values alone: the
fields in the model's order, unset ones at their defaults, ``None`` left out, NaN and
infinities as ``null``, as :func:`encode` does. The caller passes values already
checked and typed as the fields declare (floats as floats): nothing is validated here.

:func:`constructed` builds such a model when one is needed after all (the results a
call ends with on the caller's side), at a third of ``model_construct``'s cost.
"""

import functools
from enum import Enum
from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_SHAREABLE = (type(None), bool, int, float, str, bytes, Enum, tuple, frozenset)


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


@functools.cache
def _template(model: type[BaseModel]) -> tuple[BaseModel, tuple[tuple[str, Any], ...]]:
    """An instance of ``model`` with every field at its default and none set.

    Also the fields whose default comes from a factory, each with its factory.
    """
    values: dict[str, Any] = {}
    factories = []
    for name, default, factory in _layout(model):
        if factory is not None:
            factories.append((name, factory))
        elif not isinstance(default, _SHAREABLE):
            raise TypeError(f"{model.__name__}.{name}: a mutable default cannot be shared")
        values[name] = default
    return model.model_construct(set(), **values), tuple(factories)


def constructed(model: type[M], values: dict[str, Any]) -> M:
    """``model.model_construct(**values)`` at a third of the cost.

    ``model_construct`` inspects each default factory's signature every time (26 µs
    for an error result, which a cancelled batch of 50,000 calls builds 50,000 of):
    here a template with the defaults is copied and ``values`` put in. As with
    ``model_construct``, nothing is validated. The fields with a default factory
    (``timestamp``, ``message_id``, ...) get fresh values unless given, and count as
    set. Refuses (TypeError) a model with a mutable default, which copies would share.
    """
    template, factories = _template(model)
    update = {name: factory() for name, factory in factories if name not in values}
    update.update(values)
    return template.model_copy(update=update)  # type: ignore[return-value]
