"""Every public name says what it is, and every C callable has a signature.

help(), pydoc and the docs site's API reference read the docstrings; the
stubs say the types. This walks the public API the way a reader of help()
meets it and fails listing every name whose docstring is missing or says
nothing beyond its name, and every callable of the C extension for which
inspect.signature() finds nothing (a missing or malformed text signature,
the "name($self, /, ...)\\n--\\n\\n" first line of a C docstring).

Public names: each module's __all__, the names its stub (libzim/*.pyi)
declares, or for a module without __all__ (the command line's) its
top-level functions and classes not starting with "_"; for each class, its
attributes not starting with "_" (methods, properties, descriptors) and the
context-manager and iterator methods it defines itself.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import pkgutil
import re
import types
from pathlib import Path
from typing import Any, Iterator

import pytest

import libzim
import libzim._libzim as _libzim

PACKAGE = Path(libzim.__file__).resolve().parent

# Modules a user imports; the command line's modules are documented too,
# for whoever reads or extends it.
MODULES = [
    "libzim",
    "libzim.reader",
    "libzim.search",
    "libzim.suggestion",
    "libzim.version",
    "libzim.writer",
    "libzim.dask",
    "libzim.serve",
    *sorted(f"libzim.serve.{m.name}" for m in pkgutil.iter_modules([str(PACKAGE / "serve")])),
    "libzim.__main__",
    "libzim.cli",
    *sorted(f"libzim.cli.{m.name}" for m in pkgutil.iter_modules([str(PACKAGE / "cli")])),
]
# Optional dependencies: without them the module cannot be imported, so it is
# skipped with the reason (the default test environment has them all).
NEEDS = {"libzim.dask": "distributed", "libzim.serve": "starlette",
         **{f"libzim.serve.{m.name}": "starlette" for m in pkgutil.iter_modules([str(PACKAGE / "serve")])
            if m.name not in ("library", "pages", "protocol")}}

# Methods a class may define that help() lists and a reader calls by protocol.
PROTOCOL = {"__enter__", "__exit__", "__iter__", "__next__", "__length_hint__", "__len__", "__getitem__"}
MIN_CHARS = 20
# Words that say nothing about a name on their own.
FILLER = {"a", "an", "the", "of", "is", "its", "this", "it", "in", "to", "get", "returns", "return"}

C_OBJECTS = {id(v) for k, v in vars(_libzim).items() if not k.startswith("_")}
C_CALLABLE_TYPES = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    types.WrapperDescriptorType,
)


def _words(text: str) -> set[str]:
    # snake_case, CamelCase and prose alike, lower case.
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {w for w in re.split(r"[^A-Za-z0-9]+", text.lower()) if w}


def trivial(doc: str | None, *names: str) -> str | None:
    """Why doc says nothing (missing, too short, only its own name), else None."""
    if not doc or not doc.strip():
        return "no docstring"
    doc = doc.strip()
    if len(doc) < MIN_CHARS:
        return f"too short: {doc!r}"
    own = set().union(*(_words(n) for n in names))
    if not (_words(doc) - own - FILLER):
        return f"only repeats the name: {doc!r}"
    return None


def stub_names(module: str) -> list[str]:
    """The public names libzim/<module>.pyi declares (its __all__, else its top level)."""
    parts = module.split(".")[1:]
    stub = PACKAGE.joinpath(*parts[:-1], parts[-1] + ".pyi") if parts else PACKAGE / "__init__.pyi"
    if not stub.is_file():
        return []
    tree = ast.parse(stub.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return [
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")
    ]


def public_names(mod: types.ModuleType) -> list[str]:
    names = list(getattr(mod, "__all__", []))
    if not hasattr(mod, "__all__"):
        names = [
            k
            for k, v in vars(mod).items()
            if not k.startswith("_")
            and (inspect.isfunction(v) or inspect.isclass(v))
            and getattr(v, "__module__", None) == mod.__name__
        ]
    return list(dict.fromkeys(names + stub_names(mod.__name__)))


def class_doc(cls: type) -> str | None:
    # The class's own docstring: inspect.getdoc() would lend it a base's
    # (KeyError's "Mapping key not found."), and a dataclass without one gets
    # its field list, which says nothing a reader cannot see in help().
    doc = cls.__dict__.get("__doc__")
    if doc and dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "(") and "\n" not in doc:
        return None
    return doc


def members(cls: type) -> Iterator[tuple[str, Any]]:
    """(name, attribute) for the members a reader of help(cls) looks up."""
    for name in dir(cls):
        if name.startswith("_") and not (name in PROTOCOL and name in cls.__dict__):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("libzim"):
            continue  # inherited from the standard library: documented there
        try:
            attr = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(cls, enum.EnumMeta) and isinstance(getattr(cls, name), cls):
            continue  # enum members: the class's docstring lists them
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if callable(attr) or inspect.isdatadescriptor(attr) or isinstance(attr, property):
            yield name, attr


def member_doc(cls: type, name: str, attr: Any) -> str | None:
    if isinstance(attr, types.WrapperDescriptorType):
        # CPython's own words for a slot ("Return len(self)."), the same on
        # every type; what the slot does here is the class docstring's to say.
        return "(a slot: documented by CPython and the class)"
    if isinstance(attr, types.FunctionType):
        # A Python override without a docstring inherits its base's, as help() shows it.
        return inspect.getdoc(getattr(cls, name))
    return getattr(attr, "__doc__", None)


def undocumented(module: str) -> list[str]:
    mod = importlib.import_module(module)
    missing = []
    why = trivial(mod.__doc__, *module.split("."))
    if why:
        missing.append(f"{module} (module): {why}")
    for name in public_names(mod):
        if not hasattr(mod, name):
            missing.append(f"{module}.{name}: in __all__ or the stub but not in the module")
            continue
        obj = getattr(mod, name)
        if inspect.ismodule(obj):
            continue  # walked as a module of its own
        if inspect.isclass(obj):
            why = trivial(class_doc(obj), name)
            if why:
                missing.append(f"{module}.{name}: {why}")
            for attr_name, attr in members(obj):
                why = trivial(member_doc(obj, attr_name, attr), name, attr_name)
                if why:
                    missing.append(f"{module}.{name}.{attr_name}: {why}")
        elif callable(obj):
            why = trivial(inspect.getdoc(obj), name)
            if why:
                missing.append(f"{module}.{name}: {why}")
    return missing


@pytest.mark.parametrize("module", MODULES)
def test_public_names_have_docstrings(module: str) -> None:
    if module in NEEDS:
        pytest.importorskip(NEEDS[module], reason=f"{module} needs {NEEDS[module]} (an optional extra)")
    missing = undocumented(module)
    assert not missing, f"{len(missing)} public names without a useful docstring:\n" + "\n".join(missing)


def c_callables() -> Iterator[tuple[str, Any]]:
    """(qualified name, callable) for every public callable the C extension defines."""
    seen: set[int] = set()
    for module in ("libzim", "libzim.reader", "libzim.search", "libzim.suggestion", "libzim.writer"):
        mod = importlib.import_module(module)
        for name in public_names(mod):
            obj = getattr(mod, name, None)
            if obj is None or id(obj) in seen:
                continue
            seen.add(id(obj))
            if isinstance(obj, types.BuiltinFunctionType) and id(obj) in C_OBJECTS:
                yield f"{module}.{name}", obj
            elif inspect.isclass(obj):
                native = id(obj) in C_OBJECTS or any(id(b) in C_OBJECTS for b in obj.__mro__)
                if id(obj) in C_OBJECTS and not issubclass(obj, BaseException) and instantiable(obj):
                    yield f"{module}.{name}", obj
                for attr_name, attr in members(obj):
                    if native and isinstance(attr, C_CALLABLE_TYPES) and attr_name in dir(obj):
                        yield f"{module}.{name}.{attr_name}", getattr(obj, attr_name)


def instantiable(cls: type) -> bool:
    # Entry, Item, Search, results...: made by the library, never by a call.
    try:
        cls()
    except TypeError as e:
        return "cannot create" not in str(e)
    return True


def test_c_callables_have_signatures() -> None:
    failures = []
    count = 0
    for name, obj in c_callables():
        count += 1
        try:
            inspect.signature(obj)
        except (ValueError, TypeError) as e:
            failures.append(f"{name}: {e}")
    assert count > 50, f"only {count} C callables found: the walk is broken"
    assert not failures, f"{len(failures)} C callables without a signature:\n" + "\n".join(failures)


def test_the_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the walk relies on: a missing, short or name-only docstring is caught.
    assert trivial(None, "title")
    assert trivial("Entry title.", "Entry", "title")
    assert trivial("The path of the entry.", "Entry", "path")
    assert trivial("Get the entry by its path.", "Archive", "get_entry_by_path")
    assert not trivial("The entry's path in the archive, as a str.", "Entry", "path")

    # And the walk finds them in a module: one documented, three not.
    fake = types.ModuleType("libzim._fake", "A module made by the test to be walked.")

    class Thing:
        """A class with a documented docstring, and members that are not."""

        def method(self) -> None:
            pass

        @property
        def value(self) -> int:
            "Value."
            return 0

    def function() -> None:
        pass

    Thing.__module__ = function.__module__ = fake.__name__
    fake.Thing, fake.function, fake.__all__ = Thing, function, ["Thing", "function"]
    monkeypatch.setitem(__import__("sys").modules, fake.__name__, fake)
    assert sorted(undocumented(fake.__name__)) == [
        "libzim._fake.Thing.method: no docstring",
        "libzim._fake.Thing.value: too short: 'Value.'",
        "libzim._fake.function: no docstring",
    ]
