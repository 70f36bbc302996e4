"""Provider registration and ``-p NAME`` resolution, as docs/contract.md defines them.

Plugins call ``elelem_lsp.configure(fn)``; ``fn`` receives the Config being
loaded. Each workspace has its own Config, so one folder's plugins never leak
into another's. Resolution: plugin files once, the registered name, then the
package ``elelem_NAME``, then the contract's two errors.
"""

from __future__ import annotations

import contextvars
import importlib
import importlib.machinery
import importlib.util
import inspect
import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .messages import Provider, ProviderError

log = logging.getLogger(__name__)

Factory = Callable[..., Provider]
Configurer = Callable[["Config"], None]

_loading: contextvars.ContextVar[Config | None] = contextvars.ContextVar("elelem_loading", default=None)
# What each installed package's ``configure`` calls asked for, by package, to replay on every Config.
_package_configurers: dict[str, list[Configurer]] = {}
PLUGIN_MODULE = "elelem_plugin_"


class UnknownProvider(ProviderError):
    """No plugin, built-in or package provides the name."""


@dataclass
class PluginFailure:
    path: str
    error: str
    line: int | None = None

    def describe(self) -> str:
        """``.agents/plugins/broken.py line 2: SyntaxError: invalid syntax``"""
        where = f"{shown(Path(self.path))} line {self.line}" if self.line else shown(Path(self.path))
        return f"{where}: {self.error}"


def shown(path: Path) -> str:
    """A path as a person reads it: relative to the current folder, or to ``~``, where it can be."""
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return str(path)


def failure_of(path: Path, error: BaseException) -> PluginFailure:
    """What went wrong in a plugin file, at the line of that file where it did."""
    if isinstance(error, SyntaxError):
        return PluginFailure(str(path), f"{type(error).__name__}: {error.msg}", error.lineno)
    frames = traceback.extract_tb(error.__traceback__)
    lines = [frame.lineno for frame in frames if Path(frame.filename) == path]
    return PluginFailure(str(path), f"{type(error).__name__}: {error}", lines[-1] if lines else None)


def configure(fn: Configurer) -> Configurer:
    """Register providers: ``fn(config)`` runs on the Config loading a plugin file.

    Usable as a decorator. A package's call (``elelem_NAME``, imported by
    resolution, by a plugin file or by anyone) is also remembered, because the
    package is imported once per process and every later Config needs it too.
    """
    package = fn.__module__.partition(".")[0]
    if not package.startswith(PLUGIN_MODULE):
        _package_configurers.setdefault(package, []).append(fn)
    target = _loading.get()
    if target is not None:
        fn(target)
    return fn


