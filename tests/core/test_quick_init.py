"""`model.quick_init`: the faster `__init__` of the frozen classes built once per log line gives
what the dataclass-generated one gives, and the instances stay frozen."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from vllm_log_lsp.core import model, stats
from vllm_log_lsp.core.model import quick_init

QUICK = [model.Span, model.LogLine, model.Frame, stats.StatsSample]


def _reference(cls: type) -> type:
    """The same fields in a plain frozen dataclass (its generated `__init__`)."""
    spec = [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(f"Reference{cls.__name__}", spec, frozen=True)


def _values(cls: type, salt: int) -> dict[str, object]:
    return {f.name: f"{f.name}-{salt}" for f in dataclasses.fields(cls)}


@pytest.mark.parametrize("cls", QUICK, ids=lambda c: c.__name__)
def test_quick_init_builds_what_the_generated_init_builds(cls: type) -> None:
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    reference = _reference(cls)
    every = dataclasses.fields(cls)
    required = [f.name for f in every if f.default is dataclasses.MISSING]
    for salt in range(3):
        values = _values(cls, salt)
        positional = [values[f.name] for f in every]
        assert dataclasses.astuple(cls(*positional)) == dataclasses.astuple(reference(*positional))
        assert dataclasses.astuple(cls(**values)) == dataclasses.astuple(reference(**values))
        least = {name: values[name] for name in required}  # the defaults fill the rest
        built = cls(**least)
        assert dataclasses.astuple(built) == dataclasses.astuple(reference(**least))
        assert built == cls(**least) and hash(built) == hash(cls(**least))
        assert repr(built).removeprefix(cls.__name__) == repr(reference(**least)).removeprefix(
            f"Reference{cls.__name__}"
        )
        assert pickle.loads(pickle.dumps(built)) == built
        assert dataclasses.replace(built, **{every[0].name: "changed"}) == cls(
            **{**least, every[0].name: "changed"}
        )
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(built, every[0].name, "x")
    with pytest.raises(TypeError):
        cls()  # the required fields are still required
    with pytest.raises(TypeError):
        cls(**_values(cls, 0), unknown=1)


def test_quick_init_refuses_what_it_cannot_build_alike() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithFactory:
        items: list = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class WithPostInit:
        value: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class WithSlots:
        value: int

    for cls in (WithFactory, WithPostInit, WithSlots):
        with pytest.raises(TypeError):
            quick_init(cls)
