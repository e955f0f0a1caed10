"""`core.records`: every record class of the core behaves as its `dataclasses` twin — the same
`__init__` (positional, keyword, defaults, factories, the same errors; the generic one and the
generated one), equality, hash, repr, frozenness, `replace` and pickling."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import pkgutil
import tracemalloc
from typing import Any

import pytest

import vllm_log_lsp.core
from vllm_log_lsp import batch
from vllm_log_lsp.core import records
from vllm_log_lsp.core.records import FrozenInstanceError, dataclass, field


def _record_classes() -> list[type]:
    modules = [batch] + [
        importlib.import_module(f"vllm_log_lsp.core.{info.name}")
        for info in pkgutil.iter_modules(vllm_log_lsp.core.__path__)
    ]
    return [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type)
        and "__record_fields__" in vars(value)
        and value.__module__ == module.__name__
    ]


RECORDS = _record_classes()


def _frozen(cls: type) -> bool:
    return cls.__setattr__ is records._refuse_assignment


def _slotted(cls: type) -> bool:
    return "__slots__" in vars(cls)


def _by_value(cls: type) -> bool:
    """Whether `==` compares fields (else identity: `eq=False`)."""
    return cls.__eq__ is records._eq


def _field_names(obj: Any) -> list[str]:
    """The attributes an instance holds, in order (its `__dict__`'s keys, or its slots)."""
    return list(type(obj).__slots__) if _slotted(type(obj)) else list(vars(obj))


def _twin(cls: type) -> type:
    """The same fields in a `dataclasses` class of the same name."""
    spec = []
    for f in records.fields(cls):
        options: dict[str, Any] = {"repr": f.repr, "compare": f.compare}
        if f.default is not records.MISSING:
            options["default"] = f.default
        if f.default_factory is not records.MISSING:
            options["default_factory"] = f.default_factory
        spec.append((f.name, Any, dataclasses.field(**options)))
    twin = dataclasses.make_dataclass(
        cls.__name__, spec, frozen=_frozen(cls), slots=_slotted(cls), eq=_by_value(cls)
    )
    twin.__qualname__ = cls.__qualname__
    return twin


def _build(cls: type, way: str, *args: Any, **kwargs: Any) -> Any:
    """An instance built by the generic `__init__` or by the generated one."""
    built = cls.__new__(cls)
    if way == "generic":
        for name, value in records._bound(cls, records.fields(cls), args, kwargs).items():
            object.__setattr__(built, name, value)
    else:
        records._make_init(cls, records.fields(cls))(built, *args, **kwargs)
    return built


def _compared(obj: Any, cls: type) -> list[tuple[str, Any]]:
    """The fields of record class `cls` that `==` compares, read from `obj` (a record or its twin),
    in order (a factory's lock is no value to compare)."""
    return [(f.name, getattr(obj, f.name)) for f in records.fields(cls) if f.compare]


def _hash_or_error(obj: Any) -> object:
    try:
        return hash(obj)
    except TypeError:  # a field holds a list
        return TypeError


def test_the_core_has_its_record_classes() -> None:
    names = {cls.__name__ for cls in RECORDS}
    assert {
        "LogLine",
        "Span",
        "Finding",
        "Analysis",
        "Rule",
        "Marker",
        "Catalog",
        "Scan",
        "CheckOptions",
    } <= names


@pytest.mark.parametrize("way", ["generic", "generated"])
@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_a_record_behaves_as_its_dataclass_twin(cls: type, way: str) -> None:
    twin = _twin(cls)
    every = records.fields(cls)
    required = [
        f.name for f in every if f.default is records.MISSING and f.default_factory is records.MISSING
    ]
    for salt in range(2):
        values = {f.name: f"{f.name}-{salt}" for f in every}
        positional = [values[f.name] for f in every]
        least = {name: values[name] for name in required}
        for args, kwargs in (
            (positional, {}),
            ((), values),
            ((), least),
            (positional[:1], dict(list(values.items())[1:])),
        ):
            ours, theirs = _build(cls, way, *args, **kwargs), twin(*args, **kwargs)
            assert _field_names(ours) == _field_names(theirs)  # the same fields, in order
            assert hasattr(ours, "__dict__") == hasattr(theirs, "__dict__")
            assert _compared(ours, cls) == _compared(theirs, cls)
            assert repr(ours) == repr(theirs)
            again = _build(cls, way, *args, **kwargs)
            assert (ours == again) == (twin(*args, **kwargs) == theirs) and ours != theirs
            assert ours == ours
            if not _by_value(cls):
                assert hash(ours) != hash(again) and hash(ours) == hash(ours)  # (by identity)
            elif _frozen(cls):
                assert _hash_or_error(ours) == _hash_or_error(theirs)
            else:
                with pytest.raises(TypeError):
                    hash(ours)
            if _frozen(cls):
                with pytest.raises(FrozenInstanceError):
                    setattr(ours, every[0].name, "x")
                with pytest.raises(AttributeError):
                    delattr(ours, every[0].name)
            else:
                changing = _build(cls, way, *args, **kwargs)
                setattr(changing, every[0].name, "x")
                assert getattr(changing, every[0].name) == "x"
            changed = {every[-1].name: "changed"}
            assert _compared(records.replace(ours, **changed), cls) == _compared(
                dataclasses.replace(theirs, **changed), cls
            )
            if all(f.compare for f in every):  # (a lock does not pickle)
                copied = pickle.loads(pickle.dumps(ours))
                assert _compared(copied, cls) == _compared(ours, cls) and type(copied) is cls
                assert copied == ours or not _by_value(cls)


@pytest.mark.parametrize("way", ["generic", "generated"])
@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_a_record_refuses_the_arguments_its_twin_refuses(cls: type, way: str) -> None:
    twin = _twin(cls)
    every = records.fields(cls)
    values = {f.name: f.name for f in every}
    wrong: list[tuple[tuple, dict]] = [
        ((), {**values, "no_such_field": 1}),  # unknown
        ((*values.values(), "extra"), {}),  # too many
        ((values[every[0].name],), {every[0].name: "again"}),  # twice
    ]
    if any(f.default is records.MISSING and f.default_factory is records.MISSING for f in every):
        wrong.append(((), {}))  # a required field missing
    for args, kwargs in wrong:
        with pytest.raises(TypeError):
            twin(*args, **kwargs)
        with pytest.raises(TypeError):
            _build(cls, way, *args, **kwargs)


def test_a_class_built_often_gets_its_generated_init() -> None:
    @dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: list = field(default_factory=list, compare=False)

    generic = Point.__init__
    points = [Point(i) for i in range(records.GENERATE_AFTER + 1)]
    assert (
        Point.__init__ is not generic
        and Point.__init__.__qualname__
        == "test_a_class_built_often_gets_its_generated_init.<locals>.Point.__init__"
    )
    assert Point(3, 4) == Point(x=3, y=4) != Point(3) and points[5] == Point(5)
    assert Point(1).tags is not Point(1).tags  # a new list each time, as a factory gives


def test_a_class_may_keep_its_own_methods() -> None:
    @dataclass(frozen=True)
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __hash__(self) -> int:
            return 7

    assert repr(Named("a")) == "<a>" and hash(Named("a")) == 7 and Named("a") == Named("a")


def test_what_records_do_not_support_is_refused() -> None:
    with pytest.raises(TypeError):

        @dataclass
        class WithPostInit:
            value: int

            def __post_init__(self) -> None:
                pass

    with pytest.raises(TypeError):

        @dataclass
        class WithSlots:
            __slots__ = ("value",)
            value: int

    @dataclass
    class Base:
        value: int

    with pytest.raises(TypeError):

        @dataclass
        class Derived(Base):
            other: int

    with pytest.raises(ValueError):
        field(default=1, default_factory=list)


def _bytes_per_instance(cls: type, count: int = 5000) -> float:
    """Memory that `count` more instances of `cls` take, per instance (after GENERATE_AFTER)."""
    [cls(n, 1, 2) for n in range(2 * records.GENERATE_AFTER)]
    tracemalloc.start()
    try:
        kept = [cls(n, 1, 2) for n in range(count)]
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    return used / count


def test_instances_share_their_class_keys() -> None:
    """A record's instances are as small as a plain class's (their `__dict__`s share the class's
    keys): a log of a million lines keeps a record per candidate line. Filling the first
    instances' dicts with `dict.update` gave every instance, later ones too, keys of its own:
    2.7x the dataclass twin (peak RSS of the all-ERROR benchmark up 14 %)."""

    @dataclass(frozen=True)
    class Point:
        line: int
        start: int
        end: int

    @dataclasses.dataclass(frozen=True)
    class Twin:
        line: int
        start: int
        end: int

    assert _bytes_per_instance(Point) <= 1.75 * _bytes_per_instance(Twin)


def test_slotted_records_are_smaller_and_keep_no_dict() -> None:
    """`slots=True`: a slot per field and no `__dict__`, as `dataclasses(slots=True)` makes; the
    per-line and per-frame records of a long log take about half the memory."""

    @dataclass(frozen=True)
    class Plain:
        line: int
        start: int
        end: int

    @dataclass(frozen=True, slots=True)
    class Slotted:
        line: int
        start: int
        end: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Twin:
        line: int
        start: int
        end: int

    assert not hasattr(Slotted(1, 2, 3), "__dict__") and Slotted.__slots__ == ("line", "start", "end")
    assert _bytes_per_instance(Slotted) <= 1.1 * _bytes_per_instance(Twin)
    assert _bytes_per_instance(Slotted) < 0.75 * _bytes_per_instance(Plain)


def _window_class(name: str, frozen: bool) -> Any:
    """A slotted record with a default, a factory, a class variable and a property, named
    `name` (at module level: pickle finds a class by its name)."""
    namespace = {
        "__annotations__": {"start": "int", "end": "int", "tags": "list", "LIMIT": "ClassVar[int]"},
        "__module__": __name__,
        "__qualname__": name,
        "end": 10,
        "tags": field(default_factory=list),
        "LIMIT": 3,
        "width": property(lambda self: self.end - self.start),
    }
    return dataclass(frozen=frozen, slots=True)(type(name, (), namespace))


FrozenWindow = _window_class("FrozenWindow", frozen=True)
OpenWindow = _window_class("OpenWindow", frozen=False)


@pytest.mark.parametrize("window_class", [FrozenWindow, OpenWindow], ids=lambda c: c.__name__)
def test_a_slotted_record_keeps_defaults_methods_and_pickles(window_class: Any) -> None:
    built = [window_class(n) for n in range(records.GENERATE_AFTER + 2)]  # generic, then generated
    assert window_class.__init__.__qualname__ == f"{window_class.__name__}.__init__"
    assert [w.width for w in built[:2]] == [10, 9] and built[-1].end == 10 and window_class.LIMIT == 3
    assert built[0].tags is not built[1].tags
    for window in (built[0], built[-1], window_class(4, 7, ["a"])):
        copied = pickle.loads(pickle.dumps(window))
        assert copied == window and type(copied) is window_class and copied is not window
    assert records.replace(built[0], end=3) == window_class(0, 3)
    if window_class is FrozenWindow:
        with pytest.raises(FrozenInstanceError):
            built[0].start = 5
    else:
        built[0].start = 5
        assert built[0].width == 5
    with pytest.raises(AttributeError):
        object.__setattr__(built[0], "other", 1)  # no __dict__ to put it in


def test_an_identity_record_compares_and_hashes_by_identity() -> None:
    """`eq=False`, as in dataclasses: `==` is `is`, and the record can key a dict or a set."""

    @dataclass(eq=False, slots=True)
    class Seen:
        value: int

    a, b = Seen(1), Seen(1)
    assert a == a and a != b and len({a, b, a}) == 2 and repr(a).endswith(".Seen(value=1)")
    a.value = 2
    assert {a: 1}[a] == 1


def test_a_slotted_record_refuses_a_class_cell() -> None:
    """A class made anew for its slots would leave zero-argument `super()` naming the old one."""
    with pytest.raises(TypeError):

        @dataclass(slots=True)
        class WithSuper:
            value: int

            def __repr__(self) -> str:
                return super().__repr__()
