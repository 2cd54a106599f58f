"""Property: any document shaped like a model (plus unknown members) round-trips exactly."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api.fields import Model
from pykueue.api.quantity import Quantity
from pykueue.api.registry import EXTRA_KINDS, KINDS

_SCALARS = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans(), st.none())
_UNKNOWN = st.dictionaries(st.sampled_from(["zz", "futureThing", "x-extra"]), _SCALARS, max_size=2)
_QUANTITIES = st.sampled_from(["1", "500m", "1.5", "2Gi", "1e3", "0", 7, 0.25, "+3k"])


def _for_type(tp: Any, depth: int) -> st.SearchStrategy[Any]:
    origin = get_origin(tp)
    if tp is str:
        return st.text(max_size=4)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-3, 100)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if tp is Any:
        return st.dictionaries(st.text(max_size=3), _SCALARS, max_size=2)
    if isinstance(tp, type) and issubclass(tp, Quantity):
        return _QUANTITIES
    if isinstance(tp, type) and issubclass(tp, Model):
        return _for_model(tp, depth + 1)
    if origin is list:
        return st.lists(_for_type(get_args(tp)[0], depth + 1), max_size=2 if depth < 6 else 0)
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), _for_type(get_args(tp)[1], depth + 1), max_size=2)
    if origin in (Union, types.UnionType):
        return st.one_of(st.integers(0, 9), st.text(max_size=3))
    raise AssertionError(tp)


def _for_model(cls: type[Model], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for b in cls.api_fields():
        strategy = _for_type(b.tp, depth)
        if b.info.enum is not None:
            strategy = st.sampled_from(b.info.enum)
        (required if b.info.required else optional)[b.info.json] = strategy
    if depth > 6:
        optional = {}
    known = st.fixed_dictionaries(required, optional=optional)
    return st.tuples(known, _UNKNOWN).map(lambda pair: {**pair[1], **pair[0]})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from((*KINDS, *EXTRA_KINDS)).flatmap(lambda k: st.tuples(st.just(k), _for_model(k))))
def test_generated_documents_round_trip(pair: tuple[type[Model], dict[str, Any]]) -> None:
    kind, doc = pair
    assert kind.from_dict(doc).to_dict() == doc
