"""`dataclass`, `field` and `replace` for the subset of `dataclasses` the analysis core uses, at a
fraction of its start-up cost.

A short `check` is mostly start-up, and `dataclasses` is most of that: importing it costs about
what Python's own start does, and each class it makes compiles five or six generated methods
(several milliseconds for the ~50 classes on the `check` path). Here only `__init__` is
generated per class (it stores the fields straight into the instance's `__dict__`, which also
makes the per-line classes quick to build), and only for a class a run builds many times
(`GENERATE_AFTER`; until then a generic one binds the same arguments); equality, hashing,
`repr` and frozenness are shared methods that read the class's field list.

The behaviour is that of `dataclasses` for what is supported: fields from annotations in
order, defaults and `field(default_factory=..., repr=..., compare=...)`; `__eq__` compares
the fields of two instances of the same class as a tuple (`eq=False`: identity, and hashed by
identity); frozen classes refuse assignment (`FrozenInstanceError`, an AttributeError) and hash
their compared fields, other classes are unhashable; `repr` is `Class(name=value, ...)`; methods
the class defines itself are kept. `slots=True` makes the class anew with a slot per field and no
`__dict__` (as `dataclasses` does): the classes a long log builds per line or per exception,
whose instances are then about half as big. Not supported (refused): inheritance from another
record, `__post_init__`, a class's own `__slots__`, `slots=True` with zero-argument `super()`.
`tests/core/test_records.py` checks every record class against a `dataclasses` twin.
"""

from __future__ import annotations

from operator import attrgetter

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:  # type checkers read `dataclass` as they read `dataclasses.dataclass` (PEP 681)
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    _Class = TypeVar("_Class", bound=type)
else:

    def dataclass_transform(**_: Any) -> Any:
        return lambda decorated: decorated


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class Field:
    """One field of a record: its name, default or default factory, and whether `repr` shows it
    and `==` compares it."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr")

    def __init__(
        self, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True, compare: bool = True
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return (
            f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"
        )


def field(
    *, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True, compare: bool = True
) -> Any:
    """A field's options, as `dataclasses.field` takes them (the supported ones)."""
    return Field(default, default_factory, repr, compare)


