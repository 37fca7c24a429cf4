"""One registry for every kind of pluggable component (scorers, engines, reports, validity
checkers, languages), and importing a user's module without changing `sys.path` for good.

A `Registry` maps names to what they stand for, found in this order:

1. registered in code (`register(name, obj)`: a suite's `plugins:` module, a test);
2. built in: one ``"module:attr"`` line each (or the object itself), imported on first use;
   an optional ``[extra]`` after the target (entry-point syntax) names the queryeval extra
   that installs what it imports;
3. published by another distribution under the registry's entry-point group (read once).

An unknown name is an `UnknownName` (a KeyError) naming the choices; a built-in whose
library is not installed is a `MissingExtra` (an ImportError) saying
``pip install 'queryeval[x]'``.

>>> colours = Registry("colour", builtins={"red": "colorsys:rgb_to_hsv"})
>>> colours.get("red").__name__
'rgb_to_hsv'
>>> colours.register("blue", len)
>>> colours.names()
['red', 'blue']
>>> colours.get("green")
Traceback (most recent call last):
...
queryeval._registry.UnknownName: unknown colour 'green'; expected one of red, blue
"""

from __future__ import annotations

import importlib
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

__all__ = [
    "MissingExtra",
    "Registry",
    "UnknownName",
    "import_module_from",
    "load_target",
]

T = TypeVar("T")


class UnknownName(KeyError):
    """A name no registration, built-in or entry point gives; the message names the choices."""

    def __init__(self, what: str, name: str, choices: Iterable[str]) -> None:
        self.name = name
        self.choices = list(choices)
        self.message = (
            f"unknown {what} {name!r}; expected one of {', '.join(self.choices) or 'none'}"
        )
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class MissingExtra(ImportError):
    """A component whose library is not installed; the message says which extra installs it."""


def _split(target: str) -> tuple[str, str, str | None]:
    """("module", "attr" or "", extra or None) of ``"module:attr [extra]"``."""
    spec, _, rest = target.partition("[")
    extra = rest.rstrip().rstrip("]").strip() or None
    module, _, attr = spec.strip().partition(":")
    return module.strip(), attr.strip(), extra


_PATH_LOCK = threading.RLock()


@contextmanager
def _importable(folders: Iterable[str | Path]) -> Iterator[None]:
    """`folders` on `sys.path` for the block, then `sys.path` as it was (what the block's
    imports cached in `sys.modules` stays)."""
    with _PATH_LOCK:
        added = [f for f in dict.fromkeys(str(f) for f in folders if f) if f not in sys.path]
        sys.path[:0] = added
        try:
            yield
        finally:
            for folder in added:
                if folder in sys.path:
                    sys.path.remove(folder)


# top-level name -> the module `import_module_from` imported from the folders it was given
# (a suite's plugins), while something holds it; guarded by _PATH_LOCK
_FROM_FOLDERS: weakref.WeakValueDictionary[str, ModuleType] = weakref.WeakValueDictionary()


def _location(spec: ModuleSpec | None) -> str | None:
    """The file a module spec loads (None: not found, or a namespace package, whose folders
    change with `sys.path`; those are imported as Python does)."""
    if spec is None or not spec.has_location or not spec.origin:
        return None
    return str(Path(spec.origin).resolve())


def _module_location(module: ModuleType) -> str | None:
    file = getattr(module, "__file__", None)
    return str(Path(file).resolve()) if file else None


def import_module_from(name: str, folders: Iterable[str | Path] = ()) -> ModuleType:
    """Import module `name`, with `folders` importable while it imports (a suite's folder
    for its plugins and callables); `sys.path` is left as it was. A module that imports
    its own neighbours later, inside a function, must import them at its top instead.

    A module found in `folders` is that file even where another folder's module of the same
    name was imported before (a second suite's ``plugins: [scorers]``): the earlier one, and
    its package's submodules, leave `sys.modules` (what holds them keeps them) and the
    module is imported from `folders`. Modules imported any other way, and namespace
    packages (a folder without ``__init__.py``), are left as Python imports them.

    >>> import sys
    >>> before = list(sys.path)
    >>> import_module_from("json", ["/nonexistent"]).__name__
    'json'
    >>> sys.path == before
    True
    """
    paths = [str(f) for f in folders if str(f)]
    with _importable(paths):
        top = name.partition(".")[0]
        where = _location(PathFinder.find_spec(top, paths)) if paths else None
        if where is not None:
            cached = sys.modules.get(top)
            if (
                cached is not None
                and cached is _FROM_FOLDERS.get(top)
                and _module_location(cached) != where
            ):
                for loaded in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
                    del sys.modules[loaded]
                importlib.invalidate_caches()
        module = importlib.import_module(name)
        if where is not None and _module_location(sys.modules[top]) == where:
            _FROM_FOLDERS[top] = sys.modules[top]
        return module


