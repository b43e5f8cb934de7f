"""Griffe extension for the API reference: stubs for types, objects for docstrings.

The extension's classes are written in C (libzim._libzim): their docstrings
live in the C code (what help() and pydoc show), their types in the stubs
shipped beside each module (libzim/reader.pyi, ...; what mypy and pyright
check, and stubtest keeps equal to the module). Griffe reads the stubs
statically, which gives full signatures with types but no docstrings;
inspecting the module gives the docstrings but signatures without types.
So the reference is built from the stubs, and this extension fills in every
docstring the stubs lack from the imported object itself.

Only modules, classes, functions, methods and properties take their runtime
docstring: a constant's __doc__ is its type's, not its own. A class's
docstring is its own (__dict__['__doc__']), never one inherited from a base
(a method overridden without a docstring shows its base's, as help() does),
and a C type's slot wrappers (__init__, __eq__, ...) have CPython's generic
text, which is left out.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import griffe

_NOTHING = object()
_SLOT_WRAPPERS = (type(object.__init__), type(object().__str__))


def _runtime(path: str) -> tuple[Any, Any]:
    """The object at a dotted path, importing the longest module prefix, and the
    class it was found on (None for a module's member)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        owner = None
        for name in parts[cut:]:
            if inspect.isclass(obj):
                owner, obj = obj, inspect.getattr_static(obj, name, _NOTHING)
            else:
                owner, obj = None, getattr(obj, name, _NOTHING)
            if obj is _NOTHING:
                return _NOTHING, None
        return obj, owner
    return _NOTHING, None


def _own_doc(obj: Any, owner: Any = None) -> str | None:
    if isinstance(obj, _SLOT_WRAPPERS):
        return None  # __init__, __eq__, ... of a C type: CPython's generic text
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    if owner is not None and inspect.isfunction(obj) and not obj.__doc__:
        if obj.__name__.startswith("__"):
            return None  # __init__ and the like: a base's would be object's generic text
        # A Python override without a docstring: its base's, as help() shows it.
        return inspect.getdoc(getattr(owner, obj.__name__, None))
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
    elif inspect.ismodule(obj) or callable(obj) or inspect.isdatadescriptor(obj) or inspect.ismethoddescriptor(obj):
        doc = getattr(obj, "__doc__", None)
    else:
        return None
    if not isinstance(doc, str) or not doc.strip():
        return None
    return inspect.cleandoc(doc)


def _walk(obj: griffe.Object, seen: set[str]):
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_module or member.is_class or member.is_function or member.is_attribute:
            yield from _walk(member, seen)


class RuntimeDocstrings(griffe.Extension):
    """Fill each docstring the stubs lack from the imported object."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != "libzim":
            return
        for obj in _walk(pkg, set()):
            if obj.is_attribute and obj.docstring is not None:
                # Griffe's inspection of the compiled module gives a constant the
                # docstring of its value's type (a tuple's "Built-in immutable
                # sequence..."): that text describes tuples, not this name.
                value, _ = _runtime(obj.path)
                if value is not _NOTHING and obj.docstring.value.strip() == inspect.cleandoc(type(value).__doc__ or ""):
                    obj.docstring = None
            if obj.docstring is not None and obj.docstring.value.strip():
                continue
            doc = _own_doc(*_runtime(obj.path))
            if doc is not None:
                obj.docstring = griffe.Docstring(doc, parent=obj)