def fields(record: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order."""
    found = getattr(record, "__record_fields__", None)
    if found is None:
        raise TypeError("fields() takes a record class or instance")
    return found


def replace(record: Any, /, **changes: Any) -> Any:
    """A copy of `record` with some fields changed (as `dataclasses.replace`)."""
    values = {f.name: getattr(record, f.name) for f in fields(record) if f.name not in changes}
    return type(record)(**values, **changes)


@dataclass_transform(field_specifiers=(field, Field))
def dataclass(
    cls: _Class | None = None, /, *, frozen: bool = False, eq: bool = True, slots: bool = False
) -> Any:
    """Make `cls` a record: `@dataclass` or `@dataclass(frozen=True, eq=..., slots=...)`, as with
    `dataclasses`."""

    def wrap(cls: _Class) -> _Class:
        return _make_record(cls, frozen, eq, slots)

    return wrap if cls is None else wrap(cls)


def _make_record(cls: _Class, frozen: bool, eq: bool = True, slots: bool = False) -> _Class:
    own = cls.__dict__
    if (
        "__slots__" in own
        or "__post_init__" in own
        or any(hasattr(b, "__record_fields__") for b in cls.__mro__[1:])
    ):
        raise TypeError(f"{cls.__name__}: records support no own __slots__, __post_init__ or record bases")
    found = []
    for name, annotation in own.get("__annotations__", {}).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = own.get(name, MISSING)
        item = value if isinstance(value, Field) else Field(default=value)
        item.name = name
        if isinstance(value, Field):  # as dataclasses leaves it: the default, or no attribute
            if item.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, item.default)
        found.append(item)
    items = tuple(found)
    if slots:
        cls = _slotted(cls, items)
        own = cls.__dict__
    cls.__record_fields__ = items  # type: ignore[attr-defined]
    cls.__match_args__ = tuple(f.name for f in items)  # type: ignore[attr-defined,misc]
    if "__init__" not in own:
        cls.__init__ = _first_init(cls, items)  # type: ignore[misc]
    if "__repr__" not in own:
        cls.__repr__ = _repr  # type: ignore[assignment]
    compared = [f.name for f in items if f.compare]
    cls._record_key = attrgetter(*compared) if len(compared) > 1 else _one_or_none(compared)  # type: ignore[attr-defined]
    if eq and "__eq__" not in own:
        cls.__eq__ = _eq  # type: ignore[assignment]
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and not explicit_hash:
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
    if frozen:
        cls.__setattr__ = _refuse_assignment  # type: ignore[assignment]
        cls.__delattr__ = _refuse_deletion  # type: ignore[assignment]
    if slots:  # (pickle's default state of a slotted object is set through __setattr__)
        cls.__getstate__ = _slot_state  # type: ignore[method-assign,assignment]
        cls.__setstate__ = _restore_slots  # type: ignore[attr-defined]
    return cls


def _slotted(cls: _Class, items: tuple[Field, ...]) -> _Class:
    """`cls` made anew with a slot for each field (defaults live in `__init__` only, as a slot
    and a class attribute of one name cannot coexist)."""
    namespace = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
    for item in items:
        namespace.pop(item.name, None)
    for name, value in namespace.items():
        method = value.fget if isinstance(value, property) else value
        if "__class__" in getattr(getattr(method, "__code__", None), "co_freevars", ()):
            # zero-argument super() and __class__ would still name the class being replaced
            raise TypeError(f"{cls.__name__}.{name}: slots=True records support no __class__ cell")
    namespace["__slots__"] = tuple(item.name for item in items)
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made


def _slot_state(self: Any) -> tuple:
    return tuple(getattr(self, name) for name in self.__slots__)


def _restore_slots(self: Any, state: tuple) -> None:
    for name, value in zip(self.__slots__, state, strict=True):
        object.__setattr__(self, name, value)


def _one_or_none(names: list[str]) -> Any:
    """The key of a class comparing one field (or none), as a tuple like `attrgetter` of many."""
    if not names:
        return lambda record: ()
    get = attrgetter(names[0])
    return lambda record: (get(record),)


#: How many instances of a class the generic `__init__` builds before the class's own is
#: generated: compiling one costs about as much as a thousand generic calls, and most classes are
#: built only a few times per run, while the per-line ones are built millions of times.
GENERATE_AFTER = 64


def _first_init(cls: type, items: tuple[Field, ...]) -> Any:
    """The generic `__init__` of a record, which generates the class's own one (and puts it in
    its place) once the class has been built GENERATE_AFTER times."""
    built = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal built
        built += 1
        if built >= GENERATE_AFTER and cls.__dict__["__init__"] is __init__:
            cls.__init__ = _make_init(cls, items)  # type: ignore[misc]
        values = _bound(cls, items, args, kwargs)
        if "__slots__" in cls.__dict__:
            for name, value in values.items():
                object.__setattr__(self, name, value)  # (past a frozen class's __setattr__)
            return
        # One field at a time, as the generated one does: `__dict__.update(a dict)` gives the
        # instance keys of its own, and then no instance of the class shares the class's keys
        # (each one's `__dict__` about twice as big).
        store = self.__dict__
        for name, value in values.items():
            store[name] = value

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _bound(cls: type, items: tuple[Field, ...], args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The fields' values from `__init__`'s arguments, in field order, as a generated `__init__`
    binds them (TypeError for a missing, unknown or repeated argument, or too many)."""
    if len(args) > len(items):
        raise TypeError(
            f"{cls.__qualname__}.__init__() takes {len(items) + 1} positional arguments "
            f"but {len(args) + 1} were given"
        )
    values: dict[str, Any] = {}
    for position, item in enumerate(items):
        name = item.name
        if position < len(args):
            if name in kwargs:
                raise TypeError(f"{cls.__qualname__}.__init__() got multiple values for argument {name!r}")
            values[name] = args[position]
        elif name in kwargs:
            values[name] = kwargs[name]
        elif item.default is not MISSING:
            values[name] = item.default
        elif item.default_factory is not MISSING:
            values[name] = item.default_factory()
        else:
            raise TypeError(f"{cls.__qualname__}.__init__() missing 1 required positional argument: {name!r}")
    for name in kwargs:
        if name not in values:  # (every field has a value by now)
            raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {name!r}")
    return values


def _make_init(cls: type, items: tuple[Field, ...]) -> Any:
    """`__init__(self, <fields in order, with their defaults>)` storing each into `__dict__`, or
    into its slot (a frozen class's through the slot's descriptor, past its `__setattr__`)."""
    namespace: dict[str, Any] = {"MISSING": MISSING}
    slots = "__slots__" in cls.__dict__
    frozen = cls.__setattr__ is _refuse_assignment
    params, body = [], []
    for item in items:
        name = item.name
        if not slots:
            store = f"    store[{name!r}] = {{}}"
        elif frozen:
            namespace[f"_set_{name}"] = cls.__dict__[name].__set__
            store = f"    _set_{name}(self, {{}})"
        else:
            store = f"    self.{name} = {{}}"
        if item.default_factory is not MISSING:
            namespace[f"_factory_{name}"] = item.default_factory
            params.append(f"{name}=MISSING")
            body.append(store.format(f"_factory_{name}() if {name} is MISSING else {name}"))
            continue
        if item.default is MISSING:
            params.append(name)
        else:
            namespace[f"_default_{name}"] = item.default
            params.append(f"{name}=_default_{name}")
        body.append(store.format(name))
    head = "" if slots else "    store = self.__dict__\n"
    source = f"def __init__(self, {', '.join(params)}):\n{head}" + "\n".join(body or ["    pass"])
    exec(source, namespace)  # the class's own field names only, as dataclasses builds __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__ if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = self.__class__._record_key  # read from the class: an attrgetter binds no `self`
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__._record_key(self))


def _refuse_assignment(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_deletion(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