def load_target(target: str, folders: Iterable[str | Path] = ()) -> Any:
    """The object a ``"module:attr"`` target names (``"module"`` alone: the module; dotted
    attributes are followed); an ImportError of a third-party module is a `MissingExtra`
    naming the ``[extra]`` the target gives.

    >>> load_target("os.path:join.__name__")
    'join'
    """
    module_name, attr, extra = _split(target)
    try:
        obj: Any = import_module_from(module_name, folders)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        if extra and not missing.startswith(("queryeval.", module_name)):
            raise MissingExtra(
                f"{module_name} needs {missing or 'a library that is not installed'}; "
                f"install it with: pip install 'queryeval[{extra}]'"
            ) from exc
        raise
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names -> components of one kind (see the module's docstring). `what` names the kind
    in messages ("scorer", "engine"); `group` is the entry-point group (None: none);
    `adapt` turns what a target or entry point loads into the registry's value (a factory
    called, a builder wrapped) and is not applied to registered objects."""

    def __init__(
        self,
        what: str,
        *,
        builtins: Mapping[str, str | T] | None = None,
        group: str | None = None,
        adapt: Callable[[str, Any], T] | None = None,
        key: Callable[[str], str] = str,
    ) -> None:
        self.what = what
        self.group = group
        self._builtins: dict[str, str | T] = dict(builtins or {})
        self._adapt = adapt
        self._key = key
        self._registered: dict[str, T] = {}
        self._loaded: dict[str, T] = {}
        self._entry_points: dict[str, str] | None = None
        self._lock = threading.RLock()

    # -- what there is -------------------------------------------------------------------

    def entry_points(self) -> dict[str, str]:
        """name -> target of the entry-point group (read once per process)."""
        if self._entry_points is None:
            found: dict[str, str] = {}
            if self.group is not None:
                from importlib.metadata import entry_points

                found = {self._key(ep.name): ep.value for ep in entry_points(group=self.group)}
            self._entry_points = found
        return self._entry_points

    def builtin_names(self) -> list[str]:
        """The built-in names, in the order they are declared."""
        return list(self._builtins)

    def names(self) -> list[str]:
        """Every name: built-ins in their order, then registered and entry-point ones in
        the order they came."""
        extra = [n for n in self._registered if n not in self._builtins]
        published = [n for n in self.entry_points() if n not in self._builtins]
        return list(dict.fromkeys([*self._builtins, *extra, *published]))

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = self._key(name)
        return key in self._registered or key in self._builtins or key in self.entry_points()

    def builtin_target(self, name: str) -> str | T | None:
        """The built-in declaration of `name` (a target or the object), None if none."""
        return self._builtins.get(self._key(name))

    # -- changing it ---------------------------------------------------------------------

    def register(self, name: str, obj: T) -> None:
        """Use `obj` for `name` from now on (before built-ins and entry points)."""
        with self._lock:
            self._registered[self._key(name)] = obj

    def unregister(self, name: str) -> None:
        """Forget a registration (built-ins and entry points are found again)."""
        with self._lock:
            key = self._key(name)
            self._registered.pop(key, None)
            self._loaded.pop(key, None)

    # -- using it ------------------------------------------------------------------------

    def get(self, name: str) -> T:
        """What `name` stands for: `UnknownName` if nothing gives it, `MissingExtra` if its
        library is not installed."""
        key = self._key(name)
        with self._lock:
            if key in self._registered:
                return self._registered[key]
            if key in self._loaded:
                return self._loaded[key]
        declared = self._builtins.get(key)
        if declared is None:
            declared = self.entry_points().get(key)
        if declared is None:
            raise UnknownName(self.what, name, self.names())
        if not isinstance(declared, str):
            return declared
        obj = load_target(declared)
        with self._lock:
            if key in self._registered:  # importing it registered it (a plugin's decorator)
                return self._registered[key]
            value: T = self._adapt(key, obj) if self._adapt is not None else obj
            return self._loaded.setdefault(key, value)


LazyNames = Mapping[str, tuple[str, str | None]]
"""A package's names loaded on first use: name -> (its module, its name there; None: the
same)."""


def names_by_module(
    modules: Mapping[str, str | Iterable[str]], package: str = ""
) -> dict[str, tuple[str, str | None]]:
    """`lazy_attributes`' names from {module: its names (an iterable, or one string split on
    spaces)}; a module named from "_" is `package`'s own.

    >>> names_by_module({"_a": "x y", "os.path": ["join"]}, "pkg")
    {'x': ('pkg._a', None), 'y': ('pkg._a', None), 'join': ('os.path', None)}
    """
    return {
        name: (f"{package}.{module}" if module.startswith("_") else module, None)
        for module, names in modules.items()
        for name in (names.split() if isinstance(names, str) else names)
    }


def lazy_attributes(
    package: str, names: LazyNames
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level `__getattr__` and `__dir__` for `names`: each imported on
    first use and then kept in the package's namespace.

    >>> import types
    >>> pkg = sys.modules["_lazy_demo"] = types.ModuleType("_lazy_demo")
    >>> pkg.__getattr__, pkg.__dir__ = lazy_attributes("_lazy_demo", {"join": ("os.path", None)})
    >>> pkg.join("a", "b").replace("\\\\", "/"), "join" in vars(pkg)
    ('a/b', True)
    >>> del sys.modules["_lazy_demo"]
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        try:
            module, attr = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attr or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