@dataclass
class Config:
    """One place's providers: the factories registered so far and the plugins loaded."""

    factories: dict[str, Factory] = field(default_factory=dict)
    plugin_dirs: list[Path] = field(default_factory=list)
    skipped_dirs: list[Path] = field(default_factory=list)  # plugin folders not loaded: an untrusted workspace's
    failures: list[PluginFailure] = field(default_factory=list)
    loaded: bool = False
    builtins: Callable[[Config], None] | None = None

    def __post_init__(self) -> None:
        self.register_builtins()

    def register_builtins(self) -> None:
        from .stub import StubProvider

        self.provider("stub", lambda **_: StubProvider())
        if self.builtins:
            self.builtins(self)

    def provider(self, name: Any, factory: Factory | None = None) -> Any:
        """Register ``factory`` under ``name``; a second registration replaces the first.

        Without a factory it returns a decorator.
        """
        if factory is None:
            return lambda f: self.provider(name, f)
        self.factories[str(name)] = factory
        return factory

    def names(self) -> list[str]:
        return sorted(self.factories, key=lambda n: (n != "stub", n))

    def load_plugins(self) -> list[PluginFailure]:
        """Run every ``*.py`` of the plugin folders once, in order, sorted within each."""
        if self.loaded:
            return self.failures
        self.loaded = True
        # Packages some earlier plugin or resolution imported register here too; the
        # plugin files come after them, so their registrations win.
        for configurers in list(_package_configurers.values()):
            for configurer in configurers:
                configurer(self)
        token = _loading.set(self)
        try:
            for folder in self.plugin_dirs:
                for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
                    self._run_plugin(path)
        finally:
            _loading.reset(token)
        return self.failures

    def reload(self) -> list[PluginFailure]:
        """Forget every registration and load the plugin files again, as ``/reload`` does."""
        self.factories.clear()
        self.failures = []
        self.loaded = False
        self.register_builtins()
        return self.load_plugins()

    def _run_plugin(self, path: Path) -> None:
        name = f"{PLUGIN_MODULE}{abs(hash(str(path.resolve())))}"
        try:
            loader = importlib.machinery.SourceFileLoader(name, str(path))
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            assert spec
            module = importlib.util.module_from_spec(spec)
            # Compiled from the file as it is now, never from a cached .pyc: an edit made within the
            # same second that keeps the size would run the old code, and no __pycache__ is left
            # in the person's plugin folders.
            exec(loader.source_to_code(path.read_bytes(), str(path)), module.__dict__)
        except BaseException as error:  # a plugin may raise anything, even SystemExit
            if isinstance(error, KeyboardInterrupt):
                raise
            failure = failure_of(path, error)
            log.warning("plugin failed: %s", failure.describe())
            self.failures.append(failure)

    def resolve(self, name: str) -> Factory:
        """The factory for ``name``, following the contract's resolution steps."""
        name = str(name)
        self.load_plugins()
        if name in self.factories:
            return self.factories[name]
        package = f"elelem_{name.replace('-', '_')}"
        if not self._import_package(package):
            raise UnknownProvider(self._unknown(name))
        if name not in self.factories:
            raise UnknownProvider(f'elelem-{name} did not register a provider named "{name}"')
        return self.factories[name]

    def _unknown(self, name: str) -> str:
        """The contract's first error, naming what may hide the provider: a plugin that failed, plugins not loaded."""
        why = "".join(f" (a plugin failed to load: {failure.describe()})" for failure in self.failures)
        available = f"Available: {', '.join(self.names())}."
        skipped = [folder for folder in self.skipped_dirs if folder.is_dir() and any(folder.glob("*.py"))]
        if skipped:
            unloaded = "; ".join(
                f"{folder.parent.name}/{folder.name} ({', '.join(path.name for path in sorted(folder.glob('*.py')))})"
                for folder in skipped  # named from the workspace root: the server may run anywhere
            )
            return (
                f'unknown provider: "{name}"{why}. The workspace plugins in {unloaded} were not loaded: '
                "this folder is not trusted. Turn on the workspacePlugins setting for a folder you trust "
                f"(in the terminal: answer its question, or pass --trust). {available}"
            )
        return f'unknown provider: "{name}"{why}. {available} Run: pip install elelem-{name}'

    def _import_package(self, package: str) -> bool:
        """Import ``package`` and apply its configure calls here; False when it is not installed."""
        token = _loading.set(None)  # the package's configure calls are remembered, not run on us
        try:
            importlib.import_module(package)
        except ModuleNotFoundError as error:
            # Only the package itself missing means "unknown"; a missing dependency
            # inside it is the real error and is shown as itself.
            if error.name == package:
                return False
            raise ProviderError(f"{package} failed to import: {error}") from error
        except ImportError as error:
            raise ProviderError(f"{package} failed to import: {error}") from error
        finally:
            _loading.reset(token)
        for configurer in _package_configurers.get(package, []):
            configurer(self)
        return True

    def build(self, name: str, **options: Any) -> Provider:
        """A new provider from the factory for ``name``; options with value None are left out."""
        return call_factory(self.resolve(name), {k: v for k, v in options.items() if v is not None})


def call_factory(factory: Factory, options: dict[str, Any]) -> Provider:
    """Call ``factory`` with the options it accepts: all of them, some, or none."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return factory(**options)
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return factory(**options)
    accepted = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return factory(**{k: v for k, v in options.items() if k in accepted})


def workspace_plugin_dir(workspace: Path) -> Path:
    return workspace / ".agents" / "plugins"


def plugin_dirs(workspace: Path | None, *, include_workspace: bool, home: Path | None = None) -> list[Path]:
    """``~/.agents/plugins`` then, when trusted, ``<workspace>/.agents/plugins``."""
    dirs = [(home or Path.home()) / ".agents" / "plugins"]
    if workspace is not None and include_workspace:
        dirs.append(workspace_plugin_dir(workspace))
    return dirs
